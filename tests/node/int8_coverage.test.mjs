// int8 all the way through QDQ graphs as vendor quantizers write them,
// against onnxruntime-node at graphOptimizationLevel 'disabled' (it runs the
// QDQ graph op by op in float: the exact semantics of the file).
//
// With power-of-two scales (Vitis AI's form) every float product and sum in
// onnxruntime's Conv/Gemm is exact, and so is the division by the output
// scale, so the int8 result must equal onnxruntime's codes bit for bit:
//   - Conv -> LeakyRelu -> Q and Gemm -> LeakyRelu -> Q (no Q between them)
//     fuse the slope into the requantization (im2col, depthwise, 1x1, GEMM);
//   - PRelu with one constant slope the same;
//   - Conv -> Q -> DQ -> LeakyRelu -> Q: the conv, then a 256-entry lookup;
//   - per-tensor and per-channel weights;
//   - DQ -> Softmax -> Q: one QLinearSoftmax (our float Softmax between the
//     codes, as the float Softmax node computed it before);
//   - a RetinaFace-shaped detector (tests/models/retinaface_qdq.mjs) at 96x96;
//   - a decomposed LayerNorm's Sub -> Pow -> ReduceMean -> Add -> Sqrt -> Div
//     between codes: one QNormalize (the float steps in the graph's order),
//     on hand-built graphs and on openwakeword quantized by our quantizer.
// Summaries list every float node under a reason code: the counts add up.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { load, quantize as quantizeModel } from '../../src/js/index.mjs';
import { randomArray } from '../../src/js/random.mjs';
import { FloatGraph, calibrate, quantize } from '../models/qdq_builder.mjs';
import { retinafaceModels } from '../models/retinaface_qdq.mjs';

const ort = createRequire(import.meta.url)('onnxruntime-node');
const ORT_DISABLED = { graphOptimizationLevel: 'disabled', logSeverityLevel: 3 };

async function compare(bytes, inputs) {
  const feeds = {}, ortFeeds = {};
  inputs.forEach(({ name, dims }, k) => {
    const data = randomArray('float32', dims.reduce((a, b) => a * b, 1), k);
    feeds[name] = { data, dims };
    ortFeeds[name] = new ort.Tensor('float32', data, dims);
  });
  const session = await ort.InferenceSession.create(bytes, ORT_DISABLED);
  const theirs = await session.run(ortFeeds);
  const model = await load(bytes);
  try {
    const ours = await model.run(feeds);
    const differ = {};
    for (const [name, t] of Object.entries(theirs)) {
      assert.equal(ours[name].data.length, t.data.length, name);
      differ[name] = ours[name].data.filter((v, i) => v !== t.data[i]).length;
    }
    const g = model.graph();
    const compute = g.nodes.filter((n) => n.role === 'compute');
    const int8 = compute.filter((n) => n.backend.startsWith('int8')).length;
    return { differ, summary: g.summary, lowered: model.describeLowered(), int8Share: int8 / compute.length };
  } finally {
    model.dispose();
  }
}

/** The float nodes the summary lists, per "Op xN CODE" entry, and its total. */
function summaryFloats(summary) {
  const m = summary.match(/float: (\d+) nodes?(?: \(([^)]*)\))?/);
  assert.ok(m, summary);
  const listed = (m[2] ?? '').split(', ').filter(Boolean).map((e) => Number(e.match(/ x(\d+) [A-Z_]+$/)[1]));
  return { total: Number(m[1]), listed: listed.reduce((a, b) => a + b, 0) };
}

