// Calibration data for `npx wasmq quantize --calib` (src/js/calib.mjs): the
// same layouts, order and messages as the native reader (tests/c/test_calib_data.c).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, writeFileSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openCalibration, naturalCompare, CalibError } from '../../src/js/calib.mjs';
import { decodeTensorProto, TensorProtoError } from '../../src/js/tensor_proto.mjs';
import { encodeNpy } from '../../src/js/npy.mjs';
import { randomArray } from '../../src/js/random.mjs';
import { load } from '../../src/js/index.mjs';
import { MODELS } from './helpers.mjs';

const MNIST = path.join(MODELS, 'mnist-8');
const mnistInput = { name: 'Input3', dtype: 'float32', shape: [1, 1, 28, 28] };

async function collect(calib) {
  const out = [];
  for await (const sample of calib) out.push(sample);
  return out;
}

async function rejects(promise, message, code = 'WQ_ERR_INVALID_ARG') {
  await assert.rejects(promise, (e) => {
    assert.ok(e instanceof CalibError, `${e}`);
    assert.equal(e.message, message);
    assert.equal(e.code, code);
    return true;
  });
}

/** Opens fine, then the first sample fails with `message`. */
async function firstSampleFails(spec, inputs, message, code) {
  const calib = await openCalibration(spec, inputs);
  await rejects(collect(calib), message, code);
}

// A float TensorProto: dims, data_type=1, name, raw_data (as the C test writes).
function tensorProto(name, dims, values) {
  const raw = new Uint8Array(new Float32Array(values).buffer);
  const bytes = [];
  for (const d of dims) bytes.push(0x08, d);
  bytes.push(0x10, 1);
  if (name !== null) bytes.push(0x42, name.length, ...Buffer.from(name));
  bytes.push(0x4a, raw.length, ...raw);
  return Uint8Array.from(bytes);
}

function tempDir(t) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'wq-calib-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

test('natural order compares digit runs as numbers', () => {
  const names = ['test_data_set_10', 'test_data_set_2', 'test_data_set_02x', 'a', '9', '10'];
  assert.deepEqual(names.sort(naturalCompare), ['9', '10', 'a', 'test_data_set_2', 'test_data_set_02x', 'test_data_set_10']);
});

test("mnist-8's test_data_set folders, against the model's own declared input", async () => {
  const model = await load(readFileSync(path.join(MNIST, 'model.onnx')));
  const inputs = model.inputs;
  model.dispose();
  const calib = await openCalibration(MNIST, inputs);
  assert.equal(calib.kind, 'test-data');
  assert.equal(calib.count, 3);
  const samples = await collect(calib);
  assert.deepEqual(samples.map((s) => s.name), ['test_data_set_0', 'test_data_set_1', 'test_data_set_2']);
  for (const [k, s] of samples.entries()) {
    const direct = decodeTensorProto(readFileSync(path.join(MNIST, `test_data_set_${k}`, 'input_0.pb')));
    assert.deepEqual(s.feeds.Input3.dims, [1, 1, 28, 28]);
    assert.deepEqual(s.feeds.Input3.data, direct.data);
  }
  await rejects(
    collect(await openCalibration(MNIST, [{ ...mnistInput, shape: [1, 1, 28, 27] }])),
    `${MNIST}/test_data_set_0/input_0.pb: shape [1,1,28,28], but the model's input 'Input3' is [1,1,28,27]`,
    'WQ_ERR_SHAPE',
  );
  await rejects(
    collect(await openCalibration(`${MNIST}//`, [{ ...mnistInput, dtype: 'uint8' }])),
    `${MNIST}/test_data_set_0/input_0.pb: dtype float32, but the model's input 'Input3' is uint8`,
    'WQ_ERR_SHAPE',
  );
  await rejects(
    openCalibration(MNIST, [mnistInput, { name: 'extra', dtype: 'float32', shape: [3] }]),
    `calibration sample ${MNIST}/test_data_set_0 has no data for input 'extra' (no ${MNIST}/test_data_set_0/input_1.pb)`,
  );
  await rejects(openCalibration(MNIST, []), 'the model has no inputs to calibrate with');
});

