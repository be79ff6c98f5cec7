// load(model, {maxMemoryBytes}) (issue #12 item 5): under the limit a model
// runs bit-identically to an unlimited load; a load-time plan over it fails
// the load, a run over it (larger symbolic input shapes) fails the run, both
// with WQ_ERR_OUT_OF_MEMORY and a message naming the bytes needed and the
// limit, and the model and the package stay usable. The native CLI's
// `run --max-memory BYTES` applies the same limit.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { load, threadsSupported, WasmqError } from '../../src/js/index.mjs';
import { MODELS, NATIVE_CLI, buildModel, readDataSet } from './helpers.mjs';

const mnist = path.join(MODELS, 'mnist-8/model.onnx');

async function mnistFeeds() {
  const { inputs } = readDataSet(path.join(MODELS, 'mnist-8/test_data_set_0'));
  return { Input3: { data: inputs[0].data, dims: inputs[0].dims } };
}

// mnist-8 (static shapes, planned at load): weights 23992 bytes, the
// MatMul's B packed for the batch-1 GEMV 16384 (10 columns in one panel of
// 16, 256 rows, floats), the float convs' largest scratch 452168 (the 8->16
// 5x5 conv on 14x14 runs at once: its 8x18x18 padded input + 18 floats,
// 200x252 columns, 16x252 products, and the GEMM's packing, 200 x (20 + 260)
// floats: 4 x (2610 + 50400 + 4032 + 56000)), graph outputs 48 (1x10 float,
// one 64-byte-aligned slot holds 40), arena 50176 (model.memory.arenaBytes):
// 542768 bytes in all.
const MNIST_SCRATCH = 452168;
const MNIST_KERNELS = 23992 + 16384 + MNIST_SCRATCH;
const MNIST_NEED = MNIST_KERNELS + 48 + 50176;

test('maxMemoryBytes: under the limit the run is bit-identical to an unlimited load', async () => {
  const feeds = await mnistFeeds();
  const free = await load(mnist);
  const capped = await load(mnist, { maxMemoryBytes: MNIST_NEED });
  try {
    assert.equal(capped.memory.arenaBytes, 50176);
    const want = (await free.run(feeds)).Plus214_Output_0.data;
    for (let r = 0; r < 3; r++) {
      const got = (await capped.run(feeds)).Plus214_Output_0.data;
      assert.deepEqual(new Uint32Array(got.buffer, got.byteOffset, got.length), new Uint32Array(want.buffer, want.byteOffset, want.length));
    }
  } finally {
    free.dispose();
    capped.dispose();
  }
});

test('maxMemoryBytes: a plan over the limit fails the load naming the bytes; the package goes on', async () => {
  const err = await load(mnist, { maxMemoryBytes: MNIST_NEED - 1 }).then(
    () => assert.fail('the load should fail'),
    (e) => e,
  );
  assert.ok(err instanceof WasmqError);
  assert.equal(err.code, 'WQ_ERR_OUT_OF_MEMORY');
  assert.match(err.message, /the arena needs 50176 bytes/);
  assert.match(err.message, new RegExp(`makes ${MNIST_NEED} bytes in all \\(weights and kernels ${MNIST_KERNELS}, graph outputs 48`));
  assert.match(err.message, new RegExp(`limit of ${MNIST_NEED - 1} bytes`));
  // Weights alone over the limit: said before any plan.
  const small = await load(mnist, { maxMemoryBytes: 1000 }).then(() => assert.fail('the load should fail'), (e) => e);
  assert.equal(small.code, 'WQ_ERR_OUT_OF_MEMORY');
  assert.match(small.message, /the weights take 492544 bytes \(23992 as loaded, 16384 held by the kernels, 452168 of kernel scratch\), more than the limit of 1000 bytes/);
  // The same core loads and runs the model afterwards.
  const model = await load(mnist);
  try {
    const out = (await model.run(await mnistFeeds())).Plus214_Output_0;
    assert.deepEqual(out.dims, [1, 10]);
  } finally {
    model.dispose();
  }
});

