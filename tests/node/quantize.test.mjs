// `wasmq quantize` (native CLI): float ONNX in, QDQ ONNX out. The files it
// writes must load in onnxruntime-node, and our lowered int8 run of them must
// agree with onnxruntime's run within one output quantization step on
// >= 99.9% of the output elements; every compute node runs int8 after
// lowering; mnist-8 keeps its predictions; bad input fails with a clear
// message and writes nothing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { load } from '../../src/js/index.mjs';
import { encodeNpy, parseNpy } from '../../src/js/npy.mjs';
import { encodeModel } from '../models/qdq_builder.mjs';
import { randomArray } from '../../src/js/random.mjs';
import { MODELS, NATIVE_CLI, REPO, argmax, dataSetDirs, readDataSet } from './helpers.mjs';

const ort = createRequire(import.meta.url)('onnxruntime-node');
const ORT_OPTIONS = { logSeverityLevel: 3, extra: { session: { x64quantprecision: '1' } } };
const tmp = mkdtempSync(path.join(os.tmpdir(), 'wq-quantize-'));
process.on('exit', () => rmSync(tmp, { recursive: true, force: true }));

function quantize(model, extra = []) {
  const out = path.join(tmp, `${path.basename(path.dirname(model))}-${path.basename(model)}`);
  const report = `${out}.json`;
  const r = spawnSync(NATIVE_CLI, ['quantize', model, '-o', out, '--report', report, ...extra], { encoding: 'utf8' });
  assert.equal(r.status, 0, `quantize ${model} failed: ${r.stderr}`);
  return { bytes: readFileSync(out), report: JSON.parse(readFileSync(report, 'utf8')), stdout: r.stdout, out };
}

function runCli(args) {
  return spawnSync(NATIVE_CLI, args, { encoding: 'utf8' });
}

// Output elements within one step of the output's quantization scale.
// An output left float (computed by a float node) has no step of its own:
// `floatStep` stands in for it.
async function agreement(bytes, report, feedsList, floatStep = 0) {
  const model = await load(bytes);
  const session = await ort.InferenceSession.create(bytes, ORT_OPTIONS);
  let total = 0;
  let within = 0;
  let worst = 0;
  try {
    for (const feeds of feedsList) {
      const ours = await model.run(feeds);
      const ortFeeds = {};
      for (const [name, v] of Object.entries(feeds)) ortFeeds[name] = new ort.Tensor('float32', v.data, v.dims);
      const theirs = await session.run(ortFeeds);
      for (const name of Object.keys(theirs)) {
        const t = report.tensors.find((x) => x.name === name) ?? (floatStep ? { scale: floatStep } : null);
        assert.ok(t, `report names the output '${name}'`);
        const a = ours[name].data;
        const b = theirs[name].data;
        assert.equal(a.length, b.length);
        for (let i = 0; i < a.length; i++) {
          const steps = Math.abs(a[i] - b[i]) / t.scale;
          worst = Math.max(worst, steps);
          total++;
          if (steps <= 1 + 1e-3) within++;
        }
      }
    }
    const graph = model.graph();
    const compute = graph.nodes.filter((n) => n.role === 'compute');
    const floatNodes = compute.filter((n) => n.backend === 'float').map((n) => `${n.op} ${n.name}`);
    return { fraction: within / total, worst, floatNodes, computeNodes: compute.length, model };
  } catch (e) {
    model.dispose();
    throw e;
  }
}

const mnist = path.join(MODELS, 'mnist-8/model.onnx');

// The ten bundled demo digits (drawn for the demo, not from mnist-8's test
// sets), one .npy folder per sample: calibration disjoint from evaluation.
function digitsCalibration() {
  const digits = parseNpy(readFileSync(path.join(REPO, 'demo/digits.npy')));
  const dir = path.join(tmp, 'digits');
  for (let k = 0; k < digits.dims[0]; k++) {
    const data = Float32Array.from(digits.data.subarray(k * 784, (k + 1) * 784));
    mkdirSync(path.join(dir, String(k)), { recursive: true });
    writeFileSync(path.join(dir, String(k), 'Input3.npy'), encodeNpy({ dtype: 'float32', dims: [1, 1, 28, 28], data }));
  }
  return dir;
}
const smallcnn = path.join(MODELS, 'synthetic/smallcnn_f32.onnx');

