// The ONNX writer through `wasmq rewrite` (native build): every model of
// ../shared/models and ../shared/models-int8 is rewritten (constants folded,
// written back by src/core/onnx/onnx_export.c) and the file must load in
// onnxruntime-node and give the outputs onnxruntime-node gives for the
// original, on the same seeded input (mulberry32 seed 0, src/js/random.mjs;
// symbolic dims: batch 1, spatial 64):
//   - plain rewrite: bit-identical outputs;
//   - --prepare (BatchNormalization, Mul and Add folded into the linears):
//     |rewritten - original| <= 1e-4 * max|original| per output (the folds
//     change float rounding).
// Both sessions run op by op, with graph optimizations and weight prepacking
// disabled: what onnxruntime fuses and prepacks depends on which tensors are
// initializers, and a folded value becomes one (mnist-8's reshaped MatMul
// weight gets prepacked and 8 of its 10 outputs then differ in the last
// bits; with default options super-resolution-10 and teams-segmentation
// differ too). The rewritten files also load and run with onnxruntime's
// default options. Int8 weights behind DequantizeLinear stay int8 (a QDQ file
// does not grow), and wasmq's own run (int8 lowering on) of the rewritten
// file equals its run of the original byte for byte.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import os from 'node:os';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { randomArray } from '../../src/js/random.mjs';
import { MODEL_INPUT_SHAPES, NATIVE_CLI, SHARED } from './helpers.mjs';

const ort = createRequire(import.meta.url)('onnxruntime-node');
const EXACT = { logSeverityLevel: 3, graphOptimizationLevel: 'disabled', intraOpNumThreads: 1, extra: { session: { disable_prepacking: '1' } } };
const PREPARE_RTOL = 1e-4;
const SEED = 0;

/** Every .onnx file one or two folders below models/ and models-int8/. */
function sharedModels() {
  const files = [];
  for (const top of ['models', 'models-int8']) {
    const root = path.join(SHARED, top);
    for (const e of readdirSync(root, { withFileTypes: true })) {
      if (!e.isDirectory()) continue;
      for (const f of readdirSync(path.join(root, e.name)).sort())
        if (f.endsWith('.onnx')) files.push(path.join(root, e.name, f));
    }
  }
  return files.sort();
}

const MODELS = sharedModels();
const noNative = !existsSync(NATIVE_CLI) && `no native build at ${NATIVE_CLI} (WQ_NATIVE_BUILD)`;
const tmp = mkdtempSync(path.join(os.tmpdir(), 'wasmq-writer-'));
test.after(() => rmSync(tmp, { recursive: true, force: true }));

