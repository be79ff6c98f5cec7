// The malformed-model corpus (tests/corpus, see make_corpus.py) through the
// wasm build: each file must fail with the status and message the native
// test_corpus expects, as a WasmqError — never a crash or a hang. The
// `run` cases (edge-value geometry: strides up to INT64_MAX) run in wasm and
// must match onnxruntime-node (float within 1e-5, int8 codes within one
// step) and, with `same-as`, another case's output bit for bit.
import { test } from 'node:test';
import { createRequire } from 'node:module';
import assert from 'node:assert/strict';
import path from 'node:path';
import { readFileSync } from 'node:fs';
import { load, WasmqError } from '../../src/js/index.mjs';
import { REPO } from './helpers.mjs';
import { randomArray } from '../../src/js/random.mjs';

const ort = createRequire(import.meta.url)('onnxruntime-node');
const ORT_OPTIONS = { logSeverityLevel: 3, extra: { session: { x64quantprecision: '1' } } };
const runOutputs = new Map();

async function runBoth(bytes, seed) {
  const model = await load(bytes);
  const feeds = {}, ortFeeds = {};
  for (const input of model.inputs) {
    const n = input.shape.reduce((a, b) => a * b, 1);
    const data = randomArray(input.dtype, n, seed);
    feeds[input.name] = { data, dims: input.shape };
    ortFeeds[input.name] = new ort.Tensor(input.dtype, data, input.shape);
  }
  const ours = Object.values(await model.run(feeds))[0];
  model.dispose();
  const session = await ort.InferenceSession.create(bytes, ORT_OPTIONS);
  const theirs = Object.values(await session.run(ortFeeds))[0];
  await session.release?.();
  return { ours, theirs };
}

const corpusDir = path.join(REPO, 'tests/corpus');
const cases = readFileSync(path.join(corpusDir, 'expected.txt'), 'utf8')
  .split('\n')
  .filter((line) => line.trim() && !line.startsWith('#'))
  .map((line) => {
    const [file, status, ...words] = line.trim().split(/\s+/);
    return { file, status, substring: words.join(' ') };
  });

test('the corpus lists files', () => assert.ok(cases.length >= 20, `${cases.length} cases`));

for (const { file, status, substring } of cases) {
  test(`corpus ${file} -> ${status}`, async () => {
    const bytes = readFileSync(path.join(corpusDir, file));
    if (status === 'WQ_OK' && substring.startsWith('run')) {
      const { ours, theirs } = await runBoth(bytes, 7);
      assert.deepEqual(ours.dims, theirs.dims);
      const step = ours.data instanceof Float32Array ? 1e-5 : 1;
      let worst = 0;
      for (let i = 0; i < theirs.data.length; i++) worst = Math.max(worst, Math.abs(Number(ours.data[i]) - Number(theirs.data[i])));
      assert.ok(worst <= step, `${file}: differs from onnxruntime by ${worst}`);
      runOutputs.set(file, ours);
      const sameAs = substring.match(/same-as (\S+)/)?.[1];
      if (sameAs) {
        assert.ok(runOutputs.has(sameAs), `${sameAs} has not run`);
        assert.deepEqual(Array.from(ours.data), Array.from(runOutputs.get(sameAs).data), `${file} vs ${sameAs}`);
      }
      return;
    }
    if (status === 'WQ_OK') {
      const model = await load(bytes);
      model.dispose();
      return;
    }
    await assert.rejects(load(bytes), (err) => {
      assert.ok(err instanceof WasmqError, `not a WasmqError: ${err}`);
      assert.equal(err.code, status, err.message);
      if (substring) assert.ok(err.message.includes(substring), `"${err.message}" lacks "${substring}"`);
      return true;
    });
  });
}

test('every truncation of a real model fails cleanly or loads', async () => {
  const bytes = readFileSync(path.join(REPO, 'demo/mnist-8.onnx'));
  for (let len = 0; len < bytes.length; len += 97) {
    try {
      (await load(bytes.subarray(0, len))).dispose();
    } catch (err) {
      assert.ok(err instanceof WasmqError, `prefix ${len}: ${err}`);
    }
  }
});
