#!/usr/bin/env node
// Dynamic int8 (activations quantized at run time) against static int8 on
// the same model, in one run: for each model, ours on its static QDQ file,
// ours on its dynamic file, and onnxruntime-web on the dynamic file, one
// thread, SIMD128, fresh processes interleaved over rounds.
//
//   node bench/dynamic.mjs [--runs N] [--rounds N] [--warmup-ms MS]
//
// Models: mnist-8 (static: `wasmq quantize --calib random:8:0..255` of the
// float model; dynamic: the shared mnist-8-dynamic-int8, onnxruntime's
// form) and the openwakeword MLP (static: `--calib random:8:-1..1`;
// dynamic: the native `wasmq quantize --mode dynamic`). The ratio column is dynamic
// time over static time (1.00 = as fast); a second table runs ours static
// and dynamic in turn in one process. Writes its models into
// bench/out/dynamic/.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { load } from '../src/js/index.mjs';
import { runWorker } from './common.mjs';
import { randomArray } from '../src/js/random.mjs';

const BENCH_DIR = dirname(fileURLToPath(import.meta.url));
const ROOT = join(BENCH_DIR, '..');
const MODELS = join(process.env.WQ_SHARED_DIR ?? join(ROOT, '..', 'shared'), 'models');
const OUT = join(BENCH_DIR, 'out', 'dynamic');
const CLI = join(ROOT, 'src/js/cli.mjs');
// --mode dynamic is in the native CLI only (the wasm quantizer stays within its size budget).
const NATIVE_CLI = join(ROOT, process.env.WQ_NATIVE_BUILD ?? 'build', 'wasmq');

function parseArgs(argv) {
  const o = { runs: 300, rounds: 3, warmupMs: 1000 };
  for (let i = 0; i < argv.length; i++) {
    const v = () => Number(argv[++i]);
    if (argv[i] === '--runs') o.runs = v();
    else if (argv[i] === '--rounds') o.rounds = v();
    else if (argv[i] === '--warmup-ms') o.warmupMs = v();
    else throw new Error(`unknown option ${argv[i]}`);
  }
  return o;
}

function quantize(args, out) {
  if (existsSync(out)) return;
  const dynamic = args.includes('dynamic');
  const r = spawnSync(dynamic ? NATIVE_CLI : process.execPath, [...(dynamic ? [] : [CLI]), 'quantize', ...args, '-o', out], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`wasmq quantize ${args.join(' ')}: ${(r.stderr || r.stdout).trim().split('\n').pop()}`);
}

/**
 * Ours static and dynamic loaded in this one process and run in turn (A, B,
 * A, B, ...) on the same seeded input in [-1, 1): a moment the shared
 * machine is busy hits both alike, which separate processes do not give on
 * a 0.03 ms model. Medians in ms.
 */
async function alternate(files, runs, warmupMs) {
  const models = await Promise.all(files.map((f) => load(f)));
  const feeds = models.map((m) => Object.fromEntries(m.inputs.map((info, i) => {
    const n = info.shape.reduce((a, b) => a * b, 1);
    return [info.name, { data: Float32Array.from(randomArray('float32', n, 1 + i), (v) => 2 * v - 1), dims: info.shape }];
  })));
  const times = models.map(() => []);
  for (const t0 = performance.now(); performance.now() - t0 < warmupMs;) for (let k = 0; k < models.length; k++) await models[k].run(feeds[k]);
  for (let r = 0; r < runs; r++) {
    for (let k = 0; k < models.length; k++) {
      const t0 = performance.now();
      await models[k].run(feeds[k]);
      times[k].push(performance.now() - t0);
    }
  }
  for (const m of models) m.dispose();
  return times.map((t) => median(t));
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main() {
  const o = parseArgs(process.argv.slice(2));
  mkdirSync(OUT, { recursive: true });
  const oww = join(MODELS, 'openwakeword-hello-deepa-mlp/model.onnx');
  quantize([join(MODELS, 'mnist-8/model.onnx'), '--calib', 'random:8:0..255'], join(OUT, 'mnist-8_static.onnx'));
  quantize([oww, '--calib', 'random:8:-1..1'], join(OUT, 'oww_static.onnx'));
  quantize([oww, '--mode', 'dynamic'], join(OUT, 'oww_dynamic.onnx'));
  const models = [
    { name: 'mnist-8', static: join(OUT, 'mnist-8_static.onnx'), dynamic: join(MODELS, 'mnist-8-dynamic-int8/model.onnx') },
    { name: 'openwakeword MLP', static: join(OUT, 'oww_static.onnx'), dynamic: join(OUT, 'oww_dynamic.onnx') },
  ];
  const cells = new Map();
  const per = Math.max(1, Math.round(o.runs / o.rounds));
  const load0 = loadavg()[0];
  for (let round = 0; round < o.rounds; round++) {
    for (const m of models) {
      for (const [key, kind, file] of [['static', 'ours', m.static], ['dynamic', 'ours', m.dynamic], ['ort dynamic', 'ort', m.dynamic]]) {
        const r = await runWorker({ kind, model: file, inputShapes: {}, loadOptions: {}, warmup: 5, warmupMs: o.warmupMs, runs: per, seed: 1, threads: 1 });
        const k = `${m.name}|${key}`;
        const prev = cells.get(k) ?? { times: [], cpuTimes: [] };
        cells.set(k, r.error || prev.error ? { error: r.error ?? prev.error } : { times: [...prev.times, ...r.times], cpuTimes: [...prev.cpuTimes, ...(r.cpuTimes ?? [])] });
        process.stderr.write(`round ${round + 1} ${m.name} ${key}: ${r.error ?? `${r.median.toFixed(3)} ms`}\n`);
      }
    }
  }
  const fmt = (c) => (c.error ? `error: ${c.error}` : median(c.times).toFixed(4));
  const ratio = (a, b) => (a.error || b.error ? '—' : `${(median(a.times) / median(b.times)).toFixed(2)}×`);
  console.log(`dynamic vs static int8, one thread, ${o.rounds} interleaved rounds, ${per} runs each; load average ${load0.toFixed(2)} before, ${loadavg()[0].toFixed(2)} after\n`);
  // Process CPU time leaves out the time other processes held the CPU (one thread).
  const cpu = (c) => (c.error ? c : { times: c.cpuTimes });
  console.log('| model | ours static int8 ms | ours dynamic int8 ms | dynamic / static | same, CPU time | onnxruntime-web dynamic ms | onnxruntime-web / ours (dynamic) |');
  console.log('| --- | --- | --- | --- | --- | --- | --- |');
  for (const m of models) {
    const [s, d, w] = ['static', 'dynamic', 'ort dynamic'].map((k) => cells.get(`${m.name}|${k}`));
    console.log(`| ${m.name} | ${fmt(s)} | ${fmt(d)} | ${ratio(d, s)} | ${ratio(cpu(d), cpu(s))} | ${fmt(w)} | ${ratio(w, d)} |`);
  }
  console.log(`\nours static and dynamic in one process, run in turn (${o.runs * 10} runs each after a ${o.warmupMs} ms warm-up), medians in ms:\n`);
  console.log('| model | static int8 | dynamic int8 | dynamic / static |\n| --- | --- | --- | --- |');
  for (const m of models) {
    const [s, d] = await alternate([m.static, m.dynamic], o.runs * 10, o.warmupMs);
    console.log(`| ${m.name} | ${s.toFixed(4)} | ${d.toFixed(4)} | ${(d / s).toFixed(2)}× |`);
  }
}

await main();