test('mnist-8: onnxruntime runs the quantized file, our int8 run agrees within one step, no float node, predictions kept', async () => {
  const { bytes, report } = quantize(mnist, ['--calib', digitsCalibration()]);
  assert.equal(report.nodesFloat, 0);
  assert.equal(report.samples, 10);
  const sets = dataSetDirs(path.join(MODELS, 'mnist-8')).map(readDataSet);
  const feedsList = sets.map((s) => ({ Input3: { data: s.inputs[0].data, dims: s.inputs[0].dims } }));
  const { fraction, worst, floatNodes, computeNodes, model } = await agreement(bytes, report, feedsList);
  try {
    console.log(`mnist-8: ${(fraction * 100).toFixed(2)}% within one step (worst ${worst.toFixed(2)} steps), ${computeNodes} compute nodes`);
    assert.ok(fraction >= 0.999, `only ${fraction} of outputs within one step`);
    assert.deepEqual(floatNodes, []);
    for (const s of sets) {
      const out = (await model.run({ Input3: { data: s.inputs[0].data, dims: s.inputs[0].dims } })).Plus214_Output_0;
      assert.equal(argmax(out.data), argmax(s.outputs[0].data), 'prediction changed');
    }
  } finally {
    model.dispose();
  }
});

test('smallcnn: onnxruntime agrees within one step, every compute node int8', async () => {
  const { bytes, report } = quantize(smallcnn, ['--calib', 'random:16:0..1']);
  const session = await ort.InferenceSession.create(readFileSync(smallcnn));
  const input = session.inputNames[0];
  const meta = await load(readFileSync(smallcnn));
  const declared = meta.inputs[0].shape.map((d) => (typeof d === 'number' && d > 0 ? d : 1));
  meta.dispose();
  const feedsList = [101, 102, 103].map((seed) => ({
    [input]: { data: randomArray('float32', declared.reduce((a, b) => a * b, 1), seed), dims: declared },
  }));
  const { fraction, worst, floatNodes, model } = await agreement(bytes, report, feedsList);
  model.dispose();
  console.log(`smallcnn: ${(fraction * 100).toFixed(2)}% within one step (worst ${worst.toFixed(2)})`);
  assert.ok(fraction >= 0.999, `only ${fraction} within one step`);
  assert.deepEqual(floatNodes, []);
  assert.equal(report.nodesFloat, 0);
});

test('the same model, config and samples give the same bytes', () => {
  const a = quantize(mnist, ['--calib', 'random:4:0..1']).bytes;
  const b = quantize(mnist, ['--calib', 'random:4:0..1']).bytes;
  assert.ok(a.equals(b));
});

test('report: per-node decisions, qparams and sensitivity; --keep-float 2 keeps the two lowest-SNR nodes float', () => {
  const { report } = quantize(mnist, ['--calib', 'random:8:0..1']);
  const measured = report.nodes.filter((n) => n.decision === 'quantized');
  assert.ok(measured.length >= 5);
  for (const n of measured) assert.ok(Number.isFinite(n.snrDb) && n.snrDb > 10, `${n.name} snr ${n.snrDb}`);
  for (const t of report.tensors) {
    assert.ok(t.scale > 0 && Number.isInteger(t.zeroPoint));
    assert.ok(t.zeroPoint >= -128 && t.zeroPoint <= 127);
  }
  assert.ok(report.outputSnrDb > 20, `output SNR ${report.outputSnrDb}`);
  const lowest = [...measured].sort((x, y) => x.snrDb - y.snrDb).slice(0, 1).map((n) => n.name);
  const kept = quantize(mnist, ['--calib', 'random:8:0..1', '--keep-float', '2']).report;
  assert.equal(kept.keptFloat, 2);
  // The two chosen by sensitivity; nodes left without a linear neighbour in
  // int8 (a MaxPool between two float convs) follow them into float.
  const floatNames = kept.nodes.filter((n) => /most sensitive/.test(n.reason)).map((n) => n.name);
  assert.equal(floatNames.length, 2);
  for (const n of kept.nodes.filter((x) => x.decision === 'float' && !floatNames.includes(x.name))) {
    assert.match(n.reason, /island/);
  }
  assert.ok(floatNames.includes(lowest[0]), `${lowest[0]} (lowest SNR) stays float: ${floatNames}`);
  // A target output SNR above what full int8 reaches: nodes go float, most
  // sensitive first, until it is met (or nothing is left to move).
  const target = Math.ceil(report.outputSnrDb) + 3;
  const snr = quantize(mnist, ['--calib', 'random:8:0..1', '--target-snr', String(target)]).report;
  assert.ok(snr.keptFloat >= 1);
  assert.ok(snr.outputSnrDb >= target || snr.nodesQuantized === 0, `${snr.outputSnrDb} dB with ${snr.keptFloat} kept float`);
  console.log(`mnist-8 target ${target} dB: ${snr.keptFloat} node(s) kept float, output SNR ${snr.outputSnrDb} dB (all int8: ${report.outputSnrDb} dB)`);
});

