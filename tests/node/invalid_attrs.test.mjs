// Attribute ranges checked as onnxruntime checks them: every model of
// tests/models/invalid_attrs.mjs is refused by onnxruntime-node (checked
// here on each run) and by wasmq, with an error naming the node and the
// attribute. SAME padding that onnxruntime would apply negatively at the
// start of an axis is refused as unsupported rather than computed
// differently; a negative end pad (rows no window reaches) matches it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { load, WasmqError } from '../../src/js/index.mjs';
import { invalidAttributeCases } from '../models/invalid_attrs.mjs';
import { encodeModel } from '../models/qdq_builder.mjs';

const ort = createRequire(import.meta.url)('onnxruntime-node');

const xDims = (name) => (name.startsWith('convtranspose') ? [1, 2, 3, 3] : [1, 2, 5, 5]);
const ramp = (n) => Float32Array.from({ length: n }, (_, i) => i + 1);

test('invalid attribute models: onnxruntime refuses each, wasmq too, naming node and attribute', async () => {
  const cases = invalidAttributeCases();
  assert.ok(cases.length >= 24, `${cases.length} models`);
  for (const c of cases) {
    const dims = xDims(c.name);
    const x = ramp(dims.reduce((a, b) => a * b, 1));
    await assert.rejects(
      (async () => {
        const session = await ort.InferenceSession.create(c.model, { logSeverityLevel: 4 });
        await session.run({ X: new ort.Tensor('float32', x, dims) });
      })(),
      `${c.name}: onnxruntime accepted it`,
    );
    let error;
    try {
      const model = await load(c.model);
      await model.run({ X: x });
      model.dispose();
    } catch (e) {
      error = e;
    }
    assert.ok(error instanceof WasmqError, `${c.name}: wasmq accepted it`);
    assert.notEqual(error.code, 'WQ_OK');
    assert.equal(error.node, 'the_node', `${c.name}: ${error.message}`);
    assert.match(error.message, new RegExp(`\\b${c.attribute}\\b`), `${c.name}: the error names no ${c.attribute}`);
  }
});

/** A 1x1 Conv (weight 1) over X [1, 1, 1, n] with the given attributes. */
function conv1x1(n, attrs) {
  return encodeModel({
    nodes: [{ op: 'Conv', name: 'conv', inputs: ['X', 'W'], outputs: ['Y'], attrs: { kernel_shape: [1, 1], ...attrs } }],
    initializers: [{ name: 'W', dtype: 'float', dims: [1, 1, 1, 1], data: new Float32Array([1]) }],
    inputs: [{ name: 'X', dtype: 'float', shape: [1, 1, 1, n] }],
    outputs: [{ name: 'Y', dtype: 'float' }],
    opset: 13,
  });
}

test('SAME padding: a negative begin pad is refused naming auto_pad; a negative end pad matches onnxruntime', async () => {
  const ortRun = async (bytes, x, dims) => {
    const s = await ort.InferenceSession.create(bytes, { graphOptimizationLevel: 'disabled' });
    return (await s.run({ X: new ort.Tensor('float32', x, dims) })).Y;
  };
  // Stride 8 over 5 columns: onnxruntime starts the window inside the input
  // (it reads column 1, not 0); clamping would read column 0.
  for (const autoPad of ['SAME_UPPER', 'SAME_LOWER']) {
    const negative = conv1x1(5, { strides: [1, 8], auto_pad: autoPad });
    assert.deepEqual(Array.from((await ortRun(negative, ramp(5), [1, 1, 1, 5])).data), [2]);
    let error;
    try {
      await load(negative);
    } catch (e) {
      error = e;
    }
    assert.ok(error instanceof WasmqError, autoPad);
    assert.equal(error.code, 'WQ_ERR_UNSUPPORTED');
    assert.equal(error.node, 'conv');
    assert.match(error.message, new RegExp(`auto_pad ${autoPad} pads spatial axis 1 negatively`));
  }
  // A strided 1x1 (common in converted models): the negative pad falls at
  // the end, where no window reads; exactly onnxruntime's values.
  for (const [n, stride, autoPad] of [[8, 2, 'SAME_UPPER'], [8, 2, 'SAME_LOWER'], [5, 3, 'SAME_LOWER'], [7, 3, 'SAME_UPPER']]) {
    const bytes = conv1x1(n, { strides: [1, stride], auto_pad: autoPad });
    const x = ramp(n);
    const want = await ortRun(bytes, x, [1, 1, 1, n]);
    const model = await load(bytes);
    const got = (await model.run({ X: x })).Y;
    model.dispose();
    assert.deepEqual(got.dims, want.dims.map(Number));
    assert.deepEqual(Array.from(got.data), Array.from(want.data), `${n}/${stride} ${autoPad}`);
  }
});

test('invalid_attrs.mjs as a script: --help prints usage and writes nothing; options are not folders', () => {
  const script = fileURLToPath(new URL('../models/invalid_attrs.mjs', import.meta.url));
  const cwd = mkdtempSync(path.join(tmpdir(), 'wq-invalid-attrs-'));
  try {
    const run = (...args) => spawnSync(process.execPath, [script, ...args], { cwd, encoding: 'utf8' });
    for (const flag of ['--help', '-h']) {
      const r = run(flag);
      assert.equal(r.status, 0, r.stderr);
      assert.match(r.stdout, /^usage: /);
    }
    const unknown = run('--out', 'x');
    assert.equal(unknown.status, 2);
    assert.match(unknown.stderr, /Unknown option '--out'[\s\S]*usage: /);
    assert.equal(run('a', 'b').status, 2);
    assert.deepEqual(readdirSync(cwd), [], 'nothing written');
    const r = run('models');
    assert.equal(r.status, 0, r.stderr);
    assert.equal(readdirSync(path.join(cwd, 'models')).length, invalidAttributeCases().length);
  } finally {
    rmSync(cwd, { recursive: true, force: true });
  }
});
