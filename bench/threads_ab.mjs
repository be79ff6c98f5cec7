#!/usr/bin/env node
// Thread speedup measured the way a shared machine allows: ours on one
// thread and on N threads, run by run in turn (1, N, 1, N, ...) in one
// process, over several rounds of fresh processes; with --builds, rounds
// alternate between threaded builds (A B A B ...) to compare two of them.
// Prints per build the medians over all runs of 1 thread and N threads,
// their ratio, the minima, and the 1-minute load average seen at each round
// (speedups need an idle second core: read them beside the load).
//
//   node bench/threads_ab.mjs MODEL.onnx [--threads 2] [--rounds 6] [--runs 40]
//        [--shape NAME=1,1,224,224] [--builds DIR_A,DIR_B]
//
// DIR: a threaded build's folder (default wasm_build/out/mt).
import { spawnSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : fallback;
};

if (args[0] === '--child') {
  const spec = JSON.parse(args[1]);
  const { configure, load } = await import('../src/js/index.mjs');
  const { randomArray } = await import('../src/js/random.mjs');
  if (spec.dir) configure({ threadedDir: new URL(`file://${spec.dir}/`) });
  const one = await load(spec.file, { inputShapes: spec.shapes });
  const many = await load(spec.file, { inputShapes: spec.shapes, threads: spec.threads });
  const feeds = {};
  one.inputs.forEach((info, k) => {
    const dims = spec.shapes[info.name] ?? info.shape.map((d) => (typeof d === 'number' && d > 0 ? d : 1));
    const dtype = info.dtype === 'float' ? 'float32' : info.dtype;
    feeds[info.name] = { data: randomArray(dtype, dims.reduce((a, b) => a * b, 1), 1 + k), dims };
  });
  const warm = Math.max(3, Math.min(10, spec.runs >> 2));
  for (let i = 0; i < warm; i++) {
    await one.run(feeds);
    await many.run(feeds);
  }
  const t1 = [], tn = [];
  for (let r = 0; r < spec.runs; r++) {
    let t = performance.now();
    await one.run(feeds);
    t1.push(performance.now() - t);
    t = performance.now();
    await many.run(feeds);
    tn.push(performance.now() - t);
  }
  process.stdout.write(JSON.stringify({ t1, tn, used: many.info.threads }));
  one.dispose();
  many.dispose();
  process.exit(0);
}

const file = args.find((a, i) => !a.startsWith('--') && !(i > 0 && args[i - 1].startsWith('--')));
if (!file) {
  console.error('usage: node bench/threads_ab.mjs MODEL.onnx [--threads N] [--rounds N] [--runs N] [--shape NAME=d,d] [--builds DIR_A,DIR_B]');
  process.exit(2);
}
const threads = Number(option('--threads', 2));
const rounds = Number(option('--rounds', 6));
const runs = Number(option('--runs', 40));
const shapes = {};
args.forEach((a, i) => {
  if (a !== '--shape') return;
  const [name, dims] = args[i + 1].split('=');
  shapes[name] = dims.split(',').map(Number);
});
const builds = option('--builds', '').split(',').filter(Boolean);
if (builds.length === 0) builds.push('');
const results = builds.map(() => ({ t1: [], tn: [], loads: [] }));
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
for (let r = 0; r < rounds; r++) {
  builds.forEach((dir, b) => {
    const load = loadavg()[0];
    const spec = { file, shapes, threads, runs, dir };
    const child = spawnSync(process.execPath, [fileURLToPath(import.meta.url), '--child', JSON.stringify(spec)], { encoding: 'utf8', maxBuffer: 1 << 26 });
    if (child.status !== 0) throw new Error(`round ${r + 1} ${dir || 'default'}: ${child.stderr.trim().split('\n').slice(-3).join(' ')}`);
    const got = JSON.parse(child.stdout);
    if (got.used !== threads) console.error(`note: ${got.used} threads given (asked ${threads})`);
    results[b].t1.push(...got.t1);
    results[b].tn.push(...got.tn);
    results[b].loads.push(load);
    console.error(`round ${r + 1}/${rounds} ${dir || 'default'}: 1t ${median(got.t1).toFixed(3)} ms, ${threads}t ${median(got.tn).toFixed(3)} ms (load ${load.toFixed(2)})`);
  });
}
builds.forEach((dir, b) => {
  const { t1, tn, loads } = results[b];
  const m1 = median(t1), mn = median(tn);
  console.log(
    `${dir || 'default'}: ${file.split('/').slice(-2).join('/')} 1 thread ${m1.toFixed(3)} ms, ${threads} threads ${mn.toFixed(3)} ms: ` +
      `${(m1 / mn).toFixed(2)}x (medians of ${t1.length} runs each; minima ${Math.min(...t1).toFixed(3)} / ${Math.min(...tn).toFixed(3)} ms, ` +
      `${(Math.min(...t1) / Math.min(...tn)).toFixed(2)}x); load ${Math.min(...loads).toFixed(1)}-${Math.max(...loads).toFixed(1)}`,
  );
});