test('bad input: already quantized, unwritable output, empty calibration folder, unknown node or op in the config', () => {
  const out = path.join(tmp, 'never.onnx');
  const quantized = runCli(['quantize', path.join(MODELS, 'synthetic/smallcnn_qdq.onnx'), '-o', out, '--calib', 'random:1:0..1']);
  assert.equal(quantized.status, 2);
  assert.match(quantized.stderr, /already quantized/);
  const unwritable = runCli(['quantize', mnist, '-o', path.join(tmp, 'no/such/dir/x.onnx'), '--calib', 'random:1:0..1']);
  assert.equal(unwritable.status, 2);
  assert.match(unwritable.stderr, /no\/such\/dir/);
  const empty = path.join(tmp, 'empty');
  mkdirSync(empty, { recursive: true });
  const noData = runCli(['quantize', mnist, '-o', out, '--calib', empty]);
  assert.equal(noData.status, 2);
  assert.match(noData.stderr, /empty|no calibration|no sample/i);
  const cfg = path.join(tmp, 'cfg.json');
  writeFileSync(cfg, JSON.stringify({ exclude: ['NoSuchNode'] }));
  const node = runCli(['quantize', mnist, '-o', out, '--config', cfg, '--calib', 'random:1:0..255']);
  assert.equal(node.status, 2);
  assert.match(node.stderr, /NoSuchNode/);
  writeFileSync(cfg, JSON.stringify({ ops: { NoSuchOp: { keepFloat: true } } }));
  const op = runCli(['quantize', mnist, '-o', out, '--config', cfg, '--calib', 'random:1:0..255']);
  assert.equal(op.status, 2);
  assert.match(op.stderr, /NoSuchOp/);
  assert.equal(existsSync(out), false, 'nothing written on failure');
});

// Issue #9's seed scenario: the cluster Reshape -> Concat touches only IO
// tensors and the Conv; with uint8 IO (whose parameters are not propagated
// into the graph) it is still quantized with the activation spec, and after
// lowering no node of the graph runs float.
test('uint8 image input -> Reshape -> Concat(second input) -> Conv -> output, io uint8: no float node', async () => {
  const w = randomArray('float32', 4 * 5 * 3 * 3, 5).map((v) => (v - 0.5) * 0.6);
  const bytes = encodeModel({
    nodes: [
      { op: 'Reshape', name: 'reshape', inputs: ['image', 'shape'], outputs: ['r'] },
      { op: 'Concat', name: 'concat', inputs: ['r', 'extra'], outputs: ['c'], attrs: { axis: 1 } },
      { op: 'Conv', name: 'conv', inputs: ['c', 'w', 'b'], outputs: ['y'], attrs: { pads: [1, 1, 1, 1] } },
    ],
    initializers: [
      { name: 'shape', dtype: 'int64', dims: [4], data: BigInt64Array.from([1n, 3n, 8n, 8n]) },
      { name: 'w', dtype: 'float', dims: [4, 5, 3, 3], data: w },
      { name: 'b', dtype: 'float', dims: [4], data: Float32Array.from([0.1, -0.1, 0.2, 0]) },
    ],
    inputs: [
      { name: 'image', dtype: 'float', shape: [1, 192] },
      { name: 'extra', dtype: 'float', shape: [1, 2, 8, 8] },
    ],
    outputs: [{ name: 'y', dtype: 'float', shape: [1, 4, 8, 8] }],
    opset: 13,
  });
  const file = path.join(tmp, 'seed_scenario.onnx');
  writeFileSync(file, bytes);
  const cfg = path.join(tmp, 'io_uint8.json');
  writeFileSync(cfg, JSON.stringify({ io: 'uint8' }));
  const { bytes: q, report } = quantize(file, ['--calib', 'random:8:0..1', '--config', cfg]);
  assert.equal(report.nodesFloat, 0);
  const model = await load(q);
  try {
    assert.deepEqual(model.inputs.map((t) => t.dtype), ['uint8', 'uint8']);
    assert.equal(model.outputs[0].dtype, 'uint8');
    const compute = model.graph().nodes.filter((n) => n.role === 'compute');
    assert.ok(compute.length >= 3, `${compute.length} compute nodes`);
    assert.deepEqual(compute.filter((n) => n.backend === 'float').map((n) => `${n.op} ${n.name}`), []);
    const image = Uint8Array.from(randomArray('float32', 192, 7), (v) => Math.floor(v * 256));
    const extra = Uint8Array.from(randomArray('float32', 128, 8), (v) => Math.floor(v * 256));
    const ours = (await model.run({ image: { data: image, dims: [1, 192] }, extra: { data: extra, dims: [1, 2, 8, 8] } })).y.data;
    const session = await ort.InferenceSession.create(q, ORT_OPTIONS);
    const theirs = (await session.run({ image: new ort.Tensor('uint8', image, [1, 192]), extra: new ort.Tensor('uint8', extra, [1, 2, 8, 8]) })).y.data;
    let worst = 0;
    for (let i = 0; i < ours.length; i++) worst = Math.max(worst, Math.abs(ours[i] - theirs[i]));
    assert.ok(worst <= 1, `uint8 output codes differ by ${worst}`);
  } finally {
    model.dispose();
  }
});

