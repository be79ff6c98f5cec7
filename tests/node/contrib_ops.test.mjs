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
function wrap(dtype, body, shape = X_SHAPE, opset = 13) {
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
    nodes, initializers, opset, extraOpsets: [['com.microsoft', 1]],
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
    // ONNX QLinearMatMul with per-column (vector) b_scale / b_zero_point:
    // b [K, N] int8, one scale and zero point per column n (nonzero zero
    // points, so the per-column correction is exercised). onnxruntime runs
    // int8 a from opset 21 on (before: uint8 a only).
    name: 'QLinearMatMul, per-column b_scale and b_zero_point',
    shape: [3, 16],
    opset: { uint8: 13, int8: 21 },
    lowered: 'QGemm from QLinearMatMul',
    body: () => ({
      nodes: [{
        op: 'QLinearMatMul', name: 'qmatmul',
        inputs: ['xq', 'x_scale', 'x_zp', 'w', 'w_scale', 'w_zp', 'y_scale', 'y_zp'], outputs: ['yq'],
      }],
      inits: [
        { name: 'w', dtype: 'int8', dims: [16, 8], data: codes(128, 5) },
        { name: 'w_scale', dtype: 'float', dims: [8], data: Float32Array.from({ length: 8 }, (_, i) => 0.004 + 0.001 * i) },
        { name: 'w_zp', dtype: 'int8', dims: [8], data: Int8Array.from({ length: 8 }, (_, i) => (i - 4) * 3) },
      ],
    }),
  },
  {
    // The same with uint8 b (onnxruntime's U8U8 form): zero points around 128.
    name: 'QLinearMatMul, uint8 b, per-column b_scale and b_zero_point',
    dtypes: ['uint8'],
    shape: [3, 16],
    lowered: 'QGemm from QLinearMatMul',
    body: () => ({
      nodes: [{
        op: 'QLinearMatMul', name: 'qmatmul',
        inputs: ['xq', 'x_scale', 'x_zp', 'w', 'w_scale', 'w_zp', 'y_scale', 'y_zp'], outputs: ['yq'],
      }],
      inits: [
        { name: 'w', dtype: 'uint8', dims: [16, 8], data: Uint8Array.from(codes(128, 9), (v) => v + 128) },
        { name: 'w_scale', dtype: 'float', dims: [8], data: Float32Array.from({ length: 8 }, (_, i) => 0.003 + 0.0015 * i) },
        { name: 'w_zp', dtype: 'uint8', dims: [8], data: Uint8Array.from({ length: 8 }, (_, i) => 120 + 2 * i) },
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
      const opset = c.opset?.[dtype] ?? 13;
      const { bytes, yScale } = wrap(dtype, c.body, shape, opset);
      const ortBytes = c.ortBody ? wrap(dtype, c.ortBody, shape, opset).bytes : bytes;
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

// QLinearSoftmax by its documented formula, Y = quantize(Softmax(dequantize(X))),
// which is what DequantizeLinear -> Softmax -> QuantizeLinear computes: our
// op gives the same codes as that chain run op by op (lowering off). Against
// onnxruntime-node within 1 output step on >= 99.9% of elements: its kernel
// is a fixed-point approximation of the formula (exp from a 256-entry float
// table shifted by a bias, float sums, y_scale replaced by floor(1/y_scale)
// as a multiplier), so values near a rounding boundary may land one step
// apart. Output parameters as onnxruntime's quantizer writes for Softmax:
// scale 1/256, zero point 0 (uint8) or -128 (int8).
const SOFTMAX_QP = { uint8: { data: Uint8Array, zp: 0 }, int8: { data: Int8Array, zp: -128 } };
function softmaxModel(dtype, attrs, opByOp) {
  const qp = SOFTMAX_QP[dtype];
  const q = (v) => qp.data.of(v);
  const body = opByOp
    ? [
      { op: 'DequantizeLinear', name: 'dq', inputs: ['xq', 'x_scale', 'x_zp'], outputs: ['xf'] },
      { op: 'Softmax', name: 'softmax', inputs: ['xf'], outputs: ['sf'], attrs: { axis: attrs.axis } },
      { op: 'QuantizeLinear', name: 'q', inputs: ['sf', 'y_scale', 'y_zp'], outputs: ['yq'] },
    ]
    : [{ op: 'QLinearSoftmax', name: 'qsoftmax', domain: 'com.microsoft', attrs, inputs: ['xq', 'x_scale', 'x_zp', 'y_scale', 'y_zp'], outputs: ['yq'] }];
  return encodeModel({
    nodes: [
      { op: 'QuantizeLinear', name: 'quantize_x', inputs: ['x', 'x_scale', 'x_zp'], outputs: ['xq'] },
      ...body,
      { op: 'DequantizeLinear', name: 'dequantize_y', inputs: ['yq', 'y_scale', 'y_zp'], outputs: ['y'] },
    ],
    initializers: [
      { name: 'x_scale', dtype: 'float', dims: [], data: Float32Array.of(8 / 255) },
      { name: 'x_zp', dtype, dims: [], data: q(dtype === 'uint8' ? 128 : 0) },
      { name: 'y_scale', dtype: 'float', dims: [], data: Float32Array.of(1 / 256) },
      { name: 'y_zp', dtype, dims: [], data: q(qp.zp) },
    ],
    // The op-by-op chain's Softmax takes the axis rule of the opset attribute.
    opset: opByOp ? attrs.opset : 13,
    extraOpsets: [['com.microsoft', 1]],
    inputs: [{ name: 'x', dtype: 'float', shape: X_SHAPE }],
    outputs: [{ name: 'y', dtype: 'float' }],
  });
}

for (const attrs of [{ opset: 13, axis: -1 }, { opset: 13, axis: 1 }, { opset: 12, axis: 2 }]) {
  for (const dtype of ['uint8', 'int8']) {
    test(`QLinearSoftmax opset ${attrs.opset} axis ${attrs.axis} (${dtype}): the op-by-op chain's codes, onnxruntime-node within 1 step`, async () => {
      const bytes = softmaxModel(dtype, attrs, false);
      const session = await ort.InferenceSession.create(bytes, ORT_OPTIONS);
      const model = await load(bytes);
      const chain = await load(softmaxModel(dtype, attrs, true), { lowering: false });
      try {
        assert.match(model.describeLowered(), /QLinearSoftmax runs as is/);
        assert.doesNotMatch(model.describeLowered(), /\[float\]/);
        let total = 0, off = 0;
        for (const seed of [0, 1, 2]) {
          const data = seededInput(seed, X_SHAPE);
          const ours = (await model.run({ x: { data, dims: X_SHAPE } })).y.data;
          const opByOp = (await chain.run({ x: { data, dims: X_SHAPE } })).y.data;
          assert.deepEqual(ours, opByOp, `seed ${seed}: differs from DequantizeLinear -> Softmax -> QuantizeLinear`);
          const theirs = (await session.run({ x: new ort.Tensor('float32', data, X_SHAPE) })).y.data;
          for (let i = 0; i < ours.length; i++) {
            const steps = Math.round(Math.abs(ours[i] - theirs[i]) * 256);
            assert.ok(steps <= 1, `seed ${seed} [${i}]: ${steps} steps from onnxruntime`);
            total++;
            off += steps;
          }
        }
        assert.ok(off <= total * 0.001, `${off} of ${total} elements one step from onnxruntime`);
      } finally {
        model.dispose();
        chain.dispose();
      }
    });
  }
}

// QLinearSoftmax after a channels-last int8 conv, normalising over the
// channels (axis 1 of 4-D data): the layout pass hands it channels-first
// codes (a ToNCHW before it), and the lowered graph gives the codes of the
// graph run op by op.
test('QLinearSoftmax axis 1 after an int8 conv: a ToNCHW before it, the op-by-op codes', async () => {
  const f = (name, v) => ({ name, dtype: 'float', dims: [], data: Float32Array.of(v) });
  const u = (name, v) => ({ name, dtype: 'uint8', dims: [], data: Uint8Array.of(v) });
  const bytes = encodeModel({
    nodes: [
      { op: 'QuantizeLinear', name: 'q', inputs: ['x', 'xs', 'xz'], outputs: ['xq'] },
      { op: 'QLinearConv', name: 'conv', inputs: ['xq', 'xs', 'xz', 'w', 'ws', 'wz', 'cs', 'cz'], outputs: ['cq'], attrs: { pads: [1, 1, 1, 1] } },
      { op: 'QLinearSoftmax', name: 'sm', domain: 'com.microsoft', inputs: ['cq', 'cs', 'cz', 'ys', 'yz'], outputs: ['yq'], attrs: { opset: 13, axis: 1 } },
      { op: 'DequantizeLinear', name: 'dq', inputs: ['yq', 'ys', 'yz'], outputs: ['y'] },
    ],
    initializers: [
      f('xs', 8 / 255), u('xz', 128),
      { name: 'w', dtype: 'int8', dims: [8, 4, 3, 3], data: codes(8 * 4 * 9, 3) }, f('ws', 0.01),
      { name: 'wz', dtype: 'int8', dims: [], data: Int8Array.of(0) },
      f('cs', 0.05), u('cz', 128), f('ys', 1 / 256), u('yz', 0),
    ],
    opset: 13, extraOpsets: [['com.microsoft', 1]],
    inputs: [{ name: 'x', dtype: 'float', shape: X_SHAPE }], outputs: [{ name: 'y', dtype: 'float' }],
  });
  const model = await load(bytes);
  const opByOp = await load(bytes, { lowering: false });
  try {
    const lowered = model.describeLowered();
    assert.match(lowered, /wasmq\.QConv[\s\S]*wasmq\.ToNCHW[\s\S]*com\.microsoft\.QLinearSoftmax/);
    assert.doesNotMatch(lowered, /\[float\]/);
    for (const seed of [0, 1]) {
      const data = seededInput(seed, X_SHAPE);
      const ours = (await model.run({ x: { data, dims: X_SHAPE } })).y.data;
      const ref = (await opByOp.run({ x: { data, dims: X_SHAPE } })).y.data;
      assert.deepEqual(ours, ref, `seed ${seed}`);
    }
  } finally {
    model.dispose();
    opByOp.dispose();
  }
});
