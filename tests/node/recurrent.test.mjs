// ONNX's own node tests for recurrence and control flow (LSTM, GRU, If), natively
// (`wasmq check`) and in wasm (checkCase), from ../shared/onnx-node-tests-recurrent
// (kept apart from ../shared/onnx-node-tests; see its SOURCE.md).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { SHARED, NATIVE_CLI } from './helpers.mjs';
import { checkCase } from '../../src/js/internal.mjs';

const DIR = path.join(SHARED, 'onnx-node-tests-recurrent');
// The cases whose ops wasmq implements; the folder holds more (RNN,
// LayerNormalization, If over sequences and optionals).
const SUPPORTED = /^test_(lstm_|gru_|if$)/;
const cases = existsSync(DIR) ? readdirSync(DIR).filter((n) => SUPPORTED.test(n)).sort() : [];

const readSet = (dir, prefix) => {
  const out = [];
  for (let n = 0; existsSync(path.join(dir, `${prefix}_${n}.pb`)); n++) out.push(readFileSync(path.join(dir, `${prefix}_${n}.pb`)));
  return out;
};

test('the recurrent/control-flow ONNX cases are present', { skip: !existsSync(DIR) && `${DIR} is missing` }, () => {
  assert.ok(cases.length >= 5, `found ${cases.join(', ')}`);
});

for (const name of cases) {
  const dir = path.join(DIR, name);
  test(`${name}: wasm`, async () => {
    const model = readFileSync(path.join(dir, 'model.onnx'));
    const set = path.join(dir, 'test_data_set_0');
    const r = await checkCase(model, readSet(set, 'input'), readSet(set, 'output'));
    assert.equal(r.result, 'PASS', r.reason);
  });
  test(`${name}: native`, { skip: !existsSync(NATIVE_CLI) && 'no native build' }, () => {
    const out = execFileSync(NATIVE_CLI, ['check', dir], { encoding: 'utf8' });
    assert.match(out, /^PASS/m, out);
    assert.doesNotMatch(out, /^(FAIL|SKIP)/m, out);
  });
}
