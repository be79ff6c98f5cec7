// The npm package's API on the wasm build: load (path, bytes, ArrayBuffer),
// metadata, run against mnist-8's reference outputs, and every error path
// surfacing as a WasmqError with the right code.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { readFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import wasmq, { load, WasmqError } from '../../src/js/index.mjs';
import { MODELS, readDataSet, dataSetDirs, compareClose, argmax, buildModel } from './helpers.mjs';

const MNIST_DIR = path.join(MODELS, 'mnist-8');
const MNIST = path.join(MNIST_DIR, 'model.onnx');
const TOL = { rtol: 1e-3, atol: 1e-4 };

/** Resolves to the WasmqError `fn` throws or rejects with (fails otherwise). */
async function caught(fn) {
  try {
    await fn();
  } catch (e) {
    assert.ok(e instanceof WasmqError, `expected a WasmqError, got ${e?.name}: ${e?.message}`);
    assert.ok(e instanceof Error);
    return e;
  }
  assert.fail('expected a WasmqError, nothing was thrown');
}

test('mnist-8: metadata, describe, and the three reference data sets', async () => {
  const model = await load(MNIST);
  try {
    assert.deepEqual(JSON.parse(JSON.stringify(model.inputs)), [{ name: 'Input3', dtype: 'float32', shape: [1, 1, 28, 28] }]);
    assert.deepEqual(JSON.parse(JSON.stringify(model.outputs)), [{ name: 'Plus214_Output_0', dtype: 'float32', shape: [1, 10] }]);
    const text = model.describe();
    assert.match(text, /Input3/);
    assert.match(text, /Plus214_Output_0/);
    assert.match(text, /Conv/);

    const expectedArgmax = [2, 0, 9];
    const sets = dataSetDirs(MNIST_DIR);
    assert.equal(sets.length, 3);
    for (const [k, dir] of sets.entries()) {
      const { inputs, outputs } = readDataSet(dir);
      const result = await model.run({ Input3: { data: inputs[0].data, dims: inputs[0].dims } });
      assert.deepEqual(Object.keys(result), ['Plus214_Output_0']);
      const out = result.Plus214_Output_0;
      assert.equal(out.dtype, 'float32');
      assert.ok(out.data instanceof Float32Array);
      assert.deepEqual(out.dims, [1, 10]);
      const cmp = compareClose(out.data, outputs[0].data, TOL);
      assert.ok(cmp.ok, `set ${k}: ${JSON.stringify(cmp.worst)} (max abs ${cmp.maxAbs})`);
      assert.equal(argmax(out.data), expectedArgmax[k]);
    }
  } finally {
    model.dispose();
  }
});

test('loading from bytes, an ArrayBuffer, a file: URL and the default export gives the same results', async () => {
  const bytes = readFileSync(MNIST);
  const { inputs } = readDataSet(path.join(MNIST_DIR, 'test_data_set_1'));
  const feed = { Input3: inputs[0].data }; // bare TypedArray: dims from the static declaration
  const runOnce = async (source) => {
    const m = await source();
    try {
      return (await m.run(feed)).Plus214_Output_0.data;
    } finally {
      m.dispose();
    }
  };
  const fromPath = await runOnce(() => load(MNIST));
  const fromBuffer = await runOnce(() => load(bytes));
  const fromPlain = await runOnce(() => load(new Uint8Array(bytes)));
  const copy = new ArrayBuffer(bytes.byteLength);
  new Uint8Array(copy).set(bytes);
  const fromArrayBuffer = await runOnce(() => load(copy));
  const fromUrl = await runOnce(() => load(pathToFileURL(MNIST)));
  const fromDefault = await runOnce(() => wasmq.load(MNIST));
  for (const other of [fromBuffer, fromPlain, fromArrayBuffer, fromUrl, fromDefault]) {
    assert.deepEqual(Array.from(other), Array.from(fromPath));
  }
  assert.equal(argmax(fromPath), 0);
});

