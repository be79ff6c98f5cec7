// The malformed-model corpus (tests/corpus, see make_corpus.py) through the
// wasm build: each file must fail with the status and message the native
// test_corpus expects, as a WasmqError — never a crash or a hang.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { readFileSync } from 'node:fs';
import { load, WasmqError } from '../../src/js/index.mjs';
import { REPO } from './helpers.mjs';

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
