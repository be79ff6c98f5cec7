// The npm quantize() (src/js/quantize.mjs, the quant wasm build) and
// `npx wasmq quantize`: mnist-8 quantized in wasm with its own test data
// sets as calibration; the QDQ file runs in onnxruntime-node and in our
// lowered int8 path, and the two agree within one output quantization step;
// the bytes equal the native CLI's; bad input is a WasmqError that says what.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync, mkdirSync, existsSync, mkdtempSync, rmSync, readdirSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import * as ort from 'onnxruntime-node';
import { quantize, load, WasmqError } from '../../src/js/index.mjs';
import { openCalibration } from '../../src/js/calib.mjs';
import { getCore, getQuantCore } from '../../src/js/core.mjs';
import { parseNpy, encodeNpy } from '../../src/js/npy.mjs';
import { CLI, MODELS, NATIVE_CLI, REPO, readDataSet, argmax } from './helpers.mjs';

const MNIST_DIR = path.join(MODELS, 'mnist-8');
const MNIST = path.join(MNIST_DIR, 'model.onnx');
const mnistBytes = readFileSync(MNIST);

/** Every test set's input plus the 10 bundled digits, as feeds. */
function mnistEvalFeeds() {
  const feeds = [0, 1, 2].map((k) => {
    const { inputs } = readDataSet(path.join(MNIST_DIR, `test_data_set_${k}`));
    return { Input3: { data: inputs[0].data, dims: inputs[0].dims } };
  });
  const d = parseNpy(readFileSync(path.join(REPO, 'demo/digits.npy')));
  for (let k = 0; k < d.dims[0]; k++) {
    feeds.push({ Input3: { data: Float32Array.from(d.data.subarray(k * 784, (k + 1) * 784)), dims: [1, 1, 28, 28] } });
  }
  return feeds;
}

/** quantize() of mnist-8 calibrated on its test_data_set_* folders (as `--calib MNIST_DIR`). */
async function quantizeMnist(options = {}) {
  const q = await quantize(mnistBytes, options);
  try {
    const calib = await openCalibration(MNIST_DIR, q.inputs);
    for await (const s of calib) await q.observe(s.feeds);
    return await q.finish();
  } finally {
    q.dispose();
  }
}

let cached = null;
const mnistResult = () => (cached ??= quantizeMnist());

/** The scale of the int8 tensor the graph output is dequantized from (model.graph()). */
function outputStep(model) {
  const g = model.graph();
  const out = g.tensors[g.outputs[0]];
  const dq = g.nodes[out.producer];
  const scale = g.tensors[dq.inputs[0]].qparams?.scale;
  assert.ok(scale && scale.length === 1, `output ${out.name} comes from a per-tensor quantized tensor (producer ${dq.op})`);
  return scale[0];
}

// The CLIs' progress lines ("wasmq: STEP (N s)", for steps past 2 s) depend
// on the machine's speed: left out where stderr is compared exactly.
const noProgress = (text) => text.replace(/^wasmq: [^\n]* \(\d+ s\)\n/gm, '');

test('quantize() mnist-8 in wasm: the QDQ file loads in onnxruntime-node and in load(); int8 agrees with onnxruntime within one output step', async () => {
  const progress = [];
  const q = await quantize(mnistBytes, { onProgress: (p) => progress.push(p) });
  assert.deepEqual(q.inputs, [{ name: 'Input3', dtype: 'float32', shape: [1, 1, 28, 28] }]);
  const calib = await openCalibration(MNIST_DIR, q.inputs);
  const samples = [];
  for await (const s of calib) samples.push(s.feeds);
  assert.equal(await q.observeAll(samples), 3);
  assert.equal(q.samples, 3);
  assert.deepEqual(progress, [1, 2, 3].map((done) => ({ done, total: 3 })));
  const { onnx, report, summary } = await q.finish();
  q.dispose();
  assert.ok(onnx instanceof Uint8Array && onnx.length > 1000);
  assert.equal(typeof report, 'object');
  assert.match(summary, /quantized \d+ of \d+/);

  // The oracle without graph rewrites: its fused x64 int8 path (u8s8 on AVX2
  // without VNNI) saturates pair sums and is not the QDQ semantics.
  const session = await ort.InferenceSession.create(onnx, { graphOptimizationLevel: 'disabled' });
  const int8 = await load(onnx);
  const float = await load(mnistBytes);
  try {
    const g = int8.graph();
    const compute = g.nodes.filter((n) => n.role === 'compute');
    assert.deepEqual(compute.filter((n) => n.backend === 'float').map((n) => `${n.name} (${n.op})`), [], 'no float compute node in mnist-8');
    const step = outputStep(int8);
    assert.ok(step > 0, `output step ${step}`);
    let within = 0;
    let total = 0;
    for (const feeds of mnistEvalFeeds()) {
      const ours = (await int8.run(feeds)).Plus214_Output_0.data;
      const theirs = (await session.run({ Input3: new ort.Tensor('float32', feeds.Input3.data, [1, 1, 28, 28]) })).Plus214_Output_0.data;
      const want = (await float.run(feeds)).Plus214_Output_0.data;
      for (let i = 0; i < ours.length; i++) if (Math.abs(ours[i] - theirs[i]) <= step * 1.0001) within++;
      total += ours.length;
      // The prediction is the float model's, on the test sets and on every bundled digit.
      assert.equal(argmax(ours), argmax(want));
    }
    assert.ok(within / total >= 0.999, `${within}/${total} output elements within one step (${step}) of onnxruntime`);
  } finally {
    int8.dispose();
    float.dispose();
    await session.release();
  }
});

