#!/usr/bin/env node
// Two builds of the int8 conv kernel side by side in one process: the
// benchmark variants (build.sh --bench) of two checkouts are instantiated
// together and their wqx_bench_qconv calls alternate (A B, B A, ...), so
// machine noise hits both alike; per shape the best time per call of each
// and their ratio. For kernel changes whose effect is a few percent.
//
//   node bench/kernel_ab.mjs DIR_A DIR_B [--rounds 25] [--shapes H,W,C,K,S,G ...]
//
// DIR: a --bench build's folder (wasm_build/out/bench of each checkout).
// A shape is input H x W x C, kernel K x K, stride S, G groups (G = C:
// depthwise), M = C outputs; default: mobilenetv2-12's depthwise layers.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const args = process.argv.slice(2);
const firstOption = args.findIndex((a) => a.startsWith('--'));
const dirs = firstOption < 0 ? args : args.slice(0, firstOption);
if (dirs.length !== 2) {
  console.error('usage: node bench/kernel_ab.mjs DIR_A DIR_B [--rounds N] [--shapes H,W,C,K,S,G ...]');
  process.exit(2);
}
const at = args.indexOf('--rounds');
const rounds = at >= 0 ? Number(args[at + 1]) : 25;
const from = args.indexOf('--shapes');
const shapeArgs = [];
for (let i = from + 1; from >= 0 && i < args.length && !args[i].startsWith('--'); i++) shapeArgs.push(args[i]);
const shapes = (
  shapeArgs.length
    ? shapeArgs
    : ['112,112,32,3,1,32', '112,112,96,3,2,96', '56,56,144,3,1,144', '56,56,144,3,2,144', '28,28,192,3,1,192',
       '28,28,192,3,2,192', '14,14,384,3,1,384', '14,14,576,3,1,576', '14,14,576,3,2,576', '7,7,960,3,1,960']
).map((s) => s.split(',').map(Number));

const instantiate = async (dir) => {
  const glue = await import(pathToFileURL(resolve(dir, 'wasmq.mjs')).href);
  const core = await glue.default({ wasmBinary: readFileSync(resolve(dir, 'wasmq.wasm')) });
  if (typeof core._wqx_bench_qconv !== 'function') throw new Error(`${dir}: no wqx_bench_qconv (not a --bench build)`);
  return core;
};
const cores = [await instantiate(dirs[0]), await instantiate(dirs[1])];

for (const [h, w, c, k, s, g] of shapes) {
  const oh = Math.floor((h - 1) / s) + 1, ow = Math.floor((w - 1) / s) + 1; // pads (k - 1) / 2
  const macs = oh * ow * c * (c / g) * k * k;
  const iters = Math.max(1, Math.round(3e7 / macs)); // ~10-30 ms per call
  const best = [Infinity, Infinity];
  for (const core of cores) for (let i = 0; i < 3; i++) core._wqx_bench_qconv(h, w, c, c, k, s, g, iters);
  for (let r = 0; r < rounds; r++)
    for (let j = 0; j < 2; j++) {
      const i = (r + j) % 2;
      const seconds = cores[i]._wqx_bench_qconv(h, w, c, c, k, s, g, iters);
      if (seconds < 0) throw new Error(`wqx_bench_qconv failed on ${h}x${w}x${c} k${k} s${s} g${g}`);
      best[i] = Math.min(best[i], seconds / iters);
    }
  const ms = (t) => (t * 1e3).toFixed(4).padStart(8);
  const gops = (t) => ((2 * macs) / t / 1e9).toFixed(1).padStart(5);
  console.log(
    `${`${h}x${w}x${c} k${k} s${s} g${g}`.padEnd(24)} A ${ms(best[0])} ms ${gops(best[0])} GOPS | ` +
      `B ${ms(best[1])} ms ${gops(best[1])} GOPS | B ${(best[0] / best[1]).toFixed(3)}x A`,
  );
}