function activationGraph(axis) {
  const g = new FloatGraph(`act_${axis}`, 'int8', 13);
  g.input('x', [1, 8, 12, 12]);
  const w = (name, dims, amp) => g.weight(name, dims, amp, { axis });
  w('w1', [16, 8, 3, 3], 0.3), g.weight('b1', [16], 0.1, { bias: true });
  g.node('Conv', ['x', 'w1', 'b1'], 'c1', { pads: [1, 1, 1, 1] }, { noq: true });
  g.node('LeakyRelu', ['c1'], 'a1', { alpha: { float: 0.1015625 } });
  w('w2', [16, 1, 3, 3], 0.5), g.weight('b2', [16], 0.1, { bias: true });
  g.node('Conv', ['a1', 'w2', 'b2'], 'c2', { pads: [1, 1, 1, 1], group: 16 }, { noq: true });
  g.node('LeakyRelu', ['c2'], 'a2', { alpha: { float: 0.2 } });
  w('w3', [8, 16, 1, 1], 0.4), g.weight('b3', [8], 0.1, { bias: true });
  g.node('Conv', ['a2', 'w3', 'b3'], 'c3', {}, { noq: true });
  g.const('slope', [], [0.25]);
  g.node('PRelu', ['c3', 'slope'], 'a3');
  // The other placement: the conv has its own Q, the activation reads its DQ.
  w('w4', [8, 8, 3, 3], 0.3), g.weight('b4', [8], 0.1, { bias: true });
  g.node('Conv', ['a3', 'w4', 'b4'], 'c4', { pads: [1, 1, 1, 1], strides: [2, 2] });
  g.node('LeakyRelu', ['c4'], 'a4', { alpha: { float: 0.1 } });
  g.node('Flatten', ['a4'], 'f');
  w('w5', [10, 288], 0.1), g.weight('b5', [10], 0.1, { bias: true });
  g.node('Gemm', ['f', 'w5', 'b5'], 'm', { transB: 1 }, { noq: true });
  g.node('LeakyRelu', ['m'], 'y', { alpha: { float: 0.125 } });
  g.output('y');
  return g;
}

for (const [label, axis] of [['per-tensor', null], ['per-channel', 0]]) {
  test(`Conv/Gemm -> LeakyRelu|PRelu -> Q and Conv -> Q -> DQ -> LeakyRelu -> Q (${label} weights, power-of-two scales): all int8, equal to onnxruntime`, async () => {
    const g = activationGraph(axis);
    const bytes = quantize(g, await calibrate(g), { pow2: true });
    const r = await compare(bytes, g.inputs.map((t) => ({ name: t.name, dims: t.shape })));
    assert.deepEqual(r.differ, { y: 0 });
    assert.match(r.summary, /float: 0 nodes/);
    for (const [conv, act, slope] of [['Conv_c1', 'LeakyRelu_a1', 0.1015625], ['Conv_c2', 'LeakyRelu_a2', 0.2], ['Conv_c3', 'PRelu_a3', 0.25], ['Gemm_m', 'LeakyRelu_y', 0.125]])
      assert.match(r.lowered, new RegExp(`${conv}[\\s\\S]*?\\+ ${act.split('_')[0]} '${act}' \\(fused: negative slope ${slope}\\)`));
    assert.match(r.lowered, /QLookup[\s\S]*?LeakyRelu_a4/);
  });
}

test('a LeakyRelu of slope above 1 stays its own node, the conv keeps its float reason', async () => {
  const g = new FloatGraph('steep', 'int8', 13);
  g.input('x', [1, 4, 6, 6]);
  g.weight('w', [4, 4, 3, 3], 0.3, { axis: null }), g.weight('b', [4], 0.1, { bias: true });
  g.node('Conv', ['x', 'w', 'b'], 'c', { pads: [1, 1, 1, 1] }, { noq: true });
  g.node('LeakyRelu', ['c'], 'y', { alpha: { float: 1.5 } });
  g.output('y');
  const bytes = quantize(g, await calibrate(g), { pow2: true });
  const r = await compare(bytes, [{ name: 'x', dims: [1, 4, 6, 6] }]);
  assert.deepEqual(r.differ, { y: 0 });
  assert.match(r.lowered, /slope 1\.5; a fused slope must be in \[0, 1\]/);
  const f = summaryFloats(r.summary);
  assert.equal(f.listed, f.total, r.summary);
});

test('RetinaFace-shaped Vitis-style QDQ detector (96x96): every compute node int8 in one region, outputs equal to onnxruntime', async () => {
  const { qdq } = await retinafaceModels(96);
  const r = await compare(qdq, [{ name: 'input', dims: [1, 3, 96, 96] }]);
  assert.deepEqual(r.differ, { scores: 0, box_all: 0, ldm_all: 0 });
  assert.match(r.summary, /in 1 region; quantize\/dequantize: 4; float: 0 nodes/);
  assert.equal(r.int8Share, 1, r.summary);
  assert.match(r.lowered, /QLinearSoftmax\s+Softmax_scores[\s\S]*?why: QLinearSoftmax from Softmax/);
  // The heads' Transposes read the convs' channels-last codes as written (a
  // copy): the only transition is the input's, fused into its QuantizeLinear.
  assert.match(r.summary, /; 1 transition moving 0 B \(1 fused\)$/);
});

test('summaries list every float node: a float model and --partition fp add up', async () => {
  const g = activationGraph(null);
  for (const [bytes, options] of [[g.floatModel(), {}], [quantize(g, await calibrate(g), { pow2: true }), { partition: 'fp' }]]) {
    const model = await load(bytes, options);
    try {
      const f = summaryFloats(model.graph().summary);
      assert.ok(f.total > 0);
      assert.equal(f.listed, f.total, model.graph().summary);
    } finally {
      model.dispose();
    }
  }
});

