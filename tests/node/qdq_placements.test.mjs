// QDQ placements real exporters emit, built with the test-side ONNX writer
// and checked against onnxruntime-node (exact int8 arithmetic):
//   - PyTorch's Linear: MatMul -> Add(float bias) -> Relu -> QuantizeLinear
//     runs as one int8 QGemm (the Add folded in as an int32 bias);
//   - weights quantized in the graph: float constant -> QuantizeLinear ->
//     DequantizeLinear -> Conv (the Q folded at load) runs as one int8 conv;
//   - PyTorch's PReLU (ONNX PRelu, per-channel slope) loads and runs (float).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { encodeModel } from '../models/qdq_builder.mjs';
import { load } from '../../src/js/index.mjs';
import { randomArray } from '../../src/js/random.mjs';

const ort = createRequire(import.meta.url)('onnxruntime-node');
const ORT_OPTIONS = { logSeverityLevel: 3, extra: { session: { x64quantprecision: '1' } } };
const f32 = (a) => Float32Array.from(a);
const scalar = (name, v) => ({ name, dtype: 'float', dims: [], data: f32([v]) });
const u8 = (name, v) => ({ name, dtype: 'uint8', dims: [], data: Uint8Array.of(v) });
const i8 = (name, v) => ({ name, dtype: 'int8', dims: [], data: Int8Array.of(v) });

async function check(bytes, inputDims, step) {
  const data = randomArray('float32', inputDims.reduce((a, b) => a * b, 1), 3);
  const model = await load(bytes);
  try {
    const ours = (await model.run({ x: { data, dims: inputDims } })).y.data;
    const session = await ort.InferenceSession.create(bytes, ORT_OPTIONS);
    const theirs = (await session.run({ x: new ort.Tensor('float32', data, inputDims) })).y.data;
    let worst = 0;
    for (let i = 0; i < ours.length; i++) worst = Math.max(worst, Math.abs(ours[i] - theirs[i]) / step);
    return { model, worst, summary: model.graph().summary, lowered: model.describeLowered() };
  } catch (e) {
    model.dispose();
    throw e;
  }
}

test('MatMul -> Add(bias) -> Relu -> Q (PyTorch Linear) is one int8 QGemm, within one step of onnxruntime', async () => {
  const w = randomArray('float32', 16 * 5, 9).map((v) => Math.round((v - 0.5) * 200));
  const bytes = encodeModel({
    nodes: [
      { op: 'QuantizeLinear', name: 'qx', inputs: ['x', 's_x', 'z_x'], outputs: ['xq'] },
      { op: 'DequantizeLinear', name: 'dqx', inputs: ['xq', 's_x', 'z_x'], outputs: ['xd'] },
      { op: 'DequantizeLinear', name: 'dqw', inputs: ['wq', 's_w', 'z_w'], outputs: ['wd'], attrs: { axis: 1 } },
      { op: 'MatMul', name: 'linear', inputs: ['xd', 'wd'], outputs: ['m'] },
      { op: 'Add', name: 'bias', inputs: ['m', 'b'], outputs: ['a'] },
      { op: 'Relu', name: 'relu', inputs: ['a'], outputs: ['r'] },
      { op: 'QuantizeLinear', name: 'qy', inputs: ['r', 's_y', 'z_y'], outputs: ['yq'] },
      { op: 'DequantizeLinear', name: 'dqy', inputs: ['yq', 's_y', 'z_y'], outputs: ['y'] },
    ],
    initializers: [
      scalar('s_x', 1 / 255), u8('z_x', 0),
      { name: 'wq', dtype: 'int8', dims: [16, 5], data: Int8Array.from(w) },
      { name: 's_w', dtype: 'float', dims: [5], data: f32([0.004, 0.002, 0.003, 0.005, 0.001]) },
      { name: 'z_w', dtype: 'int8', dims: [5], data: new Int8Array(5) },
      { name: 'b', dtype: 'float', dims: [5], data: f32([0.1, -0.2, 0.05, 0.0, 0.3]) },
      scalar('s_y', 0.01), u8('z_y', 0),
    ],
    inputs: [{ name: 'x', dtype: 'float', shape: [3, 16] }],
    outputs: [{ name: 'y', dtype: 'float' }],
    opset: 13,
  });
  const r = await check(bytes, [3, 16], 0.01);
  try {
    assert.match(r.lowered, /wasmq\.QGemm\s+linear[\s\S]*\+ Add 'bias' as its bias \+ Relu 'relu'/);
    assert.match(r.summary, /^int8: 1 of 3 nodes in 1 region; quantize\/dequantize: 2; float: 0 nodes/);
    // The float bias is rounded to int32 at s_x * s_w: at most one step from the float Add.
    assert.ok(r.worst <= 1 + 1e-4, `${r.worst} steps from onnxruntime`);
  } finally {
    r.model.dispose();
  }
});

