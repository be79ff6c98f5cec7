// Activations between a DequantizeLinear and a QuantizeLinear run as one
// 256-entry int8 lookup (QLookup): the float function evaluated on every
// code at load. Small QDQ models written by the test-side ONNX writer, for
// uint8 and int8, against onnxruntime-node on seeded inputs.
//
// Tolerance: the table is exact to our float32 function, but onnxruntime
// evaluates exp/erf/tanh with its own (vectorized) float32 approximations;
// a code whose float result lands within an ulp of a rounding boundary of
// the output scale can then quantize one step apart. So: at most 1 output
// step, on at most 0.1% of the elements.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { load } from '../../src/js/index.mjs';
import { randomArray } from '../../src/js/random.mjs';
import { encodeModel } from '../models/qdq_builder.mjs';

const ort = createRequire(import.meta.url)('onnxruntime-node');
const ORT_OPTIONS = { logSeverityLevel: 3, extra: { session: { x64quantprecision: '1' } } };
const SHAPE = [1, 8, 16, 16];

const ACTIVATIONS = [
  { op: 'Elu', attrs: { alpha: { float: 0.7 } }, opset: 13 },
  { op: 'Softplus', opset: 13 },
  { op: 'Gelu', opset: 20 },
  { op: 'Gelu', attrs: { approximate: 'tanh' }, opset: 20 },
  { op: 'LeakyRelu', attrs: { alpha: { float: 0.1 } }, opset: 13 },
  { op: 'HardSwish', opset: 14 },
];

function model(act, dtype) {
  const Q = dtype === 'uint8' ? Uint8Array : Int8Array;
  const s = (name, v) => ({ name, dtype: 'float', dims: [], data: Float32Array.of(v) });
  const z = (name, v) => ({ name, dtype, dims: [], data: Q.of(v) });
  return encodeModel({
    opset: act.opset,
    nodes: [
      { op: 'QuantizeLinear', name: 'q_x', inputs: ['x', 'x_s', 'x_z'], outputs: ['xq'] },
      { op: 'DequantizeLinear', name: 'dq_x', inputs: ['xq', 'x_s', 'x_z'], outputs: ['xf'] },
      { op: act.op, name: 'act', inputs: ['xf'], outputs: ['yf'], attrs: act.attrs ?? {} },
      { op: 'QuantizeLinear', name: 'q_y', inputs: ['yf', 'y_s', 'y_z'], outputs: ['yq'] },
      { op: 'DequantizeLinear', name: 'dq_y', inputs: ['yq', 'y_s', 'y_z'], outputs: ['y'] },
    ],
    initializers: [
      s('x_s', 10 / 255), z('x_z', dtype === 'uint8' ? 140 : 12),
      s('y_s', 6 / 255), z('y_z', dtype === 'uint8' ? 60 : -68),
    ],
    inputs: [{ name: 'x', dtype: 'float', shape: SHAPE }],
    outputs: [{ name: 'y', dtype: 'float' }],
  });
}

for (const act of ACTIVATIONS) {
  for (const dtype of ['uint8', 'int8']) {
    const label = `${act.op}${act.attrs ? ' ' + JSON.stringify(act.attrs) : ''} (${dtype})`;
    test(`${label}: one int8 lookup, within 1 step of onnxruntime-node on >= 99.9%`, async () => {
      const bytes = model(act, dtype);
      const m = await load(bytes);
      const session = await ort.InferenceSession.create(bytes, ORT_OPTIONS);
      try {
        const text = m.describeLowered();
        assert.match(text, new RegExp(`QLookup from ${act.op}`));
        assert.doesNotMatch(text, /\[float\]/);
        const n = SHAPE.reduce((a, b) => a * b, 1);
        let off = 0;
        for (const seed of [0, 1]) {
          const data = randomArray('float32', n, seed).map((v) => v * 10 - 5);
          const ours = (await m.run({ x: { data, dims: SHAPE } })).y.data;
          const theirs = (await session.run({ x: new ort.Tensor('float32', data, SHAPE) })).y.data;
          for (let i = 0; i < n; i++) {
            const steps = Math.round(Math.abs(ours[i] - theirs[i]) / (6 / 255));
            assert.ok(steps <= 1, `seed ${seed} element ${i}: ${steps} steps from onnxruntime`);
            off += steps;
          }
        }
        assert.ok(off <= 0.001 * 2 * n, `${off} of ${2 * n} elements one step off`);
      } finally {
        m.dispose();
      }
    });
  }
}