// One Relu on a static [4096] float input: no weights, no intermediates (an
// empty arena), a 16384-byte graph output.
test('maxMemoryBytes: graph outputs alone over the limit fail the load (no arena to check)', async () => {
  const single = buildModel({
    nodes: [{ op: 'Relu', name: 'only', inputs: ['x'], outputs: ['y'] }],
    inputs: [{ name: 'x', dtype: 'float32', shape: [4096] }],
    outputs: [{ name: 'y', dtype: 'float32', shape: [4096] }],
  });
  const err = await load(single, { maxMemoryBytes: 16383 }).then(() => assert.fail('the load should fail'), (e) => e);
  assert.equal(err.code, 'WQ_ERR_OUT_OF_MEMORY');
  assert.match(err.message, /the graph outputs take 16384 bytes, which makes 16384 bytes with the weights and kernels \(0\), more than the limit of 16383 bytes/);
  const model = await load(single, { maxMemoryBytes: 16384 });
  try {
    const x = new Float32Array(4096).map((_, i) => (i % 5) - 2);
    assert.deepEqual(Array.from((await model.run({ x: { data: x, dims: [4096] } })).y.data), Array.from(x, (v) => Math.max(v, 0)));
  } finally {
    model.dispose();
  }
});

// Relu -> Relu on a symbolic [N] float input: one intermediate and one graph
// output of 4N bytes each, no weights; sizes known only at run time.
const chain = buildModel({
  nodes: [
    { op: 'Relu', name: 'first', inputs: ['x'], outputs: ['t'] },
    { op: 'Relu', name: 'second', inputs: ['t'], outputs: ['y'] },
  ],
  inputs: [{ name: 'x', dtype: 'float32', shape: ['N'] }],
  outputs: [{ name: 'y', dtype: 'float32', shape: ['N'] }],
});

const ramp = (n) => {
  const data = new Float32Array(n);
  for (let i = 0; i < n; i++) data[i] = (i % 7) - 3;
  return { x: { data, dims: [n] } };
};

test('maxMemoryBytes: a run over the limit fails cleanly and the model runs again', async () => {
  const model = await load(chain, { maxMemoryBytes: 10000 });
  try {
    // 1000 elements: 4000 + 4000 bytes, under 10000 (first run records, second uses the arena).
    for (let r = 0; r < 2; r++) {
      const y = (await model.run(ramp(1000))).y.data;
      assert.deepEqual(Array.from(y.subarray(0, 7)), [0, 0, 0, 0, 1, 2, 3]);
    }
    // 2000 elements: the arena planned for 1000 (4000 bytes, kept) leaves
    // 6000 for the new shapes' first (recording) run; t needs 8000.
    assert.equal(model.memory.arenaBytes, 4000);
    const err = await model.run(ramp(2000)).then(() => assert.fail('the run should fail'), (e) => e);
    assert.ok(err instanceof WasmqError);
    assert.equal(err.code, 'WQ_ERR_OUT_OF_MEMORY');
    assert.equal(err.node, 'first');
    assert.match(err.message, /Relu: output 0 needs 8000 bytes, more than the 6000 the memory limit leaves \(maxMemoryBytes\)/);
    // Still usable, same results.
    const again = (await model.run(ramp(1000))).y.data;
    assert.equal(again.length, 1000);
    assert.deepEqual(Array.from(again.subarray(0, 7)), [0, 0, 0, 0, 1, 2, 3]);
  } finally {
    model.dispose();
  }
  // Without the limit the larger shape runs.
  const free = await load(chain);
  try {
    assert.equal((await free.run(ramp(2000))).y.data.length, 2000);
  } finally {
    free.dispose();
  }
});

