// The float fast paths for small products (kernels/sgemm.h, ref_conv_f32.c):
//   - MatMul with a constant B and fewer than 4 rows of A runs on B packed
//     once at plan time (wq_sgemv_packed). The same model with B fed as a
//     graph input takes the unpacked path: the outputs must be identical bit
//     for bit (both sum in k order), and close to onnxruntime-node.
//   - Stride-1 convs on small planes run on a zero-padded copy of the input
//     (conv_small), strided and 3x3 stride-1 depthwise convs on padded
//     planes (wq_simd_dw_plane): close to onnxruntime-node for pads, dilation,
//     groups, strides, bias and the fused Relu.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { load } from '../../src/js/index.mjs';
import { randomArray } from '../../src/js/random.mjs';
import { encodeModel } from '../models/qdq_builder.mjs';

const ort = createRequire(import.meta.url)('onnxruntime-node');

/** Largest |got - want| relative to the largest |want|. */
function relError(got, want) {
  let worst = 0, scale = 0;
  for (let i = 0; i < want.length; i++) {
    worst = Math.max(worst, Math.abs(got[i] - want[i]));
    scale = Math.max(scale, Math.abs(want[i]));
  }
  return worst / (scale || 1);
}

async function runBoth(bytes, feeds) {
  const model = await load(bytes);
  const ours = await model.run(Object.fromEntries(Object.entries(feeds).map(([k, v]) => [k, { data: v.data, dims: v.dims }])));
  model.dispose();
  const session = await ort.InferenceSession.create(bytes, { logSeverityLevel: 3 });
  const want = await session.run(Object.fromEntries(Object.entries(feeds).map(([k, v]) => [k, new ort.Tensor('float32', v.data, v.dims)])));
  return { ours: ours.y, want: want.y };
}

const MATMUL_CASES = [
  // [A dims, K, N]
  [[1, 64], 64, 1],
  [[1, 7], 7, 17],
  [[2, 300], 300, 33],
  [[3, 5], 5, 16],
  [[1, 1, 200], 200, 40],
  [[200], 200, 31],
];

for (const [aDims, k, n] of MATMUL_CASES) {
  test(`MatMul A [${aDims}] x constant B [${k}, ${n}]: packed batch-1 path = unpacked bits, close to onnxruntime`, async () => {
    const a = randomArray('float32', aDims.reduce((x, y) => x * y, 1), 11 + k + n);
    const b = randomArray('float32', k * n, 17 + k * n);
    const yDims = [...aDims.slice(0, -1), n];
    const model = (bConst) => encodeModel({
      nodes: [{ op: 'MatMul', name: 'mm', inputs: ['a', 'b'], outputs: ['y'] }],
      initializers: bConst ? [{ name: 'b', dtype: 'float', dims: [k, n], data: b }] : [],
      inputs: [{ name: 'a', dtype: 'float', shape: aDims }, ...(bConst ? [] : [{ name: 'b', dtype: 'float', shape: [k, n] }])],
      outputs: [{ name: 'y', dtype: 'float', shape: yDims }],
      opset: 13,
    });
    const packed = await runBoth(model(true), { a: { data: a, dims: aDims } });
    const plain = await load(model(false));
    const unpacked = (await plain.run({ a: { data: a, dims: aDims }, b: { data: b, dims: [k, n] } })).y;
    plain.dispose();
    assert.deepEqual(packed.ours.dims, yDims);
    assert.deepEqual(Buffer.from(packed.ours.data.buffer), Buffer.from(unpacked.data.buffer), 'packed and unpacked B give the same bits');
    const err = relError(packed.ours.data, packed.want.data);
    assert.ok(err < 1e-5, `relative error to onnxruntime ${err}`);
  });
}

const CONV_CASES = [
  // x [N, C, H, W], w [M, C/group, kh, kw], attributes
  { x: [1, 1, 28, 28], w: [8, 1, 5, 5], attrs: { pads: [2, 2, 2, 2] } },
  { x: [1, 8, 14, 14], w: [16, 8, 5, 5], attrs: { pads: [2, 2, 2, 2] }, relu: true },
  { x: [2, 6, 9, 11], w: [4, 3, 3, 2], attrs: { pads: [1, 0, 2, 1], group: 2, dilations: [2, 1] } },
  { x: [1, 3, 10, 7], w: [5, 3, 3, 3], attrs: {}, bias: false },
  { x: [1, 4, 5, 6], w: [8, 4, 1, 1], attrs: { pads: [1, 1, 1, 1] } },
  { x: [1, 2, 4, 4], w: [3, 2, 3, 3], attrs: { pads: [3, 3, 3, 3] } },
  // depthwise (wasm: strided ones on a padded plane, f32x4 accumulators)
  { x: [1, 72, 48, 80], w: [72, 1, 3, 3], attrs: { pads: [1, 1, 1, 1], strides: [2, 2], group: 72 } },
  { x: [2, 5, 13, 11], w: [10, 1, 3, 5], attrs: { pads: [0, 2, 1, 1], strides: [2, 3], group: 5, dilations: [1, 2] } },
  { x: [1, 6, 9, 9], w: [6, 1, 5, 5], attrs: { pads: [2, 2, 2, 2], group: 6 }, relu: true },
  // 3x3 stride 1 (wasm: nine weights in registers, an overlapping last block of 4)
  { x: [1, 3, 6, 7], w: [6, 1, 3, 3], attrs: { pads: [1, 1, 1, 1], group: 3 } },
  { x: [2, 16, 10, 4], w: [16, 1, 3, 3], attrs: { pads: [1, 0, 1, 2], group: 16 }, relu: true },
  { x: [1, 32, 112, 112], w: [32, 1, 3, 3], attrs: { pads: [1, 1, 1, 1], group: 32 } },
];

for (const c of CONV_CASES) {
  test(`Conv x [${c.x}] w [${c.w}] ${JSON.stringify(c.attrs)}${c.relu ? ' + Relu' : ''}: close to onnxruntime`, async () => {
    const x = randomArray('float32', c.x.reduce((p, q) => p * q, 1), 5);
    const w = randomArray('float32', c.w.reduce((p, q) => p * q, 1), 6);
    const bias = randomArray('float32', c.w[0], 7);
    const withBias = c.bias !== false;
    const nodes = [{ op: 'Conv', name: 'conv', inputs: ['x', 'w', ...(withBias ? ['bias'] : [])], outputs: [c.relu ? 'c' : 'y'], attrs: c.attrs }];
    if (c.relu) nodes.push({ op: 'Relu', name: 'relu', inputs: ['c'], outputs: ['y'] });
    const bytes = encodeModel({
      nodes,
      initializers: [{ name: 'w', dtype: 'float', dims: c.w, data: w }, ...(withBias ? [{ name: 'bias', dtype: 'float', dims: [c.w[0]], data: bias }] : [])],
      inputs: [{ name: 'x', dtype: 'float', shape: c.x }],
      outputs: [{ name: 'y', dtype: 'float' }],
      opset: 13,
    });
    const { ours, want } = await runBoth(bytes, { x: { data: x, dims: c.x } });
    assert.deepEqual(ours.dims, want.dims);
    const err = relError(ours.data, want.data);
    assert.ok(err < 1e-5, `relative error to onnxruntime ${err}`);
  });
}