test('quantize(): the same samples give the same bytes; a config object and its JSON text are the same config', async () => {
  const a = await mnistResult();
  const b = await quantizeMnist();
  assert.deepEqual(b.onnx, a.onnx);
  assert.equal(b.reportJson, a.reportJson);
  const config = { calibration: { method: 'percentile', percentile: 99.9 } };
  const c = await quantizeMnist({ config });
  const d = await quantizeMnist({ config: JSON.stringify(config, null, 2) });
  assert.deepEqual(d.onnx, c.onnx);
  assert.notDeepEqual(c.onnx, a.onnx, 'percentile ranges differ from min/max ones');
});

test('npx wasmq quantize: the same ONNX and report bytes as quantize() and as the native command', async (t) => {
  const { onnx, reportJson, summary } = await mnistResult();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'wasmq-quantize-'));
  // Each command writes out.onnx / report.json in its own folder (the same relative paths, so the same stdout).
  const run = (cmd, args, name) => {
    mkdirSync(path.join(dir, name));
    return spawnSync(cmd, args, { encoding: 'utf8', cwd: path.join(dir, name) });
  };
  const read = (name, file) => readFileSync(path.join(dir, name, file));
  try {
    const args = ['quantize', MNIST, '-o', 'out.onnx', '--calib', MNIST_DIR, '--report', 'report.json'];
    const js = run(process.execPath, [CLI, ...args], 'js');
    assert.equal(js.status, 0, js.stderr);
    // No progress bar when stderr is not a terminal; the warning that three
    // samples leave none for the held-out evaluation (one in four is held apart).
    assert.equal(noProgress(js.stderr), 'wasmq: warning: accuracy not measured: no sample was held apart (3 sample(s); one in 4 is held apart, so give at least 4)\n');
    assert.equal(js.stdout, `wrote out.onnx (${onnx.length} bytes): ${summary}\n`);
    assert.deepEqual(new Uint8Array(read('js', 'out.onnx')), onnx);
    assert.equal(read('js', 'report.json').toString('utf8'), reportJson);
    assert.deepEqual(readdirSync(path.join(dir, 'js')).sort(), ['out.onnx', 'report.json'], 'no temp file left');
    if (!existsSync(NATIVE_CLI)) {
      t.diagnostic(`native CLI not built (${NATIVE_CLI}): byte comparison with it skipped`);
      return;
    }
    const native = run(NATIVE_CLI, args, 'c');
    assert.equal(native.status, 0, native.stderr);
    assert.equal(js.stdout, native.stdout);
    assert.equal(noProgress(js.stderr), noProgress(native.stderr));
    assert.deepEqual(read('js', 'out.onnx'), read('c', 'out.onnx'));
    assert.equal(read('js', 'report.json').toString('utf8'), read('c', 'report.json').toString('utf8'));
    // random:N:LO..HI calibration, --keep-float, --target-snr, --target-cosine and a config file.
    writeFileSync(path.join(dir, 'config.json'), JSON.stringify({ activation: { dtype: 'uint8' }, calibration: { method: 'mse' } }));
    // .npy sample folders: the bundled digits, one folder each.
    const npyDir = path.join(dir, 'digits');
    mnistEvalFeeds().slice(3).forEach(({ Input3 }, k) => {
      mkdirSync(path.join(npyDir, `d${k}`), { recursive: true });
      writeFileSync(path.join(npyDir, `d${k}`, 'Input3.npy'), encodeNpy({ dtype: 'float32', dims: Input3.dims, data: Input3.data }));
    });
    const TEAMS = path.join(MODELS, 'teams-segmentation-msra190729/model.onnx');
    // Ten small teams frames without --shape: the first binds the symbolic
    // dims, the first eight calibration samples decide the equalization.
    const teamsDir = path.join(dir, 'frames');
    for (let k = 0; k < 10; k++) {
      mkdirSync(path.join(teamsDir, `f${k}`), { recursive: true });
      const data = new Float32Array(4 * 32 * 48).map((_, i) => (i < 3 * 32 * 48 ? (((i * 7 + k * 13) % 97) / 96) * (1 + (i % 3)) / 3 : 0));
      writeFileSync(path.join(teamsDir, `f${k}`, 'bgrm.npy'), encodeNpy({ dtype: 'float32', dims: [1, 4, 32, 48], data }));
    }
    const variants = [
      [MNIST, '--calib', 'random:4:0..1', '--keep-float', '1'],
      [MNIST, '--calib', npyDir],
      [MNIST, '--calib', 'random:8:0..255', '--target-snr', '45', '--config', path.join(dir, 'config.json')],
      [MNIST, '--calib', 'random:8:0..255', '--target-cosine', '0.9999', '--max-time', '100'],
      // Symbolic dims (batch, height, width) bound for calibration.
      [TEAMS, '--shape', 'bgrm=1x4x32x48', '--calib', 'random:2:0..1'],
      [TEAMS, '--calib', teamsDir],
    ];
    for (const [k, [model, ...extra]] of variants.entries()) {
      const more = ['quantize', model, '-o', 'out.onnx', '--report', 'report.json', ...extra];
      const a = run(process.execPath, [CLI, ...more], `js${k}`);
      const b = run(NATIVE_CLI, more, `c${k}`);
      assert.equal(a.status, 0, a.stderr);
      assert.equal(b.status, 0, b.stderr);
      assert.equal(a.stdout, b.stdout);
      assert.deepEqual(read(`js${k}`, 'out.onnx'), read(`c${k}`, 'out.onnx'), extra.join(' '));
      assert.deepEqual(read(`js${k}`, 'report.json'), read(`c${k}`, 'report.json'), extra.join(' '));
    }
    const bound = JSON.parse(read(`js${variants.length - 1}`, 'report.json'));
    assert.ok(bound.equalized >= 20, `equalized ${bound.equalized}`);
    assert.ok(bound.warnings.some((w) => w.startsWith("symbolic input dims were bound to the first calibration sample's sizes")), bound.warnings.join('\n'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('npx wasmq quantize and the native command fail alike: same stderr line and exit code', async (t) => {
  if (!existsSync(NATIVE_CLI)) {
    t.skip(`native CLI not built (${NATIVE_CLI})`);
    return;
  }
  const dir = mkdtempSync(path.join(os.tmpdir(), 'wasmq-quantize-bad-'));
  try {
    const badConfig = path.join(dir, 'bad.json');
    writeFileSync(badConfig, '{\n  "calibration": {"bin": 10}\n}\n');
    const emptyDir = path.join(dir, 'empty');
    mkdirSync(emptyDir);
    const out = path.join(dir, 'out.onnx');
    const cases = [
      [MNIST],
      [MNIST, '-o'],
      [MNIST, '-o', out, '--keep-float', 'x'],
      [MNIST, '-o', out, '--target-snr', '300'],
      [MNIST, '-o', out, '--bogus'],
      [MNIST, '-o', out, '--shape', 'Input3=1xQ'],
      [MNIST, '-o', out, '--shape', 'Input3=1x1x28x27', '--calib', 'random:1:0..1'],
      [path.join(dir, 'missing.onnx'), '-o', out, '--calib', 'random:1:0..1'],
      [MNIST, '-o', out, '--config', badConfig, '--calib', 'random:1:0..1'],
      [MNIST, '-o', out, '--config', path.join(dir, 'missing.json'), '--calib', 'random:1:0..1'],
      // No calibration data, or random data without its range: refused, never a silent guess.
      [MNIST, '-o', out],
      [MNIST, '-o', out, '--calib', 'random:4'],
      [MNIST, '-o', out, '--calib', 'random:4:1..0'],
      [MNIST, '-o', out, '--calib', 'random:4:0..1', '--target-cosine', '1.5'],
      [MNIST, '-o', out, '--calib', 'random:4:0..1', '--max-time', '-1'],
      // A symbolic image size random data cannot guess names --shape.
      [path.join(MODELS, 'ppocr-mobile-v2-cls/model.onnx'), '-o', out, '--calib', 'random:2:-1..1'],
      [MNIST, '-o', out, '--calib', emptyDir],
      [MNIST, '-o', out, '--calib', 'random:0:0..1'],
      [path.join(MODELS, 'synthetic/smallcnn_qdq.onnx'), '-o', out, '--calib', 'random:1:0..1'],
      [MNIST, '-o', path.join(dir, 'no/such/dir/out.onnx'), '--calib', 'random:1:0..1'],
    ];
    for (const args of cases) {
      const js = spawnSync(process.execPath, [CLI, 'quantize', ...args], { encoding: 'utf8' });
      const c = spawnSync(NATIVE_CLI, ['quantize', ...args], { encoding: 'utf8' });
      const what = args.join(' ');
      assert.notEqual(c.status, 0, what);
      assert.equal(js.status, c.status, `exit code of ${what}: ${js.stderr}`);
      assert.equal(noProgress(js.stderr), noProgress(c.stderr), what);
      assert.equal(js.stdout, c.stdout, what);
    }
    assert.deepEqual(readdirSync(dir).sort(), ['bad.json', 'empty'], 'nothing written, no temp file left');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

async function throwsWasmq(promise, { code, message, node }) {
  await assert.rejects(promise, (e) => {
    assert.ok(e instanceof WasmqError, `${e?.name}: ${e?.message}`);
    if (code) assert.equal(e.code, code, e.message);
    if (node !== undefined) assert.equal(e.node, node, e.message);
    assert.match(e.message, message);
    return true;
  });
}

test('quantize(): bad input throws WasmqError saying what and where', async () => {
  // A model that is already quantized, naming its first quantized node.
  await throwsWasmq(quantize(readFileSync(path.join(MODELS, 'mnist-8-dynamic-int8/model.onnx'))), {
    code: 'WQ_ERR_INVALID_ARG',
    node: 'Input3_QuantizeLinear',
    message: /already quantized/,
  });
  await throwsWasmq(quantize(path.join(MODELS, 'synthetic/smallcnn_qdq.onnx')), { node: 'X_q_QuantizeLinear', message: /already quantized/ });
  // A config key the core does not know: the JSON path and position.
  await throwsWasmq(quantize(mnistBytes, { config: { calibration: { bin: 10 } } }), { code: 'WQ_ERR_INVALID_ARG', node: '', message: /^calibration\.bin: unknown key .*\(at 1:\d+\)$/ });
  await throwsWasmq(quantize(mnistBytes, { config: '{"activation": {"qmin": -200}' }), { code: 'WQ_ERR_INVALID_ARG', message: /^1:\d+: / });
  await throwsWasmq(quantize(mnistBytes, { config: { exclude: ['NoSuchNode'] } }), { code: 'WQ_ERR_INVALID_ARG', message: /^exclude\[0\]: .*NoSuchNode/ });
  await throwsWasmq(quantize(mnistBytes, { config: { ops: { Convolution: {} } } }), { code: 'WQ_ERR_INVALID_ARG', message: /^ops\.Convolution: unknown op type/ });
  await throwsWasmq(quantize(mnistBytes, { config: [1, 2] }), { code: 'WQ_ERR_INVALID_ARG', message: /config must be an object or a JSON string/ });
  await throwsWasmq(quantize(mnistBytes, { onProgress: 3 }), { message: /onProgress must be a function/ });

  // inputShapes bind symbolic dims (the samples then have that shape); a name that is no input is refused.
  const teams = path.join(MODELS, 'teams-segmentation-msra190729/model.onnx');
  const shaped = await quantize(teams, { inputShapes: { bgrm: [1, 4, 32, 48] } });
  assert.deepEqual(shaped.inputs[0].shape, [1, 4, 32, 48]);
  shaped.dispose();
  await throwsWasmq(quantize(teams, { inputShapes: { nope: [1] } }), { code: 'WQ_ERR_INVALID_ARG', message: /'nope', which is not a graph input/ });
  await throwsWasmq(quantize(teams, { inputShapes: { bgrm: [1, -4] } }), { message: /^quantize: inputShapes\['bgrm'\]: dims must be/ });

  const q = await quantize(mnistBytes);
  try {
    // Nothing observed yet: finish has no ranges.
    await throwsWasmq(q.finish(), { code: 'WQ_ERR_INVALID_ARG', message: /no calibration samples/ });
    // NaN in a sample: names the input; the ranges stay as they were.
    const nan = new Float32Array(784).fill(0.5);
    nan[17] = NaN;
    await throwsWasmq(q.observe({ Input3: nan }), { code: 'WQ_ERR_INVALID_ARG', message: /'Input3' has a non-finite value \(nan\) at element 17/ });
    assert.equal(q.samples, 0);
    await throwsWasmq(q.observe({ Input3: { data: new Float32Array(784).fill(Infinity), dims: [1, 1, 28, 28] } }), { message: /'Input3' has a non-finite value \(inf\) at element 0/ });
    // Wrong shape, wrong dtype, unknown and missing inputs (checked before the core is called).
    await throwsWasmq(q.observe({ Input3: { data: new Float32Array(28 * 27), dims: [1, 1, 28, 27] } }), {
      code: 'WQ_ERR_SHAPE',
      message: /^observe: input 'Input3' has dims \[1,1,28,27\], model expects \[1,1,28,28\]$/,
    });
    await throwsWasmq(q.observe({ Input3: new Uint8Array(784) }), { code: 'WQ_ERR_SHAPE', message: /needs a Float32Array, got Uint8Array/ });
    await throwsWasmq(q.observe({ image: new Float32Array(784) }), { message: /^observe: unknown input 'image' \(model inputs: Input3\)$/ });
    await throwsWasmq(q.observe({}), { message: /^observe: missing input 'Input3'$/ });
    assert.equal(q.samples, 0);
    // A good sample still works after the bad ones.
    await q.observe({ Input3: new Float32Array(784).fill(1) });
    assert.equal(q.samples, 1);
  } finally {
    q.dispose();
  }
  q.dispose(); // idempotent
  await throwsWasmq(q.observe({ Input3: new Float32Array(784) }), { code: 'WQ_ERR_DISPOSED', message: /disposed/ });
  await throwsWasmq(q.finish(), { code: 'WQ_ERR_DISPOSED', message: /disposed/ });
});

test('the quantizer stays out of the shipped runtime .wasm: only the quant build has it', async () => {
  const runtime = await getCore();
  const quant = await getQuantCore();
  assert.notEqual(runtime, quant);
  assert.equal(typeof runtime._wqx_load, 'function');
  assert.deepEqual(Object.keys(runtime).filter((k) => k.includes('quantizer')), []);
  for (const name of ['_wqx_quantizer_new', '_wqx_quantizer_observe', '_wqx_quantizer_finish', '_wqx_load', '_wqx_run']) assert.equal(typeof quant[name], 'function', name);
  const size = (file) => readFileSync(path.join(REPO, 'wasm_build/out', file)).length;
  assert.ok(size('wasmq-quant.wasm') > size('wasmq.wasm'));
});

test('quantize(): symbolic input dims take the first sample\'s sizes; a later sample of other sizes fails naming --shape', async () => {
  const q = await quantize(readFileSync(path.join(MODELS, 'teams-segmentation-msra190729/model.onnx')));
  try {
    const frame = (w) => ({ bgrm: { data: new Float32Array(4 * 32 * w).fill(0.5), dims: [1, 4, 32, w] } });
    await q.observe(frame(48));
    await assert.rejects(q.observe(frame(64)), (e) => e instanceof WasmqError && e.code === 'WQ_ERR_SHAPE' && /got \[1,4,32,64\]/.test(e.message) && /bound to the first calibration sample's sizes.*--shape/.test(e.message));
    const { report } = await q.finish();
    assert.ok(report.warnings.some((w) => w.startsWith("symbolic input dims were bound to the first calibration sample's sizes")));
  } finally {
    q.dispose();
  }
});