test('maxMemoryBytes: the threaded build applies the same limit', { skip: !threadsSupported() }, async () => {
  const err = await load(mnist, { threads: 2, maxMemoryBytes: MNIST_NEED - 1 }).then(
    () => assert.fail('the load should fail'),
    (e) => e,
  );
  assert.equal(err.code, 'WQ_ERR_OUT_OF_MEMORY');
  assert.match(err.message, new RegExp(`makes ${MNIST_NEED} bytes in all`));
  // Each of the 2 threads may hold a share's scratch: runs need one more.
  const tight = await load(mnist, { threads: 2, maxMemoryBytes: MNIST_NEED });
  try {
    const over = await tight.run(await mnistFeeds()).then(() => assert.fail('the run should fail'), (e) => e);
    assert.equal(over.code, 'WQ_ERR_OUT_OF_MEMORY');
    assert.match(over.message, new RegExp(`weights and kernels ${MNIST_KERNELS + MNIST_SCRATCH}`));
  } finally {
    tight.dispose();
  }
  const model = await load(mnist, { threads: 2, maxMemoryBytes: MNIST_NEED + MNIST_SCRATCH });
  try {
    assert.equal(model.info.build, 'simd-threads');
    const free = await load(mnist);
    try {
      const feeds = await mnistFeeds();
      const want = (await free.run(feeds)).Plus214_Output_0.data;
      const got = (await model.run(feeds)).Plus214_Output_0.data;
      assert.deepEqual(new Uint32Array(got.buffer, got.byteOffset, got.length), new Uint32Array(want.buffer, want.byteOffset, want.length));
    } finally {
      free.dispose();
    }
  } finally {
    model.dispose();
  }
});