test('feeds are validated before the core runs: names, dtypes, shapes, element counts', async () => {
  const model = await load(MNIST);
  try {
    const good = new Float32Array(784);
    let e = await caught(() => model.run({ Input4: { data: good, dims: [1, 1, 28, 28] } }));
    assert.equal(e.code, 'WQ_ERR_INVALID_ARG');
    assert.match(e.message, /unknown input 'Input4' \(model inputs: Input3\)/);

    e = await caught(() => model.run({}));
    assert.equal(e.code, 'WQ_ERR_INVALID_ARG');
    assert.match(e.message, /missing input 'Input3'/);

    e = await caught(() => model.run({ Input3: { data: new Float64Array(784), dims: [1, 1, 28, 28] } }));
    assert.equal(e.code, 'WQ_ERR_SHAPE');
    assert.match(e.message, /needs a Float32Array, got Float64Array/);

    e = await caught(() => model.run({ Input3: { data: new Int32Array(784), dims: [1, 1, 28, 28] } }));
    assert.equal(e.code, 'WQ_ERR_SHAPE');

    e = await caught(() => model.run({ Input3: { data: new Float32Array(28 * 27), dims: [1, 1, 28, 27] } }));
    assert.equal(e.code, 'WQ_ERR_SHAPE');
    assert.match(e.message, /dims \[1,1,28,27\], model expects \[1,1,28,28\]/);

    e = await caught(() => model.run({ Input3: { data: good, dims: [1, 28, 28] } }));
    assert.equal(e.code, 'WQ_ERR_SHAPE');

    e = await caught(() => model.run({ Input3: { data: new Float32Array(783), dims: [1, 1, 28, 28] } }));
    assert.equal(e.code, 'WQ_ERR_SHAPE');
    assert.match(e.message, /need 784 elements, data has 783/);

    e = await caught(() => model.run({ Input3: { data: good, dims: [1, 1, 28, -28] } }));
    assert.equal(e.code, 'WQ_ERR_INVALID_ARG');

    e = await caught(() => model.run(null));
    assert.equal(e.code, 'WQ_ERR_INVALID_ARG');

    // The model still works after rejected feeds.
    const out = await model.run({ Input3: { data: good, dims: [1, 1, 28, 28] } });
    assert.equal(out.Plus214_Output_0.data.length, 10);
  } finally {
    model.dispose();
  }
});

test('use after dispose throws WQ_ERR_DISPOSED; dispose is idempotent', async () => {
  const model = await load(MNIST);
  assert.equal(model.disposed, false);
  model.dispose();
  model.dispose();
  assert.equal(model.disposed, true);
  let e = await caught(() => model.run({ Input3: new Float32Array(784) }));
  assert.equal(e.code, 'WQ_ERR_DISPOSED');
  e = await caught(() => model.describe());
  assert.equal(e.code, 'WQ_ERR_DISPOSED');
  // Metadata stays readable (plain JS data).
  assert.equal(model.inputs[0].name, 'Input3');
});

test('bad model sources fail with the right code', async () => {
  let e = await caught(() => load(new Uint8Array([0xde, 0xad, 0xbe, 0xef, 0x01, 0x02, 0x03])));
  assert.equal(e.code, 'WQ_ERR_PARSE');
  e = await caught(() => load(new Uint8Array(0)));
  assert.ok(['WQ_ERR_PARSE', 'WQ_ERR_INVALID_MODEL'].includes(e.code), e.code);
  // Truncated protobuf.
  e = await caught(async () => load(readFileSync(MNIST).subarray(0, 5000)));
  assert.equal(e.code, 'WQ_ERR_PARSE');
  e = await caught(() => load(path.join(MODELS, 'no-such-model.onnx')));
  assert.equal(e.code, 'WQ_ERR_IO');
  assert.match(e.message, /no such file/);
  e = await caught(() => load(42));
  assert.equal(e.code, 'WQ_ERR_INVALID_ARG');
  e = await caught(() => load(MNIST, { inputShapes: { Input3: [1, 1, 28, 'x'] } }));
  assert.equal(e.code, 'WQ_ERR_INVALID_ARG');
});

