#!/usr/bin/env node
// What int8 gains on whole models: for each model, ours int8 on the QDQ
// file, the same file with --partition fp (every node float), and the float
// model it came from, measured in one run, one thread, SIMD128.
//
//   node bench/int8_gain.mjs [--models REGEX] [--runs N] [--rounds N] [--warmup-ms MS]
//
// Models: the RetinaFace-shaped Vitis-AI-style QDQ detector written by
// tests/models/retinaface_qdq.mjs (320x320, power-of-two scales), and every
// float model in ../shared/models that `wasmq quantize` takes, quantized
// here with seeded random calibration inputs in each input's natural range
// (image pixels, audio samples, features) since the shared models come with
// one or no real input. Each cell is a fresh process (bench/worker.mjs),
// cells interleaved over --rounds sweeps; medians [p10, p90] in ms, ratios
// of medians, the int8 share of compute nodes (nodes of role 'compute' in the
// graph JSON that run int8; Q/DQ and layout transitions not counted) and the layout transitions'
// bytes per run beside the int8 activations' bytes (the arena's int8
// tensors). Writes its models into bench/out/int8_gain/.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { retinafaceModels } from '../tests/models/retinaface_qdq.mjs';
import { load } from '../src/js/index.mjs';
import { runWorker } from './common.mjs';

const BENCH_DIR = dirname(fileURLToPath(import.meta.url));
const ROOT = join(BENCH_DIR, '..');
const SHARED = process.env.WQ_SHARED_DIR ?? join(ROOT, '..', 'shared');
const OUT = join(BENCH_DIR, 'out', 'int8_gain');

// Real float models: input shapes for symbolic dims and the calibration range.
const REAL = [
  { name: 'mnist-8', range: '0..255' },
  { name: 'super-resolution-10', shapes: { input: [1, 1, 224, 224] }, range: '0..1' },
  { name: 'pytorch-super-resolution-depthtospace', shapes: { input: [1, 1, 224, 224] }, range: '0..1' },
  { name: 'teams-segmentation-msra190729', shapes: { bgrm: [1, 4, 96, 160] }, range: '0..255' },
  { name: 'ppocr-mobile-v2-cls', shapes: { x: [1, 3, 48, 192] }, range: '-1..1' },
  { name: 'openwakeword-hello-deepa-mlp', range: '-1..1' },
];

function parseArgs(argv) {
  const o = { models: null, runs: 30, rounds: 3, warmupMs: 1000 };
  for (let i = 0; i < argv.length; i++) {
    const v = () => argv[++i];
    if (argv[i] === '--models') o.models = new RegExp(v());
    else if (argv[i] === '--runs') o.runs = Number(v());
    else if (argv[i] === '--rounds') o.rounds = Number(v());
    else if (argv[i] === '--warmup-ms') o.warmupMs = Number(v());
    else throw new Error(`unknown option ${argv[i]}`);
  }
  return o;
}

async function prepare(models) {
  mkdirSync(OUT, { recursive: true });
  const list = [];
  if (!models || models.test('retinaface')) {
    const { qdq, f32 } = await retinafaceModels(320);
    writeFileSync(join(OUT, 'retinaface_qdq.onnx'), qdq);
    writeFileSync(join(OUT, 'retinaface_f32.onnx'), f32);
    list.push({ name: 'retinaface-vitis-style (generated)', qdq: join(OUT, 'retinaface_qdq.onnx'), f32: join(OUT, 'retinaface_f32.onnx'), shapes: {} });
  }
  for (const m of REAL) {
    if (models && !models.test(m.name)) continue;
    const f32 = join(SHARED, 'models', m.name, 'model.onnx'), qdq = join(OUT, `${m.name}_qdq.onnx`);
    const shapeArgs = Object.entries(m.shapes ?? {}).flatMap(([k, d]) => ['--shape', `${k}=${d.join('x')}`]);
    const r = spawnSync(process.execPath, [join(ROOT, 'src/js/cli.mjs'), 'quantize', f32, '-o', qdq, '--calib', `random:8:${m.range}`, ...shapeArgs], { encoding: 'utf8' });
    if (r.status !== 0 || !existsSync(qdq)) {
      process.stderr.write(`${m.name}: quantize failed: ${(r.stderr || r.stdout).trim().split('\n').pop()}\n`);
      continue;
    }
    list.push({ name: m.name, qdq, f32, shapes: m.shapes ?? {} });
  }
  return list;
}