// An int8 model: its kernels' plans hold packed copies of the weights and
// their runs allocate scratch (activation panels, im2col border rows); both
// count with the weights. The load that fits exactly runs bit-identically
// to an unlimited load; what sufficed before they were counted (the weights
// as loaded, outputs, arena) no longer does.
const smallcnn = path.join(MODELS, 'synthetic/smallcnn_qdq.onnx');
const WEIGHTS_TAKE = /the weights take (\d+) bytes \((\d+) as loaded, (\d+) held by the kernels, (\d+) of kernel scratch\)/;
const ARENA_NEEDS = /the arena needs (\d+) bytes, which makes (\d+) bytes in all \(weights and kernels (\d+), graph outputs (\d+),/;

test('maxMemoryBytes: int8 kernels count their packed weights and scratch', async () => {
  const failed = (opts) => load(smallcnn, opts).then(() => assert.fail('the load should fail'), (e) => e);
  const tiny = await failed({ maxMemoryBytes: 1000 });
  assert.equal(tiny.code, 'WQ_ERR_OUT_OF_MEMORY');
  const [fixed, loaded, held, scratch] = WEIGHTS_TAKE.exec(tiny.message).slice(1).map(Number);
  assert.equal(fixed, loaded + held + scratch);
  // The weights as loaded are the file's initializers' bytes after folding;
  // the SIMD plans hold at least a byte per weight and the runs some scratch.
  assert.ok(held >= loaded && scratch > 0, tiny.message);
  const arena = await failed({ maxMemoryBytes: fixed });
  const [arenaBytes, need, fixedAgain, outputs] = ARENA_NEEDS.exec(arena.message).slice(1).map(Number);
  assert.equal(fixedAgain, fixed);
  assert.equal(need, fixed + outputs + arenaBytes);
  const before = loaded + outputs + arenaBytes; // the limit that sufficed when kernels were not counted
  assert.match((await failed({ maxMemoryBytes: before })).message, /more than the limit/);
  assert.match((await failed({ maxMemoryBytes: need - 1 })).message, new RegExp(`makes ${need} bytes in all`));

  const free = await load(smallcnn);
  const capped = await load(smallcnn, { maxMemoryBytes: need });
  try {
    const input = free.inputs[0];
    const count = input.shape.reduce((a, b) => a * b, 1);
    const data = Float32Array.from({ length: count }, (_, i) => ((i * 37) % 101) / 50 - 1);
    const feeds = { [input.name]: { data, dims: input.shape } };
    const name = free.outputs[0].name;
    const want = (await free.run(feeds))[name].data;
    for (let r = 0; r < 2; r++) assert.deepEqual((await capped.run(feeds))[name].data, want);
    if (threadsSupported()) {
      // On 2 threads each may hold a share's scratch: `need` no longer
      // suffices for a run, `need + scratch` does.
      const two = await load(smallcnn, { threads: 2, maxMemoryBytes: need });
      try {
        if (two.info.threads === 2) {
          const err = await two.run(feeds).then(() => assert.fail('the run should fail'), (e) => e);
          assert.equal(err.code, 'WQ_ERR_OUT_OF_MEMORY');
        }
      } finally {
        two.dispose();
      }
      const roomy = await load(smallcnn, { threads: 2, maxMemoryBytes: need + scratch });
      try {
        assert.deepEqual((await roomy.run(feeds))[name].data, want);
      } finally {
        roomy.dispose();
      }
    }
  } finally {
    free.dispose();
    capped.dispose();
  }
});

// Float Gemm -> MatMul at static shapes: their GEMMs' packing buffers count
// (kc x (mc + nc) floats, kc = min(K, 256), mc = min(M, 96) + 4, nc =
// min(N, 512) + 8): Gemm [8,16] x [16,32] 16 x (12 + 40) x 4 = 3328 bytes,
// MatMul [8,32] x [32,8] 32 x (12 + 16) x 4 = 3584, the larger counted.
test('maxMemoryBytes: float GEMM packing scratch counts', async () => {
  const gemms = buildModel({
    nodes: [
      { op: 'Gemm', name: 'gemm', inputs: ['a', 'b'], outputs: ['t'] },
      { op: 'MatMul', name: 'matmul', inputs: ['t', 'c'], outputs: ['y'] },
    ],
    inputs: [
      { name: 'a', dtype: 'float32', shape: [8, 16] },
      { name: 'b', dtype: 'float32', shape: [16, 32] },
      { name: 'c', dtype: 'float32', shape: [32, 8] },
    ],
    outputs: [{ name: 'y', dtype: 'float32', shape: [8, 8] }],
  });
  const err = await load(gemms, { maxMemoryBytes: 1000 }).then(() => assert.fail('the load should fail'), (e) => e);
  assert.equal(err.code, 'WQ_ERR_OUT_OF_MEMORY');
  assert.match(err.message, /the weights take 3584 bytes \(0 as loaded, 0 held by the kernels, 3584 of kernel scratch\)/);
});

// ConvTranspose X [1,2,3,3], W [2,4,3,3]: col2im columns of 4 x 9 rows by
// 9 input positions (1296 bytes) and the GEMM's packing, kc = 2 (C),
// mc = 36 + 4, nc = 9 + 8: 2 x 57 floats (456 bytes).
test('maxMemoryBytes: ConvTranspose col2im scratch counts', async () => {
  const deconv = buildModel({
    nodes: [{ op: 'ConvTranspose', name: 'deconv', inputs: ['x', 'w'], outputs: ['y'] }],
    inputs: [
      { name: 'x', dtype: 'float32', shape: [1, 2, 3, 3] },
      { name: 'w', dtype: 'float32', shape: [2, 4, 3, 3] },
    ],
    outputs: [{ name: 'y', dtype: 'float32', shape: [1, 4, 5, 5] }],
  });
  const err = await load(deconv, { maxMemoryBytes: 1000 }).then(() => assert.fail('the load should fail'), (e) => e);
  assert.equal(err.code, 'WQ_ERR_OUT_OF_MEMORY');
  assert.match(err.message, /the weights take 1752 bytes \(0 as loaded, 0 held by the kernels, 1752 of kernel scratch\)/);
});

test('maxMemoryBytes must be an integer >= 0', async () => {
  for (const bad of [-1, 1.5, '100', Infinity]) {
    await assert.rejects(load(chain, { maxMemoryBytes: bad }), (e) => e instanceof WasmqError && /maxMemoryBytes/.test(e.message));
  }
});

test('native CLI: run --max-memory BYTES fails over the limit and runs under it', { skip: !existsSync(NATIVE_CLI) }, () => {
  const over = spawnSync(NATIVE_CLI, ['run', mnist, '--max-memory', String(MNIST_NEED - 1)], { encoding: 'utf8' });
  assert.equal(over.status, 1);
  assert.match(over.stderr, /the arena needs 50176 bytes/);
  assert.match(over.stderr, /\[WQ_ERR_OUT_OF_MEMORY\]/);
  const under = spawnSync(NATIVE_CLI, ['run', mnist, '--max-memory', String(MNIST_NEED)], { encoding: 'utf8' });
  assert.equal(under.status, 0, under.stderr);
  assert.match(under.stdout, /Plus214_Output_0 float32 \[1, ?10\]/);
  const bad = spawnSync(NATIVE_CLI, ['run', mnist, '--max-memory', '-5'], { encoding: 'utf8' });
  assert.equal(bad.status, 2);
  assert.match(bad.stderr, /--max-memory expects a byte count/);
});
