// Threaded runs: load(model, {threads: 2}) runs the threaded build (Node has
// SharedArrayBuffer), says so in model.info, and gives results equal bit for
// bit to one thread's on every int8 and float model here (GEMM/conv output
// tiles split over threads never change a sum's order).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { existsSync } from 'node:fs';
import { load, threadsSupported, WasmqError } from '../../src/js/index.mjs';
import { randomInput } from '../../bench/common.mjs';
import { randomArray } from '../../src/js/random.mjs';
import { encodeModel } from '../models/qdq_builder.mjs';
import { MODELS, SHARED } from './helpers.mjs';
import { getThreadedCore } from '../../src/js/core.mjs';

const CASES = [
  ['synthetic/smallcnn_qdq.onnx', {}],
  ['synthetic/smallcnn_f32.onnx', {}],
  ['synthetic/matmul_256x256x256_qdq.onnx', {}],
  ['synthetic/matmul_256x256x256_qlinear.onnx', {}],
  ['synthetic/matmul_1x1024x1024_qdq_pertensor.onnx', {}],
  ['mnist-8/model.onnx', {}],
  ['mnist-8-dynamic-int8/model.onnx', {}],
  ['super-resolution-10/model.onnx', { input: [1, 1, 224, 224] }],
  // The shared int8 models: 1x1 convs of 7x7 and 14x14 maps split by column
  // tiles too, depthwise by rows (batch 2: shares across images).
  [path.join(SHARED, 'models-int8/mobilenetv2-12-int8/model.onnx'), { input: [1, 3, 224, 224] }],
  [path.join(SHARED, 'models-int8/mobilenetv2-12-int8/model.onnx'), { input: [2, 3, 224, 224] }],
  [path.join(SHARED, 'models-int8/mlperftiny-kws-dscnn-int8/model.onnx'), {}],
];

function feedsFor(model, inputShapes, seed) {
  const feeds = {};
  model.inputs.forEach((info, i) => {
    const dims = inputShapes[info.name] ?? info.shape;
    feeds[info.name] = { data: randomInput(info.dtype, dims, seed + 7919 * i), dims };
  });
  return feeds;
}

const sameBytes = (a, b) => Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(Buffer.from(b.buffer, b.byteOffset, b.byteLength));

test('Node can run the threaded build', () => {
  assert.equal(threadsSupported(), true);
});

for (const [rel, inputShapes] of CASES) {
  const file = path.isAbsolute(rel) ? rel : path.join(MODELS, rel);
  test(`${path.basename(path.dirname(file))}/${path.basename(file)}${Object.keys(inputShapes).length ? ` ${JSON.stringify(inputShapes)}` : ''}: 2 threads equal 1 thread bit for bit`, { skip: !existsSync(file) && 'model not in shared/' }, async () => {
    const one = await load(file, { inputShapes, threads: 1 });
    const two = await load(file, { inputShapes, threads: 2 });
    try {
      // Both on the same int8 kernels (tests/node/kernels.test.mjs checks which).
      const { kernels: k1, relaxedRefused: r1, ...info1 } = one.info;
      const { kernels: k2, relaxedRefused: r2, ...info2 } = two.info;
      assert.deepEqual(info1, { build: 'simd', threads: 1, requestedThreads: 1, lowering: true, partition: 'int+fp' });
      assert.deepEqual(info2, { build: 'simd-threads', threads: 2, requestedThreads: 2, lowering: true, partition: 'int+fp' });
      assert.deepEqual([k2, r2], [k1, r1]);
      for (const seed of [3, 4]) {
        const feeds = feedsFor(one, inputShapes, seed);
        const a = await one.run(feeds);
        const b = await two.run(feeds);
        for (const name of Object.keys(a)) {
          assert.deepEqual(b[name].dims, a[name].dims);
          assert.ok(sameBytes(a[name].data, b[name].data), `${name} differs with 2 threads (seed ${seed})`);
        }
      }
    } finally {
      one.dispose();
      two.dispose();
    }
  });
}

test('threads must be a positive integer', async () => {
  const file = path.join(MODELS, 'synthetic', 'smallcnn_qdq.onnx');
  for (const threads of [0, -1, 1.5, '2']) {
    await assert.rejects(load(file, { threads }), (e) => e instanceof WasmqError && /threads must be an integer >= 1/.test(e.message));
  }
});