test('Transposes read channels-last codes as written (any perm), no transition, equal to onnxruntime', async () => {
  const g = new FloatGraph('transposes', 'int8', 13);
  g.input('x', [1, 3, 5, 7]);
  g.weight('w', [6, 3, 3, 3], 0.4, { axis: null }), g.weight('b', [6], 0.1, { bias: true });
  g.node('Conv', ['x', 'w', 'b'], 'c', { pads: [1, 1, 1, 1] });
  g.node('Transpose', ['c'], 't1', { perm: [0, 2, 3, 1] }, { share: 'c' });
  g.node('Transpose', ['c'], 't2', { perm: [0, 1, 3, 2] }, { share: 'c' });
  g.node('Transpose', ['c'], 't3', { perm: [3, 0, 2, 1] }, { share: 'c' });
  for (const t of ['t1', 't2', 't3']) g.output(t);
  const bytes = quantize(g, await calibrate(g), { pow2: true });
  const r = await compare(bytes, [{ name: 'x', dims: [1, 3, 5, 7] }]);
  assert.deepEqual(r.differ, { t1: 0, t2: 0, t3: 0 });
  assert.match(r.lowered, /QConv[\s\S]*layout NHWC/);
  assert.match(r.summary, /float: 0 nodes; 1 transition moving 0 B \(1 fused\)/);
});

// Resize linear between a DequantizeLinear and a QuantizeLinear runs on the
// codes: onnxruntime's float bilinear weights and four-term sum between the
// dequantized codes, then quantized (its level 'disabled' computes exactly
// that), in the conv's channels-last layout and, fed by the graph input, in
// the layout the input arrives in.
function resizeGraph(actDtype, axis, channels) {
  const g = new FloatGraph(`resize_${actDtype}`, actDtype, 13);
  g.input('x', [1, 3, 7, 9]);
  g.weight('w', [channels, 3, 3, 3], 0.4, { axis }), g.weight('b', [channels], 0.1, { bias: true });
  g.node('Conv', ['x', 'w', 'b'], 'c', { pads: [1, 1, 1, 1] });
  g.const('roi', [0], []);
  g.const('s2', [4], [1, 1, 2, 2]);
  g.const('s4', [4], [1, 1, 4, 4]);
  g.const('sf', [4], [1, 1, 1.5, 2.5]);
  g.ints('sz', [1, channels, 11, 5]);
  const resize = (input, out, mode, inputs, opts = {}) => g.node('Resize', [input, 'roi', ...inputs], out, { mode: 'linear', coordinate_transformation_mode: mode }, opts);
  resize('c', 'half', 'half_pixel', ['s2']);
  resize('c', 'asym', 'asymmetric', ['s4'], { share: 'c' });
  g.node('Resize', ['c', 'roi', '', 'sz'], 'corners', { mode: 'linear', coordinate_transformation_mode: 'align_corners' });
  resize('c', 'torch', 'pytorch_half_pixel', ['sf']);
  resize('x', 'in', 'half_pixel', ['sf']);
  for (const t of ['half', 'asym', 'corners', 'torch', 'in']) g.output(t);
  return g;
}

for (const [actDtype, axis, channels] of [['int8', null, 6], ['uint8', 0, 5], ['int8', 0, 1]]) {
  test(`DQ -> Resize linear -> Q on codes (${actDtype}, ${axis === null ? 'per-tensor' : 'per-channel'} conv weights, ${channels} channels): equal to onnxruntime`, async () => {
    const g = resizeGraph(actDtype, axis, channels);
    const r = await compare(quantize(g, await calibrate(g)), [{ name: 'x', dims: [1, 3, 7, 9] }]);
    assert.deepEqual(r.differ, { half: 0, asym: 0, corners: 0, torch: 0, in: 0 });
    assert.match(r.summary, /float: 0 nodes/);
    assert.equal((r.lowered.match(/Resize linear on int8 codes/g) ?? []).length, 5, r.lowered);
  });
}