/** Summary, int8 share of compute nodes, transition bytes vs int8 activation bytes. */
async function describe(m) {
  const model = await load(m.qdq, { inputShapes: m.shapes });
  try {
    const g = model.graph();
    const kinds = { int8: 0, float: 0 };
    let int8Bytes = 0;
    for (const n of g.nodes) {
      if (n.role !== 'compute' || n.reason?.code === 'SHAPE') continue;
      kinds[n.backend.startsWith('int8') ? 'int8' : 'float']++;
    }
    for (const t of g.tensors) {
      if (t.kind !== 'constant' && (t.dtype === 'int8' || t.dtype === 'uint8') && t.dims?.every((d) => d >= 0)) int8Bytes += t.dims.reduce((a, b) => a * b, 1);
    }
    const tr = g.summary.match(/(\d+) transitions? moving ([\d.]+ [KM]?B)/);
    return { summary: g.summary, share: kinds.int8 / Math.max(1, kinds.int8 + kinds.float), kinds, transitions: tr ? `${tr[1]}: ${tr[2]}` : '?', int8Bytes };
  } finally {
    model.dispose();
  }
}

const fmt = (c) => (!c || c.error ? `error: ${c?.error}` : `${c.median.toFixed(c.median >= 10 ? 1 : 2)} [${c.p10.toFixed(2)}, ${c.p90.toFixed(2)}]`);
const ratio = (slow, fast) => (!slow || !fast || slow.error || fast.error ? '—' : `${(slow.median / fast.median).toFixed(2)}×`);

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const models = await prepare(o.models);
  const load0 = loadavg()[0];
  const cells = new Map();
  const per = Math.max(1, Math.round(o.runs / o.rounds));
  for (let round = 0; round < o.rounds; round++) {
    for (const m of models) {
      for (const [kind, file, opts] of [['int8', m.qdq, {}], ['fp', m.qdq, { partition: 'fp' }], ['float', m.f32, {}]]) {
        const r = await runWorker({ kind: 'ours', model: file, inputShapes: m.shapes, loadOptions: opts, warmup: 5, warmupMs: o.warmupMs, runs: per, seed: 1, threads: 1 });
        const key = `${m.name}|${kind}`;
        const prev = cells.get(key) ?? { times: [], cpuTimes: [] };
        cells.set(key, r.error ? r : { times: [...prev.times, ...r.times], cpuTimes: [...prev.cpuTimes, ...r.cpuTimes] });
        process.stderr.write(`round ${round + 1} ${m.name} ${kind}: ${r.error ?? r.median.toFixed(2) + ' ms'}\n`);
      }
    }
  }
  const stat = (c, field = 'times') => {
    if (!c || c.error) return c;
    const s = [...c[field]].sort((a, b) => a - b), q = (p) => s[Math.min(s.length - 1, Math.floor(p * s.length))];
    return { median: q(0.5), p10: q(0.1), p90: q(0.9) };
  };
  console.log(`int8 gain, one thread, ${o.rounds} interleaved rounds, ${per} runs each; load average ${load0.toFixed(2)} before, ${loadavg()[0].toFixed(2)} after\n`);
  console.log('| model | int8 ms | fp ms (same file) | float model ms | int8 vs fp | int8 vs float | int8 share of compute nodes | transitions per run (int8 activation bytes) |');
  console.log('| --- | --- | --- | --- | --- | --- | --- | --- |');
  const floats = [], cpu = [];
  for (const m of models) {
    const [i8, fp, f] = ['int8', 'fp', 'float'].map((k) => stat(cells.get(`${m.name}|${k}`)));
    const d = await describe(m);
    if (i8 && f && !i8.error && !f.error) floats.push(f.median / i8.median);
    console.log(`| ${m.name} | ${fmt(i8)} | ${fmt(fp)} | ${fmt(f)} | ${ratio(fp, i8)} | ${ratio(f, i8)} | ${(100 * d.share).toFixed(0)}% (${d.kinds.int8}/${d.kinds.int8 + d.kinds.float}) | ${d.transitions} (${(d.int8Bytes / 1024).toFixed(0)} KB) |`);
    console.log(`|   summary: ${d.summary} |||||||`);
    const [ci8, cfp, cf] = ['int8', 'fp', 'float'].map((k) => stat(cells.get(`${m.name}|${k}`), 'cpuTimes'));
    cpu.push(`| ${m.name} | ${fmt(ci8)} | ${fmt(cfp)} | ${fmt(cf)} | ${ratio(cfp, ci8)} | ${ratio(cf, ci8)} |`);
  }
  floats.sort((a, b) => a - b);
  if (floats.length) console.log(`\nmedian int8 vs float model over ${floats.length} models: ${floats[Math.floor(floats.length / 2)].toFixed(2)}×`);
  // Process CPU time leaves out the time other processes held the CPU (one thread).
  console.log('\nsame runs, process CPU time (ms):\n\n| model | int8 | fp | float model | int8 vs fp | int8 vs float |\n| --- | --- | --- | --- | --- | --- |');
  for (const line of cpu) console.log(line);
}

await main();
