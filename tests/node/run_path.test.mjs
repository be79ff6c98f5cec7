// The run path's reuse across runs: inputs staged in wasm buffers kept by the
// model (grown when a symbolic input gets bigger), results of a static plan
// held in the plan's buffers until copied out. Each run must still return
// its own fresh arrays, equal bit for bit to a fresh model's, and bad feeds
// must still fail clearly after fast runs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { load, WasmqError } from '../../src/js/index.mjs';
import { randomInput } from '../../bench/common.mjs';
import { MODELS } from './helpers.mjs';

const SMALLCNN_QDQ = path.join(MODELS, 'synthetic', 'smallcnn_qdq.onnx');
const GEMV = path.join(MODELS, 'synthetic', 'matmul_1x1024x1024_qlinear.onnx');
const TEAMS = path.join(MODELS, 'teams-segmentation-msra190729', 'model.onnx');

function feedsFor(model, seed, dimsOf = (info) => info.shape) {
  const feeds = {};
  model.inputs.forEach((info, i) => {
    const dims = dimsOf(info);
    feeds[info.name] = { data: randomInput(info.dtype, dims, seed + 7919 * i), dims };
  });
  return feeds;
}

function assertSameOutputs(got, want, what) {
  assert.deepEqual(Object.keys(got), Object.keys(want), what);
  for (const name of Object.keys(want)) {
    assert.deepEqual(got[name].dims, want[name].dims, `${what}: ${name} dims`);
    assert.equal(got[name].dtype, want[name].dtype, `${what}: ${name} dtype`);
    assert.ok(
      Buffer.from(got[name].data.buffer, got[name].data.byteOffset, got[name].data.byteLength).equals(
        Buffer.from(want[name].data.buffer, want[name].data.byteOffset, want[name].data.byteLength),
      ),
      `${what}: ${name} differs`,
    );
  }
}

for (const file of [SMALLCNN_QDQ, GEMV]) {
  test(`${path.basename(file)}: repeated runs equal fresh models, results stay the caller's`, async () => {
    const model = await load(file);
    try {
      const kept = [];
      for (let run = 0; run < 4; run++) {
        const feeds = feedsFor(model, 100 + run);
        const out = await model.run(feeds);
        const fresh = await load(file);
        try {
          assertSameOutputs(out, await fresh.run(feeds), `run ${run}`);
        } finally {
          fresh.dispose();
        }
        const name = model.outputs[0].name;
        kept.push({ data: out[name].data, copy: out[name].data.slice() });
      }
      // Later runs never wrote into arrays handed out earlier.
      for (const { data, copy } of kept) assert.deepEqual(data, copy);
      assert.notDeepEqual(kept[0].copy, kept[1].copy); // different inputs, different outputs
      // Omitted dims take the declared (static) shape.
      const feeds = feedsFor(model, 7);
      const bare = Object.fromEntries(Object.entries(feeds).map(([k, v]) => [k, v.data]));
      assertSameOutputs(await model.run(bare), await model.run(feeds), 'bare typed arrays');
    } finally {
      model.dispose();
    }
  });
}

test('bad feeds after fast runs still fail with clear errors; the model keeps working', async () => {
  const model = await load(GEMV);
  try {
    const feeds = feedsFor(model, 1);
    const first = await model.run(feeds);
    await model.run(feeds);
    const name = model.inputs[0].name;
    const wrongDims = { [name]: { data: new Float32Array(1023), dims: [1, 1023] } };
    let e = await model.run(wrongDims).catch((x) => x);
    assert.ok(e instanceof WasmqError);
    assert.equal(e.code, 'WQ_ERR_SHAPE');
    assert.match(e.message, /has dims \[1,1023\], model expects \[1,1024\]/);
    e = await model.run({ [name]: { data: new Float32Array(1000), dims: [1, 1024] } }).catch((x) => x);
    assert.equal(e.code, 'WQ_ERR_SHAPE');
    assert.match(e.message, /need 1024 elements, data has 1000/);
    e = await model.run({ [name]: { data: new Float64Array(1024), dims: [1, 1024] } }).catch((x) => x);
    assert.equal(e.code, 'WQ_ERR_SHAPE');
    assert.match(e.message, /needs a Float32Array, got Float64Array/);
    e = await model.run({}).catch((x) => x);
    assert.match(e.message, /missing input/);
    assertSameOutputs(await model.run(feeds), first, 'after errors');
    model.dispose();
    e = await model.run(feeds).catch((x) => x);
    assert.equal(e.code, 'WQ_ERR_DISPOSED');
  } finally {
    model.dispose();
  }
});