// A LayerNorm as PyTorch exports it (no LayerNormalization op), on the graph
// input or after a MatMul (per-tensor or per-channel weights), quantized with
// a QuantizeLinear after its mean and after the Div only (as our quantizer
// places them).
function layerNormGraph(actDtype, { shape = [2, 6, 24], axes = [-1], square = 'Pow', weightAxis } = {}) {
  const g = new FloatGraph('layernorm', actDtype, 13);
  g.input('x', shape);
  let x = 'x';
  if (weightAxis !== undefined) {
    const c = shape.at(-1);
    g.weight('w', [c, c], 0.4, { axis: weightAxis });
    g.node('MatMul', ['x', 'w'], 'h');
    x = 'h';
  }
  g.const('two', [], [2]);
  g.const('eps', [], [1e-3]);
  g.node('ReduceMean', [x], 'mu', { axes, keepdims: 1 });
  g.node('Sub', [x, 'mu'], 'd', {}, { noq: true });
  g.node(square, square === 'Pow' ? ['d', 'two'] : ['d', 'd'], 'p', {}, { noq: true });
  g.node('ReduceMean', ['p'], 'v', { axes, keepdims: 1 }, { noq: true });
  g.node('Add', ['eps', 'v'], 've', {}, { noq: true });
  g.node('Sqrt', ['ve'], 's', {}, { noq: true });
  g.node('Div', ['d', 's'], 'y');
  g.output('y');
  return g;
}

const LAYER_NORMS = [
  ['int8, Pow, last axis', 'int8', {}],
  ['uint8, Mul(d, d), last axis', 'uint8', { square: 'Mul' }],
  ['int8, last two axes', 'int8', { axes: [-2, -1], shape: [3, 4, 10] }],
  ['int8 after a MatMul, per-channel weights', 'int8', { weightAxis: 1 }],
  ['uint8 after a MatMul, per-tensor weights', 'uint8', { weightAxis: null }],
];
for (const [label, actDtype, options] of LAYER_NORMS) {
  test(`decomposed LayerNorm between codes (${label}): one QNormalize, no float node, equal to onnxruntime`, async () => {
    const g = layerNormGraph(actDtype, options);
    const r = await compare(quantize(g, await calibrate(g)), [{ name: 'x', dims: g.inputs[0].shape }]);
    assert.deepEqual(r.differ, { y: 0 });
    assert.match(r.summary, /in 1 region; .*float: 0 nodes/);
    assert.match(r.lowered, /wasmq\.QNormalize\s+Sub_d[\s\S]*?why: QNormalize from a LayerNorm/);
  });
}

test('a LayerNorm over a leading axis stays float, every float node counted', async () => {
  const g = layerNormGraph('int8', { axes: [1] });
  const r = await compare(quantize(g, await calibrate(g)), [{ name: 'x', dims: g.inputs[0].shape }]);
  assert.deepEqual(r.differ, { y: 0 });
  assert.doesNotMatch(r.lowered, /QNormalize/);
  const f = summaryFloats(r.summary);
  assert.ok(f.total >= 6, r.summary);
  assert.equal(f.listed, f.total, r.summary);
});

test('openwakeword quantized by wasmq: both LayerNorms one QNormalize each, all int8 in one region, equal to onnxruntime and to its float partition', async () => {
  const floatBytes = readFileSync(new URL('../../../shared/models/openwakeword-hello-deepa-mlp/model.onnx', import.meta.url));
  const q = await quantizeModel(floatBytes);
  for (let s = 0; s < 4; s++) await q.observe({ 'onnx::Flatten_0': { data: randomArray('float32', 2400, 100 + s), dims: [1, 25, 96] } });
  const { onnx } = await q.finish();
  const model = await load(onnx);
  const fp = await load(onnx, { partition: 'fp' });
  const session = await ort.InferenceSession.create(onnx, ORT_DISABLED);
  try {
    const g = model.graph();
    assert.match(g.summary, /in 1 region; .*float: 0 nodes/);
    assert.equal((model.describeLowered().match(/wasmq\.QNormalize/g) ?? []).length, 2);
    let differ = 0, differFp = 0;
    for (let s = 0; s < 40; s++) {
      const data = randomArray('float32', 2400, s).map((v) => v * (1 + (s % 4)));
      const feeds = { 'onnx::Flatten_0': { data, dims: [1, 25, 96] } };
      const [ours, theirs, float] = [(await model.run(feeds))['39'].data, (await session.run({ 'onnx::Flatten_0': new ort.Tensor('float32', data, [1, 25, 96]) }))['39'].data, (await fp.run(feeds))['39'].data];
      differ += ours.filter((v, i) => v !== theirs[i]).length;
      differFp += ours.filter((v, i) => v !== float[i]).length;
    }
    assert.equal(differ, 0);
    assert.equal(differFp, 0);
  } finally {
    model.dispose();
    fp.dispose();
  }
});
