// Differential testing on seeded random graphs (tests/models/random_graphs.mjs):
// small DAGs of convs, pools, add/mul, concat, lookups, resize,
// depth-to-space and gemm with random legal attributes and shapes, as a
// float model and as the QDQ model calibrated from it. Each graph runs
//   - in wasm, lowered onto the int8 SIMD kernels;
//   - natively (the native CLI), lowered onto the scalar reference kernels;
//   - natively op by op with float Q/DQ (--no-lower);
//   - in onnxruntime-node (x64quantprecision: exact int8 arithmetic);
// and must give: wasm == native bit for bit (the integer path is the same
// arithmetic on both); the float model within 1e-4 (relative to the output's
// largest magnitude) of onnxruntime's float run; and, node by node against
// onnxruntime and against the op-by-op run (every quantized intermediate):
//   - a node fed the same codes as the other run lands within one output
//     step of it (an op's own rounding: e.g. an AveragePool window whose
//     exact mean is a .5 tie, which we round half to even as QuantizeLinear
//     does and a float sum lands on either side of);
//   - a node fed codes that already differ lands within one step plus the
//     input difference times the op's largest slope (Lipschitz constant:
//     Relu 1, Sigmoid 1/4, HardSwish 3/2, Conv/Gemm the largest sum of
//     |weight| of an output channel, ...): a one-step tie upstream may grow
//     to 2-3 steps after a HardSwish whose output step is 5x finer than its
//     input's, but no further than that bound. Nodes of ops with no such
//     bound (Mul) are checked only when fed the same codes.
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
import { FloatGraph, calibrate, quantize, quantizeWeight } from '../models/qdq_builder.mjs';

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

async function runWasm(bytes, feeds, counts, loadOptions) {
  const m = await load(bytes, loadOptions);
  try {
    const out = await m.run(feeds);
    if (counts) for (const n of m.graph().nodes) if (n.role === 'compute') counts[n.backend.startsWith('int8') ? 'int8' : 'float']++;
    return Object.fromEntries(Object.entries(out).map(([k, v]) => [k, v.data]));
  } finally {
    m.dispose();
  }
}

/**
 * The dequantized value of each quantized node output of g (by its float
 * tensor name) in a wasm run with every intermediate captured: `${t}_q`, or
 * `${t}_q_nhwc` where lowering made it channels-last, or another tensor
 * lowering derived from it (`${t}_q_2_nhwc`) if that holds codes of t's
 * quantization (not a MaxPool run on its input's codes before the
 * requantize). Tensors fused away are left out.
 */
async function wasmIntermediates(g, bytes, feeds, loadOptions) {
  const qparams = bytes.qparams;
  const m = await load(bytes, loadOptions);
  try {
    const captured = (await m.run(feeds, { capture: true })).captured;
    const names = Object.keys(captured);
    const values = {};
    for (const n of g.nodes) {
      const t = n.outputs[0];
      if (g.opts.get(t)?.noq) continue;
      const key = [g.outputs.includes(t) ? t : `${t}_dq`, `${t}_q`, `${t}_q_nhwc`].find((k) => captured[k]) ?? names.find((k) => k.startsWith(`${t}_q_`) && onGrid(captured[k].data, qparams[t]));
      if (key) values[t] = captured[key].data;
    }
    return values;
  } finally {
    m.dispose();
  }
}

/** Whether every value is (code - zp) * scale for a code of qp's type. */
function onGrid(values, { dtype, scale, zp }) {
  const [qmin, qmax] = dtype === 'int8' ? [-128, 127] : [0, 255];
  return values.every((v) => {
    const code = v / scale + zp;
    return Math.abs(code - Math.round(code)) < 1e-3 && code > qmin - 1e-3 && code < qmax + 1e-3;
  });
}

// Largest slope of each op's output over one input (see the header).
const SLOPE = { Relu: 1, Clip: 1, Tanh: 1, Sigmoid: 0.25, HardSwish: 1.5, MaxPool: 1, AveragePool: 1, GlobalAveragePool: 1, Resize: 1, Concat: 1, DepthToSpace: 1, Flatten: 1, Add: 1 };