function rewrite(model, out, ...flags) {
  const r = spawnSync(NATIVE_CLI, ['rewrite', model, '-o', out, ...flags], { encoding: 'utf8' });
  assert.equal(r.status, 0, `wasmq rewrite ${path.basename(model)} ${flags.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

/** Seeded feeds from the session's input metadata. */
function seededFeeds(session, shapes = {}) {
  const feeds = {};
  session.inputMetadata.forEach((meta, i) => {
    assert.ok(meta.isTensor && ['float32', 'uint8', 'int8'].includes(meta.type), `input ${meta.name}: ${meta.type}`);
    const dims = shapes[meta.name] ?? meta.shape.map((d, k) => (typeof d === 'number' && d >= 0 ? d : k >= 2 ? 64 : 1));
    const count = dims.reduce((a, b) => a * b, 1);
    feeds[meta.name] = new ort.Tensor(meta.type, randomArray(meta.type, count, SEED + i), dims);
  });
  return feeds;
}

async function runOrt(file, feeds, options = EXACT) {
  const session = await ort.InferenceSession.create(file, options);
  try {
    const out = await session.run(feeds);
    return session.outputNames.map((name) => ({ name, tensor: out[name] }));
  } finally {
    await session.release();
  }
}

/** The original's seeded feeds and its outputs (op by op). */
async function reference(model) {
  const session = await ort.InferenceSession.create(model, EXACT);
  const feeds = seededFeeds(session, MODEL_INPUT_SHAPES[path.basename(path.dirname(model))]);
  await session.release();
  return { feeds, want: await runOrt(model, feeds) };
}

/** Largest |a - b| over the output and largest |b|. */
function diff(a, b) {
  let maxDiff = 0, maxRef = 0;
  for (let i = 0; i < a.length; i++) {
    maxDiff = Math.max(maxDiff, Math.abs(Number(a[i]) - Number(b[i])));
    maxRef = Math.max(maxRef, Math.abs(Number(b[i])));
  }
  return { maxDiff, maxRef };
}

test('the shared models are all found (17 at the time of writing)', () => {
  assert.ok(MODELS.length >= 17, `${MODELS.length} models`);
});

for (const model of MODELS) {
  const label = path.relative(SHARED, model);

  test(`${label}: wasmq rewrite -> onnxruntime-node outputs bit-identical`, { skip: noNative }, async (t) => {
    const out = path.join(tmp, `${label.replaceAll('/', '_')}.rewrite.onnx`);
    const summary = rewrite(model, out);
    const { feeds, want } = await reference(model);
    const got = await runOrt(out, feeds);
    assert.deepEqual(got.map((o) => o.name), want.map((o) => o.name));
    for (let k = 0; k < want.length; k++) {
      const a = got[k].tensor, b = want[k].tensor;
      assert.equal(a.type, b.type);
      assert.deepEqual(a.dims, b.dims);
      let differ = 0;
      for (let i = 0; i < b.data.length; i++) if (!Object.is(a.data[i], b.data[i])) differ++;
      assert.equal(differ, 0, `${want[k].name}: ${differ} of ${b.data.length} elements differ`);
    }
    // Default optimizations (fusions, its own constant folding) take the file too.
    const optimized = await runOrt(out, feeds, { logSeverityLevel: 3 });
    assert.equal(optimized.length, want.length);
    // Int8 weights behind DequantizeLinear stay int8: a QDQ file does not grow.
    if (/qdq/.test(label)) assert.ok(statSync(out).size <= statSync(model).size, `${statSync(out).size} bytes`);
    // wasmq itself (int8 lowering on) runs the rewritten file exactly like the original.
    const shapes = Object.entries(feeds).flatMap(([name, f]) => ['--input', `${name}=random:3`, '--shape', `${name}=${f.dims.join('x')}`]);
    const ours = [model, out].map((file, k) => {
      const dir = path.join(tmp, `${label.replaceAll('/', '_')}.run${k}`);
      const r = spawnSync(NATIVE_CLI, ['run', file, ...shapes, '--out', dir], { encoding: 'utf8' });
      assert.equal(r.status, 0, r.stderr);
      return readdirSync(dir).sort().map((f) => readFileSync(path.join(dir, f)));
    });
    assert.equal(ours[1].length, ours[0].length);
    ours[0].forEach((npy, k) => assert.ok(npy.equals(ours[1][k]), `wasmq run: output ${k} differs`));
    t.diagnostic(`${statSync(model).size} -> ${statSync(out).size} bytes; ${summary.split('\n')[0].replace(/^.*: /, '')}`);
  });

  test(`${label}: wasmq rewrite --prepare -> within ${PREPARE_RTOL} of the original`, { skip: noNative }, async (t) => {
    const out = path.join(tmp, `${label.replaceAll('/', '_')}.prepare.onnx`);
    const summary = rewrite(model, out, '--prepare');
    const { feeds, want } = await reference(model);
    const got = await runOrt(out, feeds);
    const notes = [];
    for (let k = 0; k < want.length; k++) {
      const a = got[k].tensor, b = want[k].tensor;
      assert.deepEqual(a.dims, b.dims);
      const { maxDiff, maxRef } = diff(a.data, b.data);
      assert.ok(maxDiff <= PREPARE_RTOL * maxRef, `${want[k].name}: max diff ${maxDiff} vs max |ref| ${maxRef}`);
      notes.push(`${want[k].name} max diff ${maxDiff.toExponential(2)} (rel ${(maxDiff / (maxRef || 1)).toExponential(2)})`);
    }
    t.diagnostic(`${summary.split('\n')[0].replace(/^.*?: /, '')}; ${notes.join(', ')}`);
  });
}

test('wasmq rewrite: usage errors and an unwritable output leave no file', { skip: noNative }, () => {
  const model = MODELS.find((m) => m.endsWith(path.join('mnist-8', 'model.onnx')));
  const missing = spawnSync(NATIVE_CLI, ['rewrite', model], { encoding: 'utf8' });
  assert.equal(missing.status, 2);
  assert.match(missing.stderr, /^usage: wasmq rewrite MODEL -o OUT\.onnx \[--prepare\]/);
  const bogus = spawnSync(NATIVE_CLI, ['rewrite', model, '-o', path.join(tmp, 'x.onnx'), '--bogus'], { encoding: 'utf8' });
  assert.equal(bogus.status, 2);
  assert.match(bogus.stderr, /unexpected argument '--bogus'/);
  const unreadable = spawnSync(NATIVE_CLI, ['rewrite', path.join(tmp, 'none.onnx'), '-o', path.join(tmp, 'y.onnx')], { encoding: 'utf8' });
  assert.equal(unreadable.status, 2);
  assert.match(unreadable.stderr, /cannot read .*none\.onnx: No such file/);
  const dir = path.join(tmp, 'no-such-dir');
  const unwritable = spawnSync(NATIVE_CLI, ['rewrite', model, '-o', path.join(dir, 'out.onnx')], { encoding: 'utf8' });
  assert.equal(unwritable.status, 2);
  assert.match(unwritable.stderr, /cannot write .*no-such-dir\/out\.onnx: No such file or directory/);
  assert.ok(!existsSync(dir));
  assert.ok(!existsSync(path.join(tmp, 'x.onnx')) && !existsSync(path.join(tmp, 'y.onnx')));
});
