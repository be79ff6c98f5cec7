// Differential testing on seeded random graphs (tests/models/random_graphs.mjs):
// small DAGs of convs, pools, add/mul, concat, lookups, resize,
// depth-to-space and gemm with random legal attributes and shapes, as a
// float model and as the QDQ model calibrated from it. Each graph runs
//   - in wasm, lowered onto the int8 SIMD kernels;
//   - natively (the native CLI), lowered onto the scalar reference kernels;
//   - natively op by op with float Q/DQ (--no-lower);
//   - in onnxruntime-node (x64quantprecision: exact int8 arithmetic);
// and must give: wasm == native bit for bit (the integer path is the same
// arithmetic on both); within one output quantization step of the op-by-op
// run and of onnxruntime; the float model within 1e-4 (relative to the
// output's largest magnitude) of onnxruntime's float run.
// WQ_DIFF_GRAPHS=N runs N graphs (default 200), WQ_DIFF_SEED=S starts at seed S.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import os from 'node:os';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { load } from '../../src/js/index.mjs';
import { encodeNpy, parseNpy } from '../../src/js/npy.mjs';
import { randomArray } from '../../src/js/random.mjs';
import { safeFileName } from '../../src/js/cli.mjs';
import { NATIVE_CLI } from './helpers.mjs';
import { randomGraph } from '../models/random_graphs.mjs';
import { calibrate, quantize } from '../models/qdq_builder.mjs';

const ort = createRequire(import.meta.url)('onnxruntime-node');
const ORT_OPTIONS = { logSeverityLevel: 3, extra: { session: { x64quantprecision: '1' } } };
const COUNT = Number(process.env.WQ_DIFF_GRAPHS ?? 200);
const FIRST = Number(process.env.WQ_DIFF_SEED ?? 1);
const FLOAT_TOLERANCE = 1e-4;

const work = mkdtempSync(path.join(os.tmpdir(), 'wq-diff-'));
process.on('exit', () => rmSync(work, { recursive: true, force: true }));

// Input k is seeded with k, uniform [0, 1): what calibrate() saw.
function feedsFor(g) {
  return Object.fromEntries(g.inputs.map((t, k) => [t.name, { data: randomArray('float32', t.shape.reduce((a, b) => a * b, 1), k), dims: t.shape }]));
}

async function runWasm(bytes, feeds, counts) {
  const m = await load(bytes);
  try {
    const out = await m.run(feeds);
    if (counts) for (const n of m.graph().nodes) if (n.role === 'compute') counts[n.backend.startsWith('int8') ? 'int8' : 'float']++;
    return Object.fromEntries(Object.entries(out).map(([k, v]) => [k, v.data]));
  } finally {
    m.dispose();
  }
}

function runNative(bytes, feeds, outputs, extra = []) {
  const dir = mkdtempSync(path.join(work, 'run-'));
  const file = path.join(dir, 'model.onnx');
  writeFileSync(file, bytes);
  const args = ['run', file, '--out', dir, ...extra];
  for (const [name, t] of Object.entries(feeds)) {
    const f = path.join(dir, `in_${safeFileName(name)}.npy`);
    writeFileSync(f, encodeNpy({ dtype: 'float32', dims: t.dims, data: t.data }));
    args.push('--input', `${name}=${f}`);
  }
  const r = spawnSync(NATIVE_CLI, args, { encoding: 'utf8' });
  assert.equal(r.status, 0, `native run ${extra.join(' ')}: ${r.stderr}`);
  const result = Object.fromEntries(outputs.map((name) => [name, parseNpy(readFileSync(path.join(dir, `${safeFileName(name)}.npy`))).data]));
  rmSync(dir, { recursive: true, force: true });
  return result;
}

async function runOrt(bytes, feeds) {
  const session = await ort.InferenceSession.create(bytes, ORT_OPTIONS);
  const out = await session.run(Object.fromEntries(Object.entries(feeds).map(([k, v]) => [k, new ort.Tensor('float32', v.data, v.dims)])));
  return Object.fromEntries(Object.entries(out).map(([k, v]) => [k, v.data]));
}

/** Largest |a - b| in units of `step`, and where. */
function maxSteps(a, b, step) {
  assert.equal(a.length, b.length, 'output lengths differ');
  let max = 0, at = -1;
  for (let i = 0; i < a.length; i++) {
    const d = Math.abs(a[i] - b[i]) / step;
    if (!(d <= max)) (max = d), (at = i);
  }
  return { max, at };
}

function firstDifference(a, b) {
  for (let i = 0; i < a.length; i++) if (!Object.is(a[i], b[i])) return i;
  return -1;
}

const totals = { graphs: 0, nodes: 0, elements: 0, ortOff: 0, int8: 0, float: 0 };

for (let seed = FIRST; seed < FIRST + COUNT; seed++) {
  const { graph: g, description } = randomGraph(seed);
  test(`random graph ${seed}: ${description}`, async () => {
    const floatBytes = g.floatModel();
    const qdqBytes = quantize(g, await calibrate(g));
    const feeds = feedsFor(g);
    const where = `seed ${seed} (${description}); WQ_DIFF_SEED=${seed} WQ_DIFF_GRAPHS=1 reruns it`;

    const ours = await runWasm(qdqBytes, feeds, totals);
    const reference = runNative(qdqBytes, feeds, g.outputs);
    const opByOp = runNative(qdqBytes, feeds, g.outputs, ['--no-lower']);
    const onnxruntime = await runOrt(qdqBytes, feeds);
    for (const name of g.outputs) {
      const step = qdqBytes.steps[name];
      const i = firstDifference(ours[name], reference[name]);
      assert.equal(i, -1, `${name}: wasm SIMD ${ours[name][i]} != native reference ${reference[name][i]} at ${i}; ${where}`);
      const vsOpByOp = maxSteps(ours[name], opByOp[name], step);
      assert.ok(vsOpByOp.max <= 1 + 1e-3, `${name}: ${vsOpByOp.max.toFixed(2)} steps from the op-by-op QDQ run at ${vsOpByOp.at}; ${where}`);
      const vsOrt = maxSteps(ours[name], onnxruntime[name], step);
      assert.ok(vsOrt.max <= 1 + 1e-3, `${name}: ${vsOrt.max.toFixed(2)} steps from onnxruntime at ${vsOrt.at}; ${where}`);
      totals.elements += ours[name].length;
      if (vsOrt.max > 1e-3) totals.ortOff++;
    }

    const floatOurs = await runWasm(floatBytes, feeds);
    const floatOrt = await runOrt(floatBytes, feeds);
    for (const name of g.outputs) {
      const want = floatOrt[name];
      const scale = Math.max(1e-6, ...Array.from(want, Math.abs));
      const { max, at } = maxSteps(floatOurs[name], want, scale);
      assert.ok(max <= FLOAT_TOLERANCE, `${name}: float ${floatOurs[name][at]} vs onnxruntime ${want[at]} (relative ${max.toExponential(2)}); ${where}`);
    }
    totals.graphs++;
    totals.nodes += g.nodes.length;
  });
}

test('differential summary', () => {
  console.log(
    `differential: ${totals.graphs} of ${COUNT} random graphs (${totals.nodes} float nodes, ${totals.elements} int8 output elements); ` +
      `lowered compute nodes: ${totals.int8} int8, ${totals.float} float; outputs not bit-equal to onnxruntime (within one step): ${totals.ortOff}`,
  );
  assert.equal(totals.graphs, COUNT);
});