// Tiny models built in the test: Add over two symbolic 1-D inputs.
const addModel = (dtype) =>
  buildModel({
    nodes: [{ op: 'Add', name: 'the_add', inputs: ['a', 'b'], outputs: ['c'] }],
    inputs: [
      { name: 'a', dtype, shape: ['N'] },
      { name: 'b', dtype, shape: ['M'] },
    ],
    outputs: [{ name: 'c', dtype, shape: ['K'] }],
  });

test('symbolic dims: reported by name, bound per run, and core errors name the node', async () => {
  const model = await load(addModel('float32'));
  try {
    assert.deepEqual(model.inputs.map((t) => [t.name, t.dtype, [...t.shape]]), [
      ['a', 'float32', ['N']],
      ['b', 'float32', ['M']],
    ]);
    const ok = await model.run({ a: { data: new Float32Array([1, 2, 3]), dims: [3] }, b: { data: new Float32Array([10]), dims: [1] } });
    assert.deepEqual(ok.c.dims, [3]);
    assert.deepEqual(Array.from(ok.c.data), [11, 12, 13]);
    // 3 vs 2 cannot broadcast: the core's shape inference rejects it at the node.
    const e = await caught(() => model.run({ a: { data: new Float32Array(3), dims: [3] }, b: { data: new Float32Array(2), dims: [2] } }));
    assert.equal(e.code, 'WQ_ERR_SHAPE');
    assert.equal(e.node, 'the_add');
    assert.match(e.message, /the_add/);
    // Still usable afterwards.
    const again = await model.run({ a: { data: new Float32Array([1, 2]), dims: [2] }, b: { data: new Float32Array([5, 6]), dims: [2] } });
    assert.deepEqual(Array.from(again.c.data), [6, 8]);
  } finally {
    model.dispose();
  }
});

test('int64 inputs and outputs travel as BigInt64Array, exactly', async () => {
  const model = await load(addModel('int64'));
  try {
    const big = 2n ** 40n + 3n;
    const out = await model.run({
      a: { data: new BigInt64Array([big, -5n, 7n]), dims: [3] },
      b: { data: new BigInt64Array([1n, 2n, -(2n ** 50n)]), dims: [3] },
    });
    assert.ok(out.c.data instanceof BigInt64Array);
    assert.deepEqual(Array.from(out.c.data), [big + 1n, -3n, 7n - 2n ** 50n]);
    const e = await caught(() => model.run({ a: { data: new Int32Array(3), dims: [3] }, b: { data: new BigInt64Array(3), dims: [3] } }));
    assert.equal(e.code, 'WQ_ERR_SHAPE');
    assert.match(e.message, /needs a BigInt64Array, got Int32Array/);
  } finally {
    model.dispose();
  }
});

test('inputShapes binds symbolic dims at load; a symbolic dim must agree across inputs', async () => {
  const model = await load(addModel('float32'), { inputShapes: { a: [2], b: [2] } });
  try {
    const out = await model.run({ a: new Float32Array([1, 2]), b: new Float32Array([3, 4]) });
    assert.deepEqual(Array.from(out.c.data), [4, 6]);
  } finally {
    model.dispose();
  }
  const shared = await load(
    buildModel({
      nodes: [{ op: 'Add', name: 'same_n', inputs: ['a', 'b'], outputs: ['c'] }],
      inputs: [
        { name: 'a', dtype: 'float32', shape: ['N'] },
        { name: 'b', dtype: 'float32', shape: ['N'] },
      ],
      outputs: [{ name: 'c', dtype: 'float32', shape: ['N'] }],
    }),
  );
  try {
    const e = await caught(() => shared.run({ a: { data: new Float32Array(3), dims: [3] }, b: { data: new Float32Array(1), dims: [1] } }));
    assert.equal(e.code, 'WQ_ERR_SHAPE');
    assert.match(e.message, /'N'/);
  } finally {
    shared.dispose();
  }
});