test('a disposed threaded model gives its workers back: later models get threads again', async () => {
  const file = path.join(MODELS, 'synthetic', 'smallcnn_qdq.onnx');
  for (let i = 0; i < 3; i++) {
    const m = await load(file, { threads: 2 });
    assert.equal(m.info.threads, 2, `model ${i}`);
    m.dispose();
  }
});

// A pool worker that allocates can grow the shared memory; the glue then
// refreshes only that worker's views, not the ones this thread copies inputs
// and results through. Growing the memory from here without the glue stands in
// for that: the next, larger run stages its input beyond the old end.
test('memory grown outside the calling thread: inputs and results beyond the old end still go through', { skip: !existsSync(path.join(SHARED, 'models-int8/mobilenetv2-12-int8/model.onnx')) && 'model not in shared/' }, async () => {
  const file = path.join(SHARED, 'models-int8/mobilenetv2-12-int8/model.onnx');
  const one = await load(file, { threads: 1 });
  const two = await load(file, { threads: 2 });
  try {
    const core = await getThreadedCore(2);
    await two.run(feedsFor(two, { input: [1, 3, 224, 224] }, 5));
    const oldEnd = core.HEAPU8.length;
    core.wasmMemory.grow((64 << 20) / 65536);
    assert.equal(core.HEAPU8.length, oldEnd, 'the glue refreshed its views itself: this test no longer reproduces a worker growth');
    const feeds = feedsFor(one, { input: [12, 3, 224, 224] }, 6);
    const a = await one.run(feeds);
    const b = await two.run(feeds);
    for (const name of Object.keys(a)) assert.ok(sameBytes(a[name].data, b[name].data), `${name} differs after the growth`);
  } finally {
    one.dispose();
    two.dispose();
  }
});

// QAdd / QMul whose operands are one run (same shape, or a broadcast scalar)
// are cut into pieces across threads from 8192 codes on: 65536 codes here
// (16 pieces), then 4096 (one thread). uint8 and int8 codes.
test('QAdd (same shape) and QMul (scalar operand) on 2 threads equal 1 thread bit for bit', async () => {
  for (const [dtype, Data, zp] of [['uint8', Uint8Array, 128], ['int8', Int8Array, -3]]) {
    for (const shape of [[1, 16, 64, 64], [1, 4, 32, 32]]) {
      const scalar = (name, ty, value) => ({ name, dtype: ty, dims: [], data: ty === 'float' ? Float32Array.of(value) : Data.of(value) });
      const bytes = encodeModel({
        nodes: [
          { op: 'QuantizeLinear', name: 'qa', inputs: ['x', 'a_scale', 'zp'], outputs: ['a'] },
          { op: 'QuantizeLinear', name: 'qb', inputs: ['x', 'b_scale', 'zp'], outputs: ['b'] },
          { op: 'QLinearAdd', name: 'add', domain: 'com.microsoft', inputs: ['a', 'a_scale', 'zp', 'b', 'b_scale', 'zp', 's_scale', 'zp'], outputs: ['s'] },
          { op: 'QLinearMul', name: 'mul', domain: 'com.microsoft', inputs: ['s', 's_scale', 'zp', 'c', 'c_scale', 'zp', 'y_scale', 'zp'], outputs: ['yq'] },
          { op: 'DequantizeLinear', name: 'dq', inputs: ['yq', 'y_scale', 'zp'], outputs: ['y'] },
        ],
        initializers: [
          scalar('a_scale', 'float', 0.03), scalar('b_scale', 'float', 0.05), scalar('s_scale', 'float', 0.07),
          scalar('c_scale', 'float', 0.01), scalar('y_scale', 'float', 0.09), scalar('zp', dtype, zp),
          scalar('c', dtype, zp + 90),
        ],
        opset: 13,
        extraOpsets: [['com.microsoft', 1]],
        inputs: [{ name: 'x', dtype: 'float', shape }],
        outputs: [{ name: 'y', dtype: 'float' }],
      });
      const one = await load(bytes, { threads: 1 });
      const two = await load(bytes, { threads: 2 });
      try {
        assert.match(two.describeLowered(), /QAdd/);
        assert.match(two.describeLowered(), /QMul/);
        const n = shape.reduce((a, b) => a * b, 1);
        const feeds = { x: { data: randomArray('float32', n, 11).map((v) => v * 12 - 6), dims: shape } };
        const a = await one.run(feeds);
        const b = await two.run(feeds);
        assert.ok(sameBytes(a.y.data, b.y.data), `${dtype} ${shape}: differs with 2 threads`);
      } finally {
        one.dispose();
        two.dispose();
      }
    }
  }
});
