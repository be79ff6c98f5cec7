// Dynamic int8 (activations quantized at run time) in wasm against
// onnxruntime-web at graphOptimizationLevel 'disabled', which runs every op
// as written. onnxruntime-node is not the oracle here: on x86 without VNNI
// its MatMulInteger saturates u8 x s8 pair sums (shared/TOOLCHAIN.md).
//   - onnxruntime's three forms (DynamicQuantizeLinear -> MatMulInteger ->
//     Cast -> Mul -> Add -> Relu, MatMulIntegerToFloat, DynamicQuantizeMatMul)
//     with int8/uint8 weights, per-tensor and per-column parameters, non-zero
//     weight zero points and odd shapes: lowered to one QGemmToFloat, equal
//     bit for bit (DynamicQuantizeLinear and the integer product are exact,
//     and the rescale is the same float32 operations in the same order).
//   - mnist-8-dynamic-int8 (static QuantizeLinear + ConvInteger/MatMulInteger
//     + float rescale): equal bit for bit.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { readFileSync } from 'node:fs';
import { load } from '../../src/js/index.mjs';
import { randomArray } from '../../src/js/random.mjs';
import { encodeModel } from '../models/qdq_builder.mjs';
import { MODELS } from './helpers.mjs';

const ort = await import('onnxruntime-web');
ort.env.wasm.numThreads = 1;
ort.env.logLevel = 'error';
const DISABLED = { graphOptimizationLevel: 'disabled' };


/** One of onnxruntime's dynamic forms over x [..., K] and a [K, N] weight. */
function dynamicModel({ form, wdtype, perColumn, zp, shape, N }) {
  const K = shape[shape.length - 1];
  const Q = wdtype === 'int8' ? Int8Array : Uint8Array;
  const nS = perColumn ? N : 1;
  const f = (name, dims, data) => ({ name, dtype: 'float', dims, data: Float32Array.from(data) });
  const inits = [
    { name: 'w', dtype: wdtype, dims: [K, N], data: Q.from(randomArray(wdtype, K * N, 7)) },
    f('w_scale', perColumn ? [N] : [], Array.from({ length: nS }, (_, i) => 0.003 + 0.0007 * i)),
    { name: 'w_zp', dtype: wdtype, dims: perColumn ? [N] : [], data: Q.from({ length: nS }, (_, i) => (!zp ? 0 : wdtype === 'int8' ? (i % 5) - 2 : 120 + (i % 7))) },
    f('bias', [N], Array.from({ length: N }, (_, i) => (i - 3) * 0.125)),
  ];
  const dql = { op: 'DynamicQuantizeLinear', name: 'dql', inputs: ['x'], outputs: ['xq', 'x_scale', 'x_zp'] };
  const nodes = {
    integer: [
      dql,
      { op: 'MatMulInteger', name: 'mmi', inputs: ['xq', 'w', 'x_zp', 'w_zp'], outputs: ['acc'] },
      { op: 'Cast', name: 'cast', inputs: ['acc'], outputs: ['accf'], attrs: { to: 1 } },
      { op: 'Mul', name: 'scales', inputs: ['x_scale', 'w_scale'], outputs: ['s'] },
      { op: 'Mul', name: 'rescale', inputs: ['accf', 's'], outputs: ['mm'] },
      { op: 'Add', name: 'bias_add', inputs: ['mm', 'bias'], outputs: ['mb'] },
      { op: 'Relu', name: 'relu', inputs: ['mb'], outputs: ['y'] },
    ],
    toFloat: [dql, { op: 'MatMulIntegerToFloat', name: 'mmf', domain: 'com.microsoft', inputs: ['xq', 'w', 'x_scale', 'w_scale', 'x_zp', 'w_zp', 'bias'], outputs: ['y'] }],
    fused: [{ op: 'DynamicQuantizeMatMul', name: 'dqmm', domain: 'com.microsoft', inputs: ['x', 'w', 'w_scale', 'w_zp', 'bias'], outputs: ['y'] }],
  }[form];
  return encodeModel({ nodes, initializers: inits, opset: 13, extraOpsets: [['com.microsoft', 1]], inputs: [{ name: 'x', dtype: 'float', shape }], outputs: [{ name: 'y', dtype: 'float' }] });
}