test('symbolic input: staging grows and shrinks with the input, results equal fresh models', async () => {
  const model = await load(TEAMS);
  try {
    const shapes = [
      [1, 4, 32, 48],
      [1, 4, 96, 160],
      [1, 4, 32, 48],
      [1, 4, 64, 64],
    ];
    for (const [s, dims] of shapes.entries()) {
      const feeds = feedsFor(model, 40 + s, () => dims);
      const fresh = await load(TEAMS);
      try {
        assertSameOutputs(await model.run(feeds), await fresh.run(feeds), `shape ${dims}`);
      } finally {
        fresh.dispose();
      }
    }
  } finally {
    model.dispose();
  }
});

test('per-node timing: one entry per executed node, kernel time within node time, results unchanged', async () => {
  const model = await load(path.join(MODELS, 'mnist-8', 'model.onnx'));
  try {
    const feeds = feedsFor(model, 5);
    const plain = await model.run(feeds);
    model.profile(true);
    for (let i = 0; i < 3; i++) assertSameOutputs(await model.run(feeds), plain, `profiled run ${i}`);
    const times = model.nodeTimes();
    // The lowered graph lists the same nodes in the same order.
    const ops = [...model.describeLowered().matchAll(/^\s*\[[^\]]+\]\s+(\S+)/gm)].map((m) => m[1]);
    assert.deepEqual(
      times.map((t) => t.op),
      ops,
    );
    for (const t of times) {
      assert.ok(t.kernelMs >= 0 && t.ms >= t.kernelMs, `${t.name}: ${t.ms} ms in all, ${t.kernelMs} ms in the kernel`);
    }
    assert.ok(times.find((t) => t.op === 'Conv').kernelMs > 0, 'the convolutions took measurable time');
    // Turning it on again clears the counts; off leaves them as they were.
    model.profile(true);
    assert.ok(model.nodeTimes().every((t) => t.ms === 0));
    model.profile(false);
    await model.run(feeds);
    assert.ok(model.nodeTimes().every((t) => t.ms === 0));
  } finally {
    model.dispose();
  }
});

test('float Conv -> Relu runs as one node, matching onnxruntime-node', async () => {
  const { createRequire } = await import('node:module');
  const ort = createRequire(import.meta.url)('onnxruntime-node');
  const file = path.join(MODELS, 'synthetic', 'smallcnn_f32.onnx');
  const model = await load(file);
  try {
    const ops = [...model.describeLowered().matchAll(/^\s*\[[^\]]+\]\s+(\S+)/gm)].map((m) => m[1]);
    assert.deepEqual(ops, ['Conv', 'Conv', 'Conv', 'GlobalAveragePool', 'Flatten', 'Gemm']);
    const feeds = feedsFor(model, 21);
    const ours = await model.run(feeds);
    const session = await ort.InferenceSession.create(file);
    const ortFeeds = {};
    for (const [name, f] of Object.entries(feeds)) ortFeeds[name] = new ort.Tensor('float32', f.data, f.dims);
    const want = await session.run(ortFeeds);
    for (const name of Object.keys(want)) {
      const a = ours[name].data;
      const b = want[name].data;
      let worst = 0;
      for (let i = 0; i < b.length; i++) worst = Math.max(worst, Math.abs(a[i] - b[i]) / (1e-3 + Math.abs(b[i])));
      assert.ok(worst < 1e-4, `${name}: relative difference ${worst}`);
    }
  } finally {
    model.dispose();
  }
});
