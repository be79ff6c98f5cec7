// Softmax against onnxruntime-node on models built here: rows of every
// length 1..19 (the SIMD path's full vectors and partial last vector), an
// attention-sized [2, 25, 25], values far apart (underflow to 0), -Inf,
// +Inf and NaN entries, and a non-last axis (the strided path).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import ort from 'onnxruntime-node';
import { buildModel } from './helpers.mjs';
import { mulberry32 } from '../../src/js/random.mjs';
import { load } from '../../src/js/index.mjs';

const random = (n, seed, scale) => {
  const r = mulberry32(seed);
  return Float32Array.from({ length: n }, () => (r() / 2 ** 32 * 2 - 1) * scale);
};

async function compare(dims, axis, data) {
  const bytes = buildModel({
    nodes: [{ op: 'Softmax', name: 'sm', inputs: ['x'], outputs: ['y'], attrs: { axis } }],
    inputs: [{ name: 'x', dtype: 'float32', shape: dims }],
    outputs: [{ name: 'y', dtype: 'float32', shape: dims }],
  });
  const ours = await load(bytes);
  const got = (await ours.run({ x: { data, dims } })).y.data;
  ours.dispose();
  const session = await ort.InferenceSession.create(bytes);
  const want = (await session.run({ x: new ort.Tensor('float32', data, dims) })).y.data;
  let worst = 0;
  for (let i = 0; i < want.length; i++) {
    if (Number.isNaN(want[i]) || Number.isNaN(got[i])) {
      assert.ok(Number.isNaN(want[i]) && Number.isNaN(got[i]), `${dims} axis ${axis} [${i}]: ours ${got[i]}, onnxruntime ${want[i]}`);
      continue;
    }
    worst = Math.max(worst, Math.abs(got[i] - want[i]) / (1e-30 + Math.abs(want[i])));
    // relative 1e-6 (a few float ulp: both sides use their own e^x), values
    // near the smallest normal float within 1e-37, and an exact 0 where
    // onnxruntime's e^x underflows
    const close = want[i] === 0 ? got[i] === 0 : Math.abs(got[i] - want[i]) <= 1e-6 * Math.abs(want[i]) + 1e-37;
    assert.ok(close, `${dims} axis ${axis} [${i}]: ours ${got[i]}, onnxruntime ${want[i]}`);
  }
  return worst;
}

test('Softmax over the last axis: every row length 1..19, [2,25,25], within 1e-6 relative of onnxruntime', async () => {
  let worst = 0;
  for (let n = 1; n <= 19; n++) worst = Math.max(worst, await compare([3, n], -1, random(3 * n, n, 8)));
  worst = Math.max(worst, await compare([2, 25, 25], 2, random(1250, 99, 30)));
  console.log(`# max relative difference ${worst.toExponential(2)}`);
});

test('Softmax: far-apart values underflow to 0, -Inf gives 0, +Inf and NaN rows give NaN like onnxruntime', async () => {
  const rows = [
    [0, -50, -85, -88, -100, -200, 1, 2, 3],
    [-Infinity, 0, 1, -Infinity, 2, 3, 4, 5, -Infinity],
    [1e30, -1e30, 0, 1, 2, 3, 4, 5, 6],
    [0, 1, 2, Infinity, 4, 5, 6, 7, 8],
    [0, 1, 2, 3, NaN, 5, 6, 7, 8],
    [NaN, 1, 2, 3, 4, 5, 6, 7, 8],
  ];
  await compare([rows.length, 9], 1, Float32Array.from(rows.flat()));
});

test('Softmax over a non-last axis (strided) within 1e-6 relative of onnxruntime', async () => {
  await compare([2, 7, 5], 1, random(70, 5, 10));
});
