// onnxruntime's quantized contrib ops (com.microsoft) and the ReduceMean
// chains of real exporters, in small models written by the test-side ONNX
// writer (tests/models/qdq_builder.mjs): float input -> QuantizeLinear ->
// the op -> DequantizeLinear, for uint8 and int8 data. Each runs against
// onnxruntime-node on seeded inputs (exact int8 arithmetic, see
// shared/TOOLCHAIN.md) and must lower to the int8 backend.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { load } from '../../src/js/index.mjs';
import { randomArray } from '../../src/js/random.mjs';
import { encodeModel } from '../models/qdq_builder.mjs';

const ort = createRequire(import.meta.url)('onnxruntime-node');
const ORT_OPTIONS = { logSeverityLevel: 3, extra: { session: { x64quantprecision: '1' } } };

const X_SHAPE = [1, 4, 6, 5];
const QP = {
  uint8: { data: Uint8Array, x: [8 / 255, 128], y: [0.05, 120] },
  int8: { data: Int8Array, x: [8 / 255, 0], y: [0.05, -8] },
};

// A model: x (float) -> QuantizeLinear -> body -> DequantizeLinear -> y.
// body(dtype) gives { nodes, inits, yScale } reading 'xq' and writing 'yq'.
function wrap(dtype, body, shape = X_SHAPE) {
  const qp = QP[dtype];
  const scalar = (name, ty, value) => ({ name, dtype: ty, dims: [], data: ty === 'float' ? Float32Array.of(value) : qp.data.of(value) });
  const inner = body(dtype, qp, scalar);
  const nodes = [
    { op: 'QuantizeLinear', name: 'quantize_x', inputs: ['x', 'x_scale', 'x_zp'], outputs: ['xq'] },
    ...inner.nodes,
    { op: 'DequantizeLinear', name: 'dequantize_y', inputs: ['yq', 'y_scale', 'y_zp'], outputs: ['y'] },
  ];
  const initializers = [
    scalar('x_scale', 'float', qp.x[0]), scalar('x_zp', dtype, qp.x[1]),
    scalar('y_scale', 'float', qp.y[0]), scalar('y_zp', dtype, qp.y[1]),
    ...(inner.inits ?? []),
  ];
  const bytes = encodeModel({
    nodes, initializers, opset: 13, extraOpsets: [['com.microsoft', 1]],
    inputs: [{ name: 'x', dtype: 'float', shape }],
    outputs: [{ name: 'y', dtype: 'float' }],
  });
  return { bytes, yScale: qp.y[0] };
}

const contrib = (op, attrs = {}) => ({
  nodes: [{ op, name: op, domain: 'com.microsoft', inputs: ['xq', 'x_scale', 'x_zp', 'y_scale', 'y_zp'], outputs: ['yq'], attrs }],
});

// Seeded int8 codes in [-127, 127] for constant weights.
const codes = (n, seed) => Int8Array.from(randomArray('int8', n, seed), (v) => (v === -128 ? -127 : v));

