#!/usr/bin/env node
// Where a model's time goes, per node and per kernel, robust to a shared
// machine: each node's minimum kernel time over many single runs (a run
// that lost the CPU inflates only its own sample), grouped by op and, for
// int8 convolutions, by the conv algorithm (gemm_1x1, depthwise, ...), with
// the convolutions' multiply-adds turned into GOPS.
//
//   node bench/profile_nodes.mjs MODEL.onnx [--runs N] [--top N] [--shape NAME=1,3,224,224] [--threads N] [--threaded-dir DIR]
//
// Uses the shipped build (wasm_build/out). A diagnostic, not a benchmark:
// compare it with `npm run bench` for end-to-end times.
//
// --threads N (N > 1): the model is loaded twice, on one thread and on N
// (the threaded build), their runs alternate (1, N, 1, N, ...) so machine
// noise hits both alike, and every node shows both minima and their ratio:
// which nodes still run on one thread, which gain. Wall time per node.
import { basename } from 'node:path';

import { configure, load } from '../src/js/index.mjs';
import { randomArray } from '../src/js/random.mjs';

const args = process.argv.slice(2);
const file = args.find((a, i) => !a.startsWith('--') && !(i > 0 && args[i - 1].startsWith('--')));
if (!file) {
  console.error('usage: node bench/profile_nodes.mjs MODEL.onnx [--runs N] [--top N] [--shape NAME=d0,d1,...]');
  process.exit(2);
}
const option = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : fallback;
};
const runs = Number(option('--runs', 60));
const top = Number(option('--top', 15));
const threads = Number(option('--threads', 1));
// --threaded-dir DIR: another threaded build (to compare two of them).
if (option('--threaded-dir', null)) configure({ threadedDir: new URL(`file://${option('--threaded-dir')}/`) });
const inputShapes = {};
for (let i = 0; i < args.length; i++) {
  if (args[i] !== '--shape') continue;
  const [name, dims] = args[i + 1].split('=');
  inputShapes[name] = dims.split(',').map(Number);
}

const loadOptions = Object.keys(inputShapes).length ? { inputShapes } : {};
const model = await load(file, loadOptions);
const many = threads > 1 ? await load(file, { ...loadOptions, threads }) : null;
if (many && many.info.threads !== threads) console.error(`note: ${many.info.threads} threads given (asked ${threads})`);
const graph = model.graph();
const feeds = {};
model.inputs.forEach((info, k) => {
  const dims = inputShapes[info.name] ?? info.shape.map((d) => (typeof d === 'number' && d > 0 ? d : 1));
  const dtype = info.dtype === 'float32' || info.dtype === 'float' ? 'float32' : info.dtype;
  feeds[info.name] = { data: randomArray(dtype, dims.reduce((a, b) => a * b, 1), 1 + k), dims };
});
// Per-node minimum kernel time of each model over `runs` runs, the models
// taking turns run by run; also the median of each model's whole run.
const subjects = [model, many].filter(Boolean);
for (const m of subjects) for (let i = 0; i < 10; i++) await m.run(feeds);
const state = subjects.map((m) => {
  m.profile(true);
  return { previous: m.nodeTimes().map((t) => t.kernelMs), best: m.nodeTimes().map(() => Infinity), wall: [] };
});
for (let r = 0; r < runs; r++) {
  for (let s = 0; s < subjects.length; s++) {
    const t0 = performance.now();
    await subjects[s].run(feeds);
    state[s].wall.push(performance.now() - t0);
    const now = subjects[s].nodeTimes();
    now.forEach((t, i) => {
      state[s].best[i] = Math.min(state[s].best[i], t.kernelMs - state[s].previous[i]);
    });
    state[s].previous = now.map((t) => t.kernelMs);
  }
}
const best = state[0].best;
const times = model.nodeTimes();
for (const m of subjects) m.profile(false);
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

const nodes = Object.fromEntries(graph.nodes.map((n) => [n.name, n]));
const groups = {};
const rows = [];
let total = 0;
times.forEach((t, i) => {
  const n = nodes[t.name];
  let kind = t.op;
  let macs = 0;
  if (n && n.op === 'QConv' && n.kernel) {
    kind = `${t.op}/${n.kernel}`;
    const w = graph.tensors[n.inputs[1]].dims, y = graph.tensors[n.outputs[0]].dims;
    macs = y.reduce((a, b) => a * Math.max(1, b), 1) * w.slice(1).reduce((a, b) => a * b, 1); // a symbolic batch (-1) counts 1
  }
  const g = (groups[kind] ??= { ms: 0, ms2: 0, macs: 0, count: 0 });
  const ms2 = many ? state[1].best[i] : 0;
  g.ms += best[i];
  g.ms2 += ms2;
  g.macs += macs;
  g.count++;
  total += best[i];
  rows.push({ name: t.name, kind, ms: best[i], ms2, macs });
});
const gops = (macs, ms) => (macs ? `${((2 * macs) / ms / 1e6).toFixed(1)} GOPS` : '');
const pair = (ms, ms2) => (many ? ` | ${threads}t ${ms2.toFixed(3).padStart(8)} ms ${(ms / ms2).toFixed(2).padStart(5)}x` : '');
console.log(`${basename(file)}: sum of per-node minima over ${runs} runs ${total.toFixed(3)} ms` +
  (many ? `; ${threads} threads ${state[1].best.reduce((a, b) => a + b, 0).toFixed(3)} ms; run medians 1t ${median(state[0].wall).toFixed(3)} ms, ${threads}t ${median(state[1].wall).toFixed(3)} ms (${(median(state[0].wall) / median(state[1].wall)).toFixed(2)}x)` : ''));
for (const [kind, g] of Object.entries(groups).sort((a, b) => b[1].ms - a[1].ms))
  console.log(`  ${kind.padEnd(28)} ${String(g.count).padStart(3)} nodes ${g.ms.toFixed(3).padStart(8)} ms ${((100 * g.ms) / total).toFixed(1).padStart(5)}%  ${gops(g.macs, g.ms)}${pair(g.ms, g.ms2)}`);
console.log(`slowest ${top} nodes:`);
for (const r of rows.sort((a, b) => b.ms - a.ms).slice(0, top))
  console.log(`  ${r.name.padEnd(28)} ${r.kind.padEnd(28)} ${r.ms.toFixed(3).padStart(8)} ms  ${gops(r.macs, r.ms)}${pair(r.ms, r.ms2)}`);
for (const m of subjects) m.dispose();