/** The largest sum of |dequantized weight| over one output of a Conv or Gemm. */
function weightGain(g, n) {
  const c = g.consts.get(n.inputs[1]);
  // Bounded both ways (an output is a row of a Conv weight, a column of a Gemm's): sums of |code| times the largest scale.
  let w = c.data, scale = 1;
  if (!c.opts.float) {
    const { q, scales } = quantizeWeight(c, c.opts.axis === undefined ? 0 : c.opts.axis);
    (w = q), (scale = Math.max(...scales));
  }
  const rows = c.dims[0], cols = w.length / rows;
  let best = 0;
  for (let r = 0; r < rows; r++) best = Math.max(best, w.subarray(r * cols, (r + 1) * cols).reduce((a, v) => a + Math.abs(v), 0));
  for (let k = 0; k < cols; k++) {
    let sum = 0;
    for (let r = 0; r < rows; r++) sum += Math.abs(w[r * cols + k]);
    best = Math.max(best, sum);
  }
  return best * scale;
}

function slopeOf(g, n, k) {
  if (n.op === 'LeakyRelu') return Math.max(1, Math.abs(n.attrs?.alpha ?? 0.01));
  if (n.op === 'Conv' || n.op === 'Gemm') return k === 0 ? weightGain(g, n) : 0;
  return SLOPE[n.op] ?? Infinity;
}

/**
 * Per quantized node output t of g: how many of its output steps `ours` may
 * be from `theirs` (both {tensor: dequantized values}): 1 + (difference of
 * its quantized sources times the slopes on the way) / step. Sources are the
 * quantized tensors it reads, looking through unquantized ones (a Conv fused
 * with its Relu); graph inputs and constants are the same in both runs.
 */
