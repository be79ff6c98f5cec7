// load() options that choose how quantized graphs run: lowering on (int8
// ops), off (float Q/DQ op by op, the reference), and strict int8.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { load, WasmqError } from '../../src/js/index.mjs';
import { MODELS, REPO } from './helpers.mjs';
import { randomArray } from '../../src/js/random.mjs';

const smallcnn = path.join(MODELS, 'synthetic/smallcnn_qdq.onnx');

test('lowering on runs int8 ops; off runs Q/DQ op by op; outputs agree within one step', async () => {
  const lowered = await load(smallcnn);
  const reference = await load(smallcnn, { lowering: false });
  try {
    assert.match(lowered.describeLowered(), /wasmq\.QConv/);
    assert.doesNotMatch(reference.describeLowered(), /wasmq\.QConv/);
    const input = lowered.inputs[0];
    const count = input.shape.reduce((a, b) => a * b, 1);
    const feeds = { [input.name]: { data: randomArray(input.dtype, count, 3), dims: input.shape } };
    const name = lowered.outputs[0].name;
    const got = (await lowered.run(feeds))[name].data;
    const want = (await reference.run(feeds))[name].data;
    // The graph output is DequantizeLinear(scale 0.00669779, zp 106): one step.
    const step = 0.00669779;
    let worst = 0;
    for (let i = 0; i < want.length; i++) worst = Math.max(worst, Math.abs(got[i] - want[i]));
    assert.ok(worst <= step * 1.0001, `max diff ${worst} exceeds one step ${step}`);
  } finally {
    lowered.dispose();
    reference.dispose();
  }
});

test('strictInt8 rejects a quantized node that cannot run in int8, naming it', async () => {
  const edge = path.join(REPO, 'tests/models/edge_qdq.onnx');
  await assert.rejects(load(edge, { strictInt8: true }), (err) => {
    assert.ok(err instanceof WasmqError);
    assert.equal(err.code, 'WQ_ERR_UNSUPPORTED');
    // found before the lowering rewrites anything: its result feeds the Softmax, not a QuantizeLinear
    assert.equal(err.node, 'Conv_c1');
    assert.match(err.message, /\[OUTPUT_NOT_QUANTIZED\]/);
    return true;
  });
  (await load(edge)).dispose(); // without strict mode it loads, the node stays float
});