test('test_data_set folders made here: order, extra inputs, swapped names, NaN/Inf, truncation', async (t) => {
  const root = tempDir(t);
  const extra = path.join(root, 'extra', 'test_data_set_0');
  mkdirSync(extra, { recursive: true });
  writeFileSync(path.join(extra, 'input_0.pb'), tensorProto(null, [4], [1, 2, 3, 4]));
  writeFileSync(path.join(extra, 'input_1.pb'), tensorProto(null, [4], [1, 2, 3, 4]));
  await rejects(openCalibration(path.join(root, 'extra'), [mnistInput]), `calibration sample ${extra} has more inputs than the model's 1 (${extra}/input_1.pb)`);

  const dir = path.join(root, 'sets');
  const inputs = [{ name: 'a', dtype: 'float32', shape: ['n'] }, { name: 'b', dtype: 'float32', shape: [4] }];
  for (const [s, name] of ['test_data_set_10', 'test_data_set_2', 'test_data_set_02x'].entries()) {
    mkdirSync(path.join(dir, name), { recursive: true });
    writeFileSync(path.join(dir, name, 'input_0.pb'), tensorProto('a', [4], [s, 1, 2, 3]));
    writeFileSync(path.join(dir, name, 'input_1.pb'), tensorProto('', [4], [s, 1, 2, 3]));
  }
  const samples = await collect(await openCalibration(dir, inputs));
  assert.deepEqual(samples.map((s) => s.name), ['test_data_set_2', 'test_data_set_02x', 'test_data_set_10']);
  assert.deepEqual(Array.from(samples[0].feeds.a.data), [1, 1, 2, 3]);

  const set = path.join(dir, 'test_data_set_2');
  writeFileSync(path.join(set, 'input_1.pb'), tensorProto('a', [4], [0, 1, 2, 3]));
  await firstSampleFails(dir, inputs, `${set}/input_1.pb holds the tensor 'a', the model's input 0, but input_1.pb is input 1 ('b')`);
  writeFileSync(path.join(set, 'input_0.pb'), tensorProto('a', [4], [0, 1, NaN, 3]));
  writeFileSync(path.join(set, 'input_1.pb'), tensorProto(null, [4], [0, 1, NaN, 3]));
  await firstSampleFails(dir, inputs, `${set}/input_0.pb: element 2 of input 'a' is NaN (calibration data must be finite)`);
  writeFileSync(path.join(set, 'input_0.pb'), tensorProto('a', [4], [0, 1, 0, -Infinity]));
  await firstSampleFails(dir, inputs, `${set}/input_0.pb: element 3 of input 'a' is infinite (calibration data must be finite)`);
  const truncated = tensorProto(null, [4], [0, 1, 2, 3]).subarray(0, 20);
  writeFileSync(path.join(set, 'input_0.pb'), truncated);
  assert.throws(() => decodeTensorProto(truncated), TensorProtoError);
  await firstSampleFails(dir, inputs, `${set}/input_0.pb: TensorProto: truncated field`, 'WQ_ERR_PARSE');
});

test('.npy folders: one sample, several in natural order, symbolic dims, and every error', async (t) => {
  const root = tempDir(t);
  const inputs = [{ name: 'x', dtype: 'float32', shape: ['batch', 3] }, { name: 'ids/a:b', dtype: 'int64', shape: [2] }];
  const npy = (dir, file, dtype, dims, data) => writeFileSync(path.join(dir, file), encodeNpy({ dtype, dims, data }));
  const x1 = new Float32Array([1, 2, 3]);
  const x2 = new Float32Array([1, 2, 3, 4, 5, 6]);
  const ids = new BigInt64Array([7n, 9n]);

  const one = path.join(root, 'one');
  mkdirSync(one);
  npy(one, 'x.npy', 'float32', [1, 3], x1);
  npy(one, 'ids_a_b.npy', 'int64', [2], ids);
  writeFileSync(path.join(one, 'README.txt'), 'notes');
  const calib = await openCalibration(one, inputs);
  assert.equal(calib.count, 1);
  const [sample] = await collect(calib);
  assert.equal(sample.name, one);
  assert.deepEqual(sample.feeds.x, { dims: [1, 3], data: x1 });
  assert.deepEqual(sample.feeds['ids/a:b'], { dims: [2], data: ids });

  npy(one, 'y.npy', 'float32', [1, 3], x1);
  await rejects(openCalibration(one, inputs), `${one}/y.npy is named after no input of the model (expected: x.npy, ids_a_b.npy)`);
  mkdirSync(path.join(one, '0'));
  await rejects(openCalibration(one, inputs), `calibration folder ${one} holds both .npy files (ids_a_b.npy) and sample folders (0): use one layout`);

  const many = path.join(root, 'many');
  for (const [s, name] of ['10', '9', 'a'].entries()) {
    mkdirSync(path.join(many, name), { recursive: true });
    npy(path.join(many, name), 'x.npy', 'float32', s === 1 ? [2, 3] : [1, 3], s === 1 ? x2 : x1);
    npy(path.join(many, name), 'ids_a_b.npy', 'int64', [2], ids);
  }
  const samples = await collect(await openCalibration(many, inputs));
  assert.deepEqual(samples.map((s) => s.name), ['9', '10', 'a']);
  assert.deepEqual(samples.map((s) => s.feeds.x.dims[0]), [2, 1, 1]);

  rmSync(path.join(many, 'a', 'ids_a_b.npy'));
  await rejects(openCalibration(many, inputs), `calibration sample ${many}/a has no data for input 'ids/a:b' (no ${many}/a/ids_a_b.npy)`);
  rmSync(path.join(many, 'a'), { recursive: true });

  const first = path.join(many, '9');
  npy(first, 'ids_a_b.npy', 'int32', [2], new Int32Array([7, 9]));
  await firstSampleFails(many, inputs, `${first}/ids_a_b.npy: dtype int32, but the model's input 'ids/a:b' is int64`, 'WQ_ERR_SHAPE');
  npy(first, 'ids_a_b.npy', 'int64', [2], ids);
  npy(first, 'x.npy', 'float32', [3, 2], x2);
  await firstSampleFails(many, inputs, `${first}/x.npy: shape [3,2], but the model's input 'x' is [batch,3]`, 'WQ_ERR_SHAPE');
  npy(first, 'x.npy', 'float32', [6], x2);
  await firstSampleFails(many, inputs, `${first}/x.npy: shape [6], but the model's input 'x' is [batch,3]`, 'WQ_ERR_SHAPE');
  npy(first, 'x.npy', 'float32', [2, 3], new Float32Array([1, 2, 3, 4, 5, NaN]));
  await firstSampleFails(many, inputs, `${first}/x.npy: element 5 of input 'x' is NaN (calibration data must be finite)`);
  writeFileSync(path.join(first, 'x.npy'), 'hello');
  const calibBad = await openCalibration(many, inputs);
  await assert.rejects(collect(calibBad), (e) => e.code === 'WQ_ERR_PARSE' && e.message.startsWith(`${first}/x.npy: `));

  const empty = path.join(root, 'empty');
  mkdirSync(empty);
  await rejects(openCalibration(empty, inputs), `empty calibration set: ${empty} holds no test_data_set_* folder, no .npy file and no sample folder`);
  const missing = path.join(root, 'does-not-exist');
  await rejects(openCalibration(missing, inputs), `cannot open calibration folder ${missing}: No such file or directory`, 'WQ_ERR_IO');
});