function firstDifference(ours, theirs) {
  assert.equal(ours.length, theirs.length);
  for (let i = 0; i < ours.length; i++) if (!Object.is(ours[i], theirs[i])) return `[${i}] ${ours[i]} vs ${theirs[i]}`;
  return null;
}

// Odd shapes: K 37 (no whole SIMD blocks), N 13 (a partial column tile),
// 5 rows (a partial row panel), a 3-D x, and one row (the GEMV).
const SHAPES = [[5, 37], [2, 3, 37], [1, 64]];

for (const form of ['integer', 'toFloat', 'fused']) {
  for (const wdtype of ['int8', 'uint8']) {
    for (const perColumn of [true, false]) {
      test(`${form}, ${wdtype} weights ${perColumn ? 'per column' : 'per tensor'}: one QGemmToFloat, bit-exact vs onnxruntime-web`, async () => {
        for (const [s, shape] of SHAPES.entries()) {
          const bytes = dynamicModel({ form, wdtype, perColumn, zp: s !== 1, shape, N: s === 2 ? 40 : 13 });
          const session = await ort.InferenceSession.create(bytes, DISABLED);
          const model = await load(bytes);
          try {
            const lowered = model.describeLowered();
            assert.match(lowered, /QGemmToFloat/);
            assert.equal(lowered.match(/^\s*\[[^\]]+\]/gm).length, 1, lowered); // nothing else left
            const n = shape.reduce((a, b) => a * b, 1);
            // around 0; all positive (zero point 0); all negative (zero point 255)
            for (const [lo, span] of [[-1.5, 3], [0.25, 2], [-4, 3]]) {
              const data = Float32Array.from(randomArray('float32', n, s + 10), (v) => lo + span * v);
              const ours = (await model.run({ x: { data, dims: shape } })).y.data;
              const theirs = (await session.run({ x: new ort.Tensor('float32', data, shape) })).y.data;
              assert.equal(firstDifference(ours, theirs), null, `shape [${shape}] inputs from ${lo}`);
            }
          } finally {
            model.dispose();
            await session.release();
          }
        }
      });
    }
  }
}

test('a non-finite input is refused naming the node, not quantized', async () => {
  const model = await load(dynamicModel({ form: 'integer', wdtype: 'int8', perColumn: true, zp: true, shape: [2, 37], N: 13 }));
  try {
    const data = new Float32Array(74).fill(0.5);
    data[3] = Infinity;
    await assert.rejects(model.run({ x: { data, dims: [2, 37] } }), /mmi.*unusable|unusable.*mmi/s);
  } finally {
    model.dispose();
  }
});

test('mnist-8-dynamic-int8: int8 in the SIMD kernels, bit-exact vs onnxruntime-web', async () => {
  const bytes = readFileSync(path.join(MODELS, 'mnist-8-dynamic-int8/model.onnx'));
  const session = await ort.InferenceSession.create(bytes, DISABLED);
  const model = await load(bytes);
  try {
    assert.doesNotMatch(model.describeLowered(), /\[float\] (ConvInteger|MatMulInteger)/);
    for (const seed of [0, 1, 2]) {
      const data = Float32Array.from(randomArray('float32', 784, seed), (v) => 255 * v);
      const ours = (await model.run({ Input3: { data, dims: [1, 1, 28, 28] } })).Plus214_Output_0.data;
      const theirs = (await session.run({ Input3: new ort.Tensor('float32', data, [1, 1, 28, 28]) })).Plus214_Output_0.data;
      assert.equal(firstDifference(ours, theirs), null, `seed ${seed}`);
    }
  } finally {
    model.dispose();
    await session.release();
  }
});