function allowedSteps(g, steps, ours, theirs) {
  const producer = new Map(g.nodes.map((n) => [n.outputs[0], n]));
  const diff = new Map();
  const diffOf = (t) => {
    if (!diff.has(t)) {
      let d = Infinity;
      if (ours[t] && theirs[t]) {
        d = 0;
        for (let i = 0; i < ours[t].length; i++) d = Math.max(d, Math.abs(ours[t][i] - theirs[t][i]));
        if (d <= 1e-3 * steps[t]) d = 0;
      }
      diff.set(t, d);
    }
    return diff.get(t);
  };
  // Difference reaching node n's output before its own rounding.
  const drift = (n) =>
    n.inputs.reduce((sum, u, k) => {
      const p = producer.get(u);
      if (!p) return sum; // graph input or constant
      const slope = slopeOf(g, n, k);
      if (slope === 0) return sum;
      const d = g.opts.get(u)?.noq ? drift(p) : diffOf(u);
      return d === 0 ? sum : sum + slope * d;
    }, 0);
  const allowed = {};
  for (const n of g.nodes) {
    const t = n.outputs[0];
    if (!g.opts.get(t)?.noq) allowed[t] = 1 + drift(n) / steps[t];
  }
  return allowed;
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

const totals = { graphs: 0, nodes: 0, elements: 0, ortOff: 0, int8: 0, float: 0, checked: { same: 0, drift: 0 }, grown: 0 };

for (let seed = FIRST; seed < FIRST + COUNT; seed++) {
  const { graph: g, description } = randomGraph(seed);
  test(`random graph ${seed}: ${description}`, async () => {
    const floatBytes = g.floatModel();
    const ranges = await calibrate(g);
    const qdqBytes = quantize(g, ranges);
    const feeds = feedsFor(g);
    const where = `seed ${seed} (${description}); WQ_DIFF_SEED=${seed} WQ_DIFF_GRAPHS=1 reruns it`;

    const ours = await runWasm(qdqBytes, feeds, totals);
    const reference = runNative(qdqBytes, feeds, g.outputs);
    const opByOp = runNative(qdqBytes, feeds, g.outputs, ['--no-lower']);
    const onnxruntime = await runOrt(qdqBytes, feeds);
    for (const name of g.outputs) {
      const i = firstDifference(ours[name], reference[name]);
      assert.equal(i, -1, `${name}: wasm SIMD ${ours[name][i]} != native reference ${reference[name][i]} at ${i}; ${where}`);
    }

    // Node by node: ours (lowered) against onnxruntime and the op-by-op run
    // (wasm with lowering off: the same core as the native --no-lower run).
    const steps = qdqBytes.steps;
    const oursAll = await wasmIntermediates(g, qdqBytes, feeds);
    const ortOut = await runOrt(quantize(g, ranges, { exposeIntermediates: true }), feeds);
    const ortAll = {}, opByOpAll = await wasmIntermediates(g, qdqBytes, feeds, { lowering: false });
    for (const t of Object.keys(steps)) ortAll[t] = ortOut[g.outputs.includes(t) ? t : `${t}_dq`];
    for (const name of g.outputs) if (steps[name]) (ortAll[name] = onnxruntime[name]), (opByOpAll[name] = opByOp[name]), (oursAll[name] = ours[name]);
    for (const [label, theirs] of [['onnxruntime', ortAll], ['the op-by-op QDQ run', opByOpAll]]) {
      const allowed = allowedSteps(g, steps, oursAll, theirs);
      for (const [t, bound] of Object.entries(allowed)) {
        if (!oursAll[t] || !theirs[t] || !Number.isFinite(bound)) continue;
        const d = maxSteps(oursAll[t], theirs[t], steps[t]);
        assert.ok(d.max <= bound + 1e-3, `${t}: ${d.max.toFixed(2)} steps from ${label} at ${d.at} (allowed ${bound.toFixed(2)}: ${bound === 1 ? 'fed the same codes' : 'its inputs differ'}); ${where}`);
        totals.checked[bound === 1 ? 'same' : 'drift']++;
        if (bound > 1 && d.max > 1 + 1e-3) totals.grown++;
      }
    }
    for (const name of g.outputs) {
      totals.elements += ours[name].length;
      if (steps[name] && maxSteps(ours[name], onnxruntime[name], steps[name]).max > 1e-3) totals.ortOff++;
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

// The one-step differences from onnxruntime in the random graphs start at
// AveragePool windows whose exact mean is a .5 tie: the int8 kernel rounds it
// half to even (QuantizeLinear's rounding of the exact mean), onnxruntime's
// float sum of scaled codes lands a hair above or below the tie.
test('AveragePool alone: exact .5 means round half to even', async () => {
  const g = new FloatGraph('avgpool_ties', 'uint8');
  g.input('x', [1, 1, 2, 8], { range: [0, 1] });
  g.node('AveragePool', ['x'], 'y', { kernel_shape: [2, 2], strides: [2, 2] }, { range: [0, 1] });
  g.output('y');
  const bytes = quantize(g, new Map());
  const step = bytes.steps.y;
  // 2x2 windows (columns 2j, 2j+1 of both rows) with code sums 10, 26, 406, 806: means 2.5, 6.5, 101.5, 201.5.
  const rows = [
    [1, 2, 5, 6, 100, 101, 200, 201],
    [3, 4, 7, 8, 102, 103, 202, 203],
  ];
  const data = Float32Array.from(rows.flat(), (c) => Math.fround(c * step));
  const y = (await runWasm(bytes, { x: { data, dims: [1, 1, 2, 8] } })).y;
  assert.deepEqual(Array.from(y, (v) => Math.round(v / step)), [2, 6, 102, 202]);
});

test('differential summary', () => {
  console.log(
    `differential: ${totals.graphs} of ${COUNT} random graphs (${totals.nodes} float nodes, ${totals.elements} int8 output elements); ` +
      `lowered compute nodes: ${totals.int8} int8, ${totals.float} float; outputs not bit-equal to onnxruntime (within one step): ${totals.ortOff}; ` +
      `node checks: ${totals.checked.same} fed the same codes (<= 1 step), ${totals.checked.drift} fed differing codes (within their bound), ${totals.grown} of those past 1 step`,
  );
  assert.equal(totals.graphs, COUNT);
});
