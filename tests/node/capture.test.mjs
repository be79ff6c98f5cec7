// run(feeds, {capture: true}) and compare(): every intermediate of the
// executed graph, dequantized and channels-first, and the per-node gap
// between a float model and its int8 (QDQ) twin.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { load, compare } from '../../src/js/index.mjs';
import { randomArray } from '../../src/js/random.mjs';
import { MODELS } from './helpers.mjs';

const FLOAT = path.join(MODELS, 'synthetic/smallcnn_f32.onnx');
const QDQ = path.join(MODELS, 'synthetic/smallcnn_qdq.onnx');
const feedsOf = (m) => ({ [m.inputs[0].name]: { data: randomArray('float32', 3 * 224 * 224, 0), dims: [1, 3, 224, 224] } });

const roundHalfEven = (x) => {
  const r = Math.round(x);
  return Math.abs(x % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r;
};

test('capture: every produced tensor, int8 codes dequantized with their qparams, channels-first', async () => {
  const q = await load(QDQ);
  try {
    const feeds = feedsOf(q);
    const plain = await q.run(feeds);
    const r = await q.run(feeds, { capture: true });
    assert.deepEqual(Object.keys(r), Object.keys(plain));
    for (const k of Object.keys(plain)) assert.deepEqual(r[k].data, plain[k].data, 'capturing changes no output');
    const { captured } = r;
    const { tensors, nodes } = q.graph();
    const produced = tensors.filter((t) => t.producer >= 0);
    assert.deepEqual(Object.keys(captured).sort(), produced.map((t) => t.name).sort());
    // The graph output as captured is the output itself.
    for (const k of Object.keys(plain)) assert.deepEqual(captured[k].data, plain[k].data);
    // The quantized input: (clamp(round(x / s) + zp) - zp) * s, exactly.
    const xq = tensors.find((t) => nodes[t.producer]?.op.startsWith('QuantizeLinear'));
    const { scale: [s], zero_point: [zp] } = xq.qparams;
    const x = feeds[q.inputs[0].name].data;
    const want = Float32Array.from(x, (v) => (Math.min(255, Math.max(0, roundHalfEven(v / s) + zp)) - zp) * s);
    assert.deepEqual(captured[xq.name].data, want);
    // A channels-last tensor comes back channels-first: its NCHW twin equals it.
    const nhwc = Object.values(captured).find((t) => t.layout === 'NHWC' && t.dims[1] > 1);
    assert.ok(nhwc, 'a channels-last tensor was captured');
    assert.equal(nhwc.data.length, nhwc.dims.reduce((a, b) => a * b, 1));
    // The input's layout transition is fused into its QuantizeLinear: the
    // codes it wrote channels-last read back channels-first as above.
    assert.equal(nodes[xq.producer].op, 'QuantizeLinear');
    assert.equal(captured[xq.name].layout, 'NHWC');
    // Capture is off again afterwards: a later plain run has no `captured`.
    assert.equal((await q.run(feeds)).captured, undefined);
  } finally {
    q.dispose();
  }
});

test('compare: per-node gap of smallcnn int8 against float (SNR > 20 dB, cosine > 0.99, in execution order)', async () => {
  const f = await load(FLOAT);
  const q = await load(QDQ);
  try {
    const rows = await compare(f, q, feedsOf(f));
    const convs = rows.filter((r) => r.op.startsWith('QConv'));
    assert.equal(convs.length, 3);
    for (const r of rows) {
      assert.ok(r.snr > 20 && r.cosine > 0.99, `${r.node}: SNR ${r.snr.toFixed(1)} dB, cosine ${r.cosine}`);
      assert.ok(r.maxAbs > 0 && r.mse > 0, `${r.node}: int8 is not bit-equal to float`);
    }
    assert.deepEqual(convs.map((r) => r.floatTensor), ['r1', 'r2', 'r3']);
    assert.equal(rows.at(-1).floatTensor, 'Y');
    console.log(rows.map((r) => `${r.node} (${r.op}) -> ${r.floatTensor}: SNR ${r.snr.toFixed(1)} dB`).join('; '));
  } finally {
    f.dispose();
    q.dispose();
  }
});