const CASES = [
  {
    // onnxruntime's quantizer writes Gemm as QGemm: B int8 [N, K] (transB)
    // with per-column scales, int32 C at a_scale * b_scale. onnxruntime's
    // CPU kernel takes uint8 A only when Y is quantized (int8 Y: no kernel).
    name: 'QGemm transB, per-column b_scale, int32 C',
    dtypes: ['uint8'],
    shape: [3, 16],
    lowered: 'QGemm from QGemm',
    body: (dtype, qp) => ({
      nodes: [{
        op: 'QGemm', name: 'qgemm', domain: 'com.microsoft', attrs: { transB: 1 },
        inputs: ['xq', 'x_scale', 'x_zp', 'w', 'w_scale', 'w_zp', 'bias', 'y_scale', 'y_zp'], outputs: ['yq'],
      }],
      inits: [
        { name: 'w', dtype: 'int8', dims: [8, 16], data: codes(128, 7) },
        { name: 'w_scale', dtype: 'float', dims: [8], data: Float32Array.from({ length: 8 }, (_, i) => 0.002 + 0.0005 * i) },
        { name: 'w_zp', dtype: 'int8', dims: [8], data: new Int8Array(8) },
        { name: 'bias', dtype: 'int32', dims: [8], data: Int32Array.from({ length: 8 }, (_, i) => (i - 4) * 3000) },
      ],
    }),
  },
  {
    // Two inputs at different parameters, requantized to the output's.
    name: 'QLinearConcat axis 1, inputs at different scales',
    lowered: 'QConcat from QLinearConcat',
    body: (dtype, qp, scalar) => ({
      nodes: [
        { op: 'QuantizeLinear', name: 'quantize_x2', inputs: ['x', 'x2_scale', 'x_zp'], outputs: ['xq2'] },
        {
          op: 'QLinearConcat', name: 'concat', domain: 'com.microsoft', attrs: { axis: 1 },
          inputs: ['y_scale', 'y_zp', 'xq', 'x_scale', 'x_zp', 'xq2', 'x2_scale', 'x_zp'], outputs: ['yq'],
        },
      ],
      inits: [scalar('x2_scale', 'float', 0.02)],
    }),
  },
  { name: 'QLinearSigmoid', lowered: 'QLookup from QLinearSigmoid', body: () => contrib('QLinearSigmoid') },
  { name: 'QLinearLeakyRelu alpha 0.1', lowered: 'QLookup from QLinearLeakyRelu', body: () => contrib('QLinearLeakyRelu', { alpha: { float: 0.1 } }) },
  {
    name: 'QLinearAveragePool 3x3 stride 2 pads 1',
    lowered: 'QAveragePool from QLinearAveragePool',
    body: () => contrib('QLinearAveragePool', { kernel_shape: [3, 3], strides: [2, 2], pads: [1, 1, 1, 1], count_include_pad: 0 }),
  },
  { name: 'QLinearGlobalAveragePool', lowered: 'from QLinearGlobalAveragePool', body: () => contrib('QLinearGlobalAveragePool', { channels_last: 0 }) },
  {
    // onnxruntime has no CPU kernel for QLinearReduceMean: it runs the
    // op's documented meaning, DequantizeLinear -> ReduceMean -> QuantizeLinear.
    name: 'QLinearReduceMean axes 2, 3',
    lowered: 'QReduceMean from QLinearReduceMean',
    body: () => contrib('QLinearReduceMean', { axes: [2, 3], keepdims: 1 }),
    ortBody: () => ({
      nodes: [
        { op: 'DequantizeLinear', name: 'dq', inputs: ['xq', 'x_scale', 'x_zp'], outputs: ['xf'] },
        { op: 'ReduceMean', name: 'mean', inputs: ['xf'], outputs: ['m'], attrs: { axes: [2, 3], keepdims: 1 } },
        { op: 'QuantizeLinear', name: 'q', inputs: ['m', 'y_scale', 'y_zp'], outputs: ['yq'] },
      ],
    }),
  },
  {
    // The MLPerf Tiny DS-CNN's global pooling: two ReduceMean(axes=[-1],
    // keepdims=0) between a DequantizeLinear and a QuantizeLinear.
    name: 'DequantizeLinear -> ReduceMean x 2 -> QuantizeLinear',
    lowered: 'QReduceMean from 2 ReduceMean node\\(s\\)',
    body: () => ({
      nodes: [
        { op: 'DequantizeLinear', name: 'dq', inputs: ['xq', 'x_scale', 'x_zp'], outputs: ['xf'] },
        { op: 'ReduceMean', name: 'mean_w', inputs: ['xf'], outputs: ['m1'], attrs: { axes: [-1], keepdims: 0 } },
        { op: 'ReduceMean', name: 'mean_h', inputs: ['m1'], outputs: ['m2'], attrs: { axes: [-1], keepdims: 0 } },
        { op: 'QuantizeLinear', name: 'q', inputs: ['m2', 'y_scale', 'y_zp'], outputs: ['yq'] },
      ],
    }),
  },
];

const seededInput = (seed, shape) => {
  const n = shape.reduce((a, b) => a * b, 1);
  return randomArray('float32', n, seed).map((v) => v * 8 - 4);
};

