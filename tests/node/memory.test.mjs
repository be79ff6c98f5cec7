// Memory and concurrency of the npm package:
//   - 1,000 load -> run -> dispose cycles leave wasm memory and process RSS flat;
//   - a run that needs more than wasm can address fails with
//     WQ_ERR_OUT_OF_MEMORY, and the model, the core and the process go on;
//   - concurrent run() calls on one model and on several (Promise.all), and
//     models in worker_threads, give the results of one run at a time.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { readFileSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import { load, WasmqError } from '../../src/js/index.mjs';
import { getCore } from '../../src/js/internal.mjs';
import { randomArray } from '../../src/js/random.mjs';
import { MODELS, buildModel } from './helpers.mjs';

const SMALLCNN = readFileSync(path.join(MODELS, 'synthetic/smallcnn_qdq.onnx'));
const MNIST = readFileSync(path.join(MODELS, 'mnist-8/model.onnx'));

async function outputsOf(model, feeds) {
  const out = await model.run(feeds);
  return Object.values(out).map((t) => Array.from(t.data));
}

const mnistFeed = (seed) => ({ Input3: { data: randomArray('float32', 784, seed), dims: [1, 1, 28, 28] } });

test('1,000 load -> run -> dispose cycles leave wasm memory and RSS flat', async () => {
  const core = await getCore();
  const want = await (async () => {
    const m = await load(MNIST);
    const r = await outputsOf(m, mnistFeed(0));
    m.dispose();
    return r;
  })();
  let heapAt100 = 0, rssAt100 = 0;
  for (let i = 1; i <= 1000; i++) {
    const m = await load(MNIST);
    const got = await outputsOf(m, mnistFeed(0));
    m.dispose();
    if (i === 1 || i === 1000) assert.deepEqual(got, want);
    if (i === 100) {
      heapAt100 = core.HEAPU8.length;
      rssAt100 = process.memoryUsage().rss;
    }
  }
  const heap = core.HEAPU8.length;
  const rssGrowth = process.memoryUsage().rss - rssAt100;
  console.log(`wasm memory after 100 cycles ${(heapAt100 / 2 ** 20).toFixed(1)} MiB, after 1000 ${(heap / 2 ** 20).toFixed(1)} MiB; RSS grew ${(rssGrowth / 2 ** 20).toFixed(1)} MiB`);
  assert.equal(heap, heapAt100, 'wasm memory grew between cycle 100 and 1000');
  assert.ok(rssGrowth < 32 * 2 ** 20, `RSS grew ${rssGrowth} bytes between cycle 100 and 1000`);
});

// x [N, 2^20] float -> Relu -> Sigmoid -> Relu: with N = 256 every tensor is
// 1 GiB, more than wasm's 2 GiB address space holds alongside the staged input.
const WIDE = buildModel({
  nodes: [
    { op: 'Relu', name: 'r1', inputs: ['x'], outputs: ['a'] },
    { op: 'Sigmoid', name: 's1', inputs: ['a'], outputs: ['b'] },
    { op: 'Relu', name: 'r2', inputs: ['b'], outputs: ['y'] },
  ],
  inputs: [{ name: 'x', dtype: 'float32', shape: ['N', 1 << 20] }],
  outputs: [{ name: 'y', dtype: 'float32', shape: ['N', 1 << 20] }],
});

test('a run larger than wasm memory fails with WQ_ERR_OUT_OF_MEMORY; model, core and process go on', async () => {
  const model = await load(WIDE);
  const small = { x: { data: Float32Array.from({ length: 2 << 20 }, (_, i) => (i % 7) - 3), dims: [2, 1 << 20] } };
  const before = await model.run(small);
  await assert.rejects(
    model.run({ x: { data: new Float32Array(256 << 20), dims: [256, 1 << 20] } }),
    (e) => e instanceof WasmqError && e.code === 'WQ_ERR_OUT_OF_MEMORY',
  );
  const after = await model.run(small);
  assert.deepEqual(Array.from(after.y.data), Array.from(before.y.data));
  model.dispose();
  const other = await load(MNIST);
  assert.equal((await other.run(mnistFeed(1))).Plus214_Output_0.data.length, 10);
  other.dispose();
});

test('concurrent run() calls on one model and on several models give one-at-a-time results', async () => {
  const mnist = await load(MNIST);
  const cnn = await load(SMALLCNN);
  const cnnFeed = (seed) => ({ [cnn.inputs[0].name]: { data: randomArray('float32', 3 * 224 * 224, seed), dims: [1, 3, 224, 224] } });
  const seeds = [0, 1, 2, 3, 4, 5];
  const wantMnist = [], wantCnn = [];
  for (const s of seeds) {
    wantMnist.push(await outputsOf(mnist, mnistFeed(s)));
    wantCnn.push(await outputsOf(cnn, cnnFeed(s)));
  }
  const [gotMnist, gotCnn] = await Promise.all([
    Promise.all(seeds.map((s) => outputsOf(mnist, mnistFeed(s)))),
    Promise.all(seeds.map((s) => outputsOf(cnn, cnnFeed(s)))),
  ]);
  assert.deepEqual(gotMnist, wantMnist);
  assert.deepEqual(gotCnn, wantCnn);
  mnist.dispose();
  cnn.dispose();
});

test('models in worker_threads (two at once) give the main thread results', async () => {
  const m = await load(SMALLCNN);
  const feed = { data: randomArray('float32', 3 * 224 * 224, 7), dims: [1, 3, 224, 224] };
  const want = await outputsOf(m, { [m.inputs[0].name]: feed });
  m.dispose();
  const source = `
    import { parentPort, workerData } from 'node:worker_threads';
    import { load } from ${JSON.stringify(new URL('../../src/js/index.mjs', import.meta.url).href)};
    const m = await load(workerData.bytes);
    const out = await m.run({ [m.inputs[0].name]: workerData.feed });
    parentPort.postMessage(Object.values(out).map((t) => Array.from(t.data)));
    m.dispose();`;
  const runInWorker = () =>
    new Promise((resolve, reject) => {
      const w = new Worker(new URL(`data:text/javascript,${encodeURIComponent(source)}`), { workerData: { bytes: SMALLCNN, feed } });
      w.once('message', resolve);
      w.once('error', reject);
    });
  const results = await Promise.all([runInWorker(), runInWorker()]);
  for (const r of results) assert.deepEqual(r, want);
});