// Per-group weights (config weight granularity "per-group"): a blocked
// DequantizeLinear (opset 21, block_size along K). wasmq runs such a linear
// in float (its int8 kernels take per-tensor or per-channel weights);
// onnxruntime 1.30 runs the file at optimization level 'basic' (at 'all' its
// QLinearMatMul fusion refuses blocked zero points). Both agree within one output step.
test('per-group weights: opset 21 blocked DequantizeLinear, within one step of onnxruntime', async () => {
  const cfg = path.join(tmp, 'per_group.json');
  writeFileSync(cfg, JSON.stringify({ ops: { MatMul: { weight: { granularity: 'per-group', groupSize: 32 } } } }));
  const { bytes, report } = quantize(path.join(MODELS, 'synthetic/matmul_256x256x256_f32.onnx'), ['--calib', 'random:2:0..1', '--config', cfg]);
  const session = await ort.InferenceSession.create(bytes, { logSeverityLevel: 3, graphOptimizationLevel: 'basic' });
  const model = await load(bytes);
  try {
    const dims = model.inputs[0].shape;
    const data = randomArray('float32', dims.reduce((a, b) => a * b, 1), 11);
    const ours = (await model.run({ [model.inputs[0].name]: { data, dims } }))[model.outputs[0].name].data;
    const theirs = (await session.run({ [model.inputs[0].name]: new ort.Tensor('float32', data, dims) }))[model.outputs[0].name].data;
    // Both run the float MatMul; its rounding may move a value across a
    // rounding boundary of the output's QuantizeLinear: one step at most.
    const step = report.tensors.find((t) => t.name === model.outputs[0].name).scale;
    let worst = 0;
    for (let i = 0; i < ours.length; i++) worst = Math.max(worst, Math.abs(ours[i] - theirs[i]) / step);
    assert.ok(worst <= 1 + 1e-3, `${worst} steps apart`);
    const matmul = model.graph().nodes.find((n) => n.op === 'MatMul');
    assert.equal(matmul?.backend, 'float', 'a per-group linear runs in float');
  } finally {
    model.dispose();
  }
});

// A real model with symbolic input dims ([batch, 4, height, width]): the
// written QDQ file keeps them, our loader still lowers every node to int8
// (shape probes through the symbolic dims): its bilinear Resizes run on the
// codes and the final Sigmoid is a lookup, so the mask is 8-bit. Against the
// float model (onnxruntime) the mask stays within 0.01 and every pixel on
// the same side of 0.5. onnxruntime's own run of the QDQ file differs from
// ours where a conv's float rounding moves a code (the scales are not powers
// of two) and the steep part of the Sigmoid magnifies it: most outputs agree
// within one step.
test('teams-segmentation (symbolic dims): every node int8 (bilinear Resizes on codes), within 0.01 of the float model', async () => {
  const dir = path.join(MODELS, 'teams-segmentation-msra190729');
  const { bytes, report } = quantize(path.join(dir, 'model.onnx'), ['--calib', dir]);
  assert.deepEqual(report.nodes.filter((n) => n.decision === 'float').map((n) => n.op), []);
  const set = readDataSet(dataSetDirs(dir)[0]);
  const feeds = { bgrm: { data: set.inputs[0].data, dims: set.inputs[0].dims } };
  const step = report.tensors.find((t) => t.name === 'mask').scale;
  const { fraction, worst, floatNodes, model } = await agreement(bytes, report, [feeds], step);
  try {
    console.log(`teams: ${(fraction * 100).toFixed(3)}% within one step of onnxruntime (worst ${worst.toFixed(2)})`);
    assert.ok(fraction >= 0.9, `only ${fraction} within one step`);
    assert.deepEqual(floatNodes, []);
    const session = await ort.InferenceSession.create(readFileSync(path.join(dir, 'model.onnx')), ORT_OPTIONS);
    const ref = (await session.run({ bgrm: new ort.Tensor('float32', feeds.bgrm.data, feeds.bgrm.dims) })).mask.data;
    const ours = (await model.run(feeds)).mask.data;
    let worstAbs = 0, flipped = 0;
    for (let i = 0; i < ref.length; i++) {
      worstAbs = Math.max(worstAbs, Math.abs(ours[i] - ref[i]));
      if (ours[i] > 0.5 !== ref[i] > 0.5) flipped++;
    }
    assert.ok(worstAbs <= 0.01, `mask ${worstAbs} from the float model`);
    assert.equal(flipped, 0);
  } finally {
    model.dispose();
  }
});