test('random:N:LO..HI: seed k*nInputs+i per input, float mapped to [LO, HI), batch dim 1, and refusals', async () => {
  const inputs = [{ name: 'a', dtype: 'float32', shape: ['n', 3] }, { name: 'b', dtype: 'int64', shape: [2] }];
  const calib = await openCalibration('random:2:0..1', inputs);
  assert.equal(calib.count, 2);
  assert.deepEqual(calib.range, [0, 1]);
  const samples = await collect(calib);
  assert.deepEqual(samples.map((s) => s.name), ['random sample 0', 'random sample 1']);
  // The same numbers the native test expects from its generator.
  assert.deepEqual(Array.from(samples[0].feeds.a.data), [0.26642918586730957, 0.00032973289489746094, 0.22327202558517456]);
  assert.deepEqual(Array.from(samples[0].feeds.b.data), [7n, 3n]);
  assert.deepEqual(samples[0].feeds.a.dims, [1, 3]);
  assert.deepEqual(samples[1].feeds.a.data, randomArray('float32', 3, 2));
  assert.deepEqual(samples[1].feeds.b.data, randomArray('int64', 2, 3));
  // [-1, 1): -1 + 2x in double, rounded once (the native test's values).
  const [wide] = await collect(await openCalibration('random:1:-1..1', inputs));
  assert.equal(wide.feeds.a.data[0], Math.fround(-1 + 2 * 0.26642918586730957));
  assert.equal(wide.feeds.a.data[1], Math.fround(-1 + 2 * 0.00032973289489746094));
  assert.deepEqual(Array.from(wide.feeds.b.data), [7n, 3n]);

  await rejects(openCalibration('random:0', inputs), 'empty calibration set: random:0');
  for (const bad of ['', '5x', '-3']) {
    await rejects(openCalibration(`random:${bad}`, inputs), `--calib random:N:LO..HI expects N in 1..1000000, got random:${bad}`);
  }
  await rejects(
    openCalibration('random:4', inputs),
    "--calib random:4 needs the range of the model's float inputs: random:4:LO..HI (e.g. random:4:0..1, random:4:-1..1, random:4:0..255); real samples (--calib DIR) calibrate far better",
  );
  for (const bad of ['1..1', '2..1', '0..', '..1', '0..x', '0-1', 'a..1']) {
    await rejects(openCalibration(`random:4:${bad}`, inputs), `--calib random:N:LO..HI expects a range such as -1..1 (LO < HI), got '${bad}'`);
  }
  await rejects(
    openCalibration('random:1:0..1', [{ name: 'x', dtype: 'float32', shape: ['N', 3, 'H', 192] }]),
    "input 'x' has the symbolic dim 'H' (dim 2): random data needs it bound, e.g. --shape x=1x3x224x224 with the size the model expects, or real samples (--calib DIR)",
  );
  await rejects(
    openCalibration('random:1:0..1', [{ name: 'u', dtype: 'float32', shape: null }]),
    "input 'u' (float32) has no declared shape or a dtype random data cannot fill: give --calib DIR",
  );
});