for (const c of CASES) {
  for (const dtype of c.dtypes ?? ['uint8', 'int8']) {
    test(`${c.name} (${dtype}): identical to onnxruntime-node, lowered to int8`, async () => {
      const shape = c.shape ?? X_SHAPE;
      const { bytes, yScale } = wrap(dtype, c.body, shape);
      const ortBytes = c.ortBody ? wrap(dtype, c.ortBody, shape).bytes : bytes;
      const session = await ort.InferenceSession.create(ortBytes, ORT_OPTIONS).catch((e) => e);
      const model = await load(bytes);
      try {
        assert.match(model.describeLowered(), new RegExp(c.lowered));
        assert.doesNotMatch(model.describeLowered(), /\[float\]/);
        assert.ok(!(session instanceof Error), `onnxruntime-node cannot run it: ${session.message}`);
        for (const seed of [0, 1, 2]) {
          const data = seededInput(seed, shape);
          const ours = (await model.run({ x: { data, dims: shape } })).y.data;
          const theirs = Object.values(await session.run({ x: new ort.Tensor('float32', data, shape) }))[0].data;
          assert.equal(ours.length, theirs.length);
          let worst = 0;
          for (let i = 0; i < ours.length; i++) worst = Math.max(worst, Math.round(Math.abs(ours[i] - theirs[i]) / yScale));
          assert.equal(worst, 0, `seed ${seed}: up to ${worst} output steps from onnxruntime`);
        }
      } finally {
        model.dispose();
      }
    });
  }
}

test('a contrib op that is still missing fails with the clear error', async () => {
  const { bytes } = wrap('uint8', () => contrib('QLinearNotAnOp'));
  await assert.rejects(load(bytes), /unsupported op QLinearNotAnOp in domain com\.microsoft/);
});

// onnxruntime's dynamic-quantization contrib ops, float32 in and out: the
// integer product is exact on both sides; the float rescale (one multiply by
// a_scale * b_scale[n], one add of the bias) can round differently only
// through how the two runtimes fold those products, so outputs agree to
// float32 rounding of the result (relative 1e-6 of its magnitude).
const MATMUL_SHAPE = [3, 16];
function floatMatmulModel(kind) {
  const f = (name, dims, data) => ({ name, dtype: 'float', dims, data: Float32Array.from(data) });
  const inits = [
    { name: 'w', dtype: 'int8', dims: [16, 8], data: codes(128, 11) },
    f('w_scale', [8], Array.from({ length: 8 }, (_, i) => 0.01 + 0.002 * i)),
    { name: 'w_zp', dtype: 'int8', dims: [8], data: new Int8Array(8) },
    f('bias', [8], Array.from({ length: 8 }, (_, i) => (i - 3) * 0.25)),
  ];
  const nodes = kind === 'DynamicQuantizeMatMul'
    ? [{ op: kind, name: 'dqmm', domain: 'com.microsoft', inputs: ['x', 'w', 'w_scale', 'w_zp', 'bias'], outputs: ['y'] }]
    : [
      { op: 'DynamicQuantizeLinear', name: 'dql', inputs: ['x'], outputs: ['xq', 'x_scale', 'x_zp'] },
      { op: kind, name: 'mmf', domain: 'com.microsoft', inputs: ['xq', 'w', 'x_scale', 'w_scale', 'x_zp', 'w_zp', 'bias'], outputs: ['y'] },
    ];
  return encodeModel({
    nodes, initializers: inits, opset: 13, extraOpsets: [['com.microsoft', 1]],
    inputs: [{ name: 'x', dtype: 'float', shape: MATMUL_SHAPE }], outputs: [{ name: 'y', dtype: 'float' }],
  });
}

for (const kind of ['MatMulIntegerToFloat', 'DynamicQuantizeMatMul']) {
  test(`${kind}: onnxruntime-node's result to float32 rounding`, async () => {
    const bytes = floatMatmulModel(kind);
    const session = await ort.InferenceSession.create(bytes, ORT_OPTIONS);
    const model = await load(bytes);
    try {
      for (const seed of [0, 1, 2]) {
        const data = seededInput(seed, MATMUL_SHAPE);
        const ours = (await model.run({ x: { data, dims: MATMUL_SHAPE } })).y.data;
        const theirs = (await session.run({ x: new ort.Tensor('float32', data, MATMUL_SHAPE) })).y.data;
        assert.equal(ours.length, theirs.length);
        for (let i = 0; i < ours.length; i++)
          assert.ok(Math.abs(ours[i] - theirs[i]) <= 1e-6 * Math.max(1, Math.abs(theirs[i])), `seed ${seed} [${i}]: ${ours[i]} vs ${theirs[i]}`);
      }
    } finally {
      model.dispose();
    }
  });
}