test('float weights quantized in the graph (Constant -> Q -> DQ -> Conv) run as one int8 conv, equal to onnxruntime', async () => {
  const bytes = encodeModel({
    nodes: [
      { op: 'QuantizeLinear', name: 'qx', inputs: ['x', 's_x', 'z_x'], outputs: ['xq'] },
      { op: 'DequantizeLinear', name: 'dqx', inputs: ['xq', 's_x', 'z_x'], outputs: ['xd'] },
      { op: 'QuantizeLinear', name: 'qw', inputs: ['w', 's_w', 'z_w'], outputs: ['wq'] },
      { op: 'DequantizeLinear', name: 'dqw', inputs: ['wq', 's_w', 'z_w'], outputs: ['wd'] },
      { op: 'Conv', name: 'conv', inputs: ['xd', 'wd'], outputs: ['c'], attrs: { kernel_shape: [3, 3], pads: [1, 1, 1, 1] } },
      { op: 'QuantizeLinear', name: 'qy', inputs: ['c', 's_y', 'z_y'], outputs: ['yq'] },
      { op: 'DequantizeLinear', name: 'dqy', inputs: ['yq', 's_y', 'z_y'], outputs: ['y'] },
    ],
    initializers: [
      scalar('s_x', 1 / 255), u8('z_x', 0),
      { name: 'w', dtype: 'float', dims: [4, 2, 3, 3], data: randomArray('float32', 72, 5).map((v) => v - 0.5) },
      scalar('s_w', 0.004), i8('z_w', 0),
      scalar('s_y', 0.02), u8('z_y', 128),
    ],
    inputs: [{ name: 'x', dtype: 'float', shape: [1, 2, 6, 6] }],
    outputs: [{ name: 'y', dtype: 'float' }],
    opset: 13,
  });
  const r = await check(bytes, [1, 2, 6, 6], 0.02);
  try {
    assert.match(r.lowered, /wasmq\.QConv\s+conv/);
    assert.match(r.summary, /float: 0 nodes/);
    assert.equal(r.worst, 0, `${r.worst} steps from onnxruntime`);
  } finally {
    r.model.dispose();
  }
});

// PyTorch's PReLU exports as ONNX PRelu with a per-channel slope [C, 1, 1].
test('PRelu (per-channel slope, and a scalar one) equals onnxruntime-node; a slope wider than X is a shape error', async () => {
  for (const slope of [{ dims: [3, 1, 1], data: f32([0.25, -0.5, 2]) }, { dims: [1], data: f32([0.1]) }]) {
    const bytes = encodeModel({
      nodes: [{ op: 'PRelu', name: 'prelu', inputs: ['x', 'slope'], outputs: ['y'] }],
      initializers: [{ name: 'slope', dtype: 'float', ...slope }],
      inputs: [{ name: 'x', dtype: 'float', shape: [2, 3, 4, 5] }],
      outputs: [{ name: 'y', dtype: 'float' }],
      opset: 13,
    });
    const data = randomArray('float32', 120, 4).map((v) => v * 2 - 1);
    const model = await load(bytes);
    const ours = (await model.run({ x: { data, dims: [2, 3, 4, 5] } })).y.data;
    model.dispose();
    const session = await ort.InferenceSession.create(bytes, ORT_OPTIONS);
    const theirs = (await session.run({ x: new ort.Tensor('float32', data, [2, 3, 4, 5]) })).y.data;
    assert.deepEqual(ours, theirs);
    assert.ok(ours.some((v, i) => v !== data[i]), 'negative inputs were scaled');
  }
  const wide = encodeModel({
    nodes: [{ op: 'PRelu', name: 'prelu', inputs: ['x', 'slope'], outputs: ['y'] }],
    initializers: [{ name: 'slope', dtype: 'float', dims: [2, 3], data: f32([1, 2, 3, 4, 5, 6]) }],
    inputs: [{ name: 'x', dtype: 'float', shape: [3] }],
    outputs: [{ name: 'y', dtype: 'float' }],
    opset: 13,
  });
  await assert.rejects(load(wide), (e) => e.code === 'WQ_ERR_SHAPE' && /PRelu: slope does not broadcast to X's shape/.test(e.message) && e.node === 'prelu');
});
