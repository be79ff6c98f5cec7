// `wasmq quantize --mode dynamic` (src/core/quant/dynamic.h; native CLI,
// npx and the package's quantizeDynamic()): the written model is onnxruntime's quantize_dynamic form, loads in
// onnxruntime-node and onnxruntime-web and agrees with them; what cannot be
// written is refused with the reason.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import os from 'node:os';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { load, quantizeDynamic } from '../../src/js/index.mjs';
import { randomArray } from '../../src/js/random.mjs';
import { CLI, MODELS, NATIVE_CLI } from './helpers.mjs';

const ortNode = createRequire(import.meta.url)('onnxruntime-node');
const ort = await import('onnxruntime-web');
ort.env.wasm.numThreads = 1;
ort.env.logLevel = 'error';
const DISABLED = { graphOptimizationLevel: 'disabled' };


// `wasmq quantize --mode dynamic` (native CLI) of the openwakeword MLP: its
// three Gemms in onnxruntime's MatMulInteger form, which onnxruntime-node
// and onnxruntime-web load. The integer products are exact; the float
// LayerNorms between them (ReduceMean, Pow, Sqrt, Div) may round their last
// bit differently, so the sigmoid output is held to 1e-6 against
// onnxruntime-web (measured: within 6e-8), and equal to our op-by-op run.
// onnxruntime-node is held to it only with uint8 weights: with int8 weights
// its x86 MatMulInteger saturates pair sums (0.56 where the exact result is
// 0.47 on one input).
test('quantize --mode dynamic: onnxruntime loads the MLP and agrees; ours runs its three products on the int8 kernels', async (t) => {
  if (!existsSync(NATIVE_CLI)) return t.skip(`no native CLI at ${NATIVE_CLI}`);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'wasmq-dyn-'));
  try {
    for (const flags of [[], ['--per-tensor'], ['--uint8-weights']]) {
      const out = path.join(dir, 'oww_dynamic.onnx');
      const r = spawnSync(NATIVE_CLI, ['quantize', path.join(MODELS, 'openwakeword-hello-deepa-mlp/model.onnx'), '-o', out, '--mode', 'dynamic', ...flags], { encoding: 'utf8' });
      assert.equal(r.status, 0, r.stderr);
      assert.match(r.stdout, /dynamic int8, 3 of 3 MatMul\/Gemm quantized/);
      const bytes = readFileSync(out);
      const web = await ort.InferenceSession.create(bytes, DISABLED);
      const node = await ortNode.InferenceSession.create(bytes, { graphOptimizationLevel: 'disabled', logSeverityLevel: 3 });
      const model = await load(bytes), modelFp = await load(bytes, { partition: 'fp' });
      try {
        const lowered = model.describeLowered(); // each product on the int8 GEMM
        assert.equal((lowered.match(/\] wasmq\.QGemmToFloat /g) ?? []).length, 3, lowered);
        assert.doesNotMatch(lowered, /\] (DynamicQuantizeLinear|MatMulInteger) /);
        for (const seed of [0, 1]) {
          const data = Float32Array.from(randomArray('float32', 2400, seed), (v) => 2 * v - 1);
          const dims = [1, 25, 96];
          const ours = (await model.run({ 'onnx::Flatten_0': { data, dims } }))['39'].data[0];
          const fp = (await modelFp.run({ 'onnx::Flatten_0': { data, dims } }))['39'].data[0];
          assert.equal(ours, fp, `${flags} seed ${seed}: lowered vs op by op`);
          const w = (await web.run({ 'onnx::Flatten_0': new ort.Tensor('float32', data, dims) }))['39'].data[0];
          assert.ok(Math.abs(ours - w) <= 1e-6, `${flags} seed ${seed}: ${ours} vs onnxruntime-web ${w}`);
          const n = (await node.run({ 'onnx::Flatten_0': new ortNode.Tensor('float32', data, dims) }))['39'].data[0];
          if (flags.includes('--uint8-weights')) assert.ok(Math.abs(ours - n) <= 1e-6, `${flags} seed ${seed}: ${ours} vs onnxruntime-node ${n}`);
        }
      } finally {
        model.dispose();
        modelFp.dispose();
        await web.release();
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('quantize --mode dynamic refuses what it cannot write, with the reason; npx too', async (t) => {
  if (!existsSync(NATIVE_CLI)) return t.skip(`no native CLI at ${NATIVE_CLI}`);
  const run = (model, ...extra) => spawnSync(NATIVE_CLI, ['quantize', path.join(MODELS, model, 'model.onnx'), '-o', path.join(os.tmpdir(), 'never-written.onnx'), '--mode', 'dynamic', ...extra], { encoding: 'utf8' });
  let r = run('mnist-8-dynamic-int8');
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /quantized already|already quantized/i);
  r = run('mnist-8'); // opset 8: no DynamicQuantizeLinear
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /opset 11/);
  r = run('mnist-8', '--calib', 'random:2');
  assert.equal(r.status, 2);
  assert.match(r.stderr, /--mode dynamic takes no calibration/);
  for (const [model, why] of [['mnist-8-dynamic-int8', /quantized already|already quantized/i], ['mnist-8', /opset 11/]]) {
    const out = path.join(os.tmpdir(), 'never-written.onnx');
    const native = run(model);
    r = spawnSync(process.execPath, [CLI, 'quantize', path.join(MODELS, model, 'model.onnx'), '-o', out, '--mode', 'dynamic'], { encoding: 'utf8' });
    assert.equal(r.status, native.status, r.stderr); // a bad model 2 (invalid argument), an old opset 1
    assert.equal(r.stderr.replace(/^wasmq: [^:]*: /, ''), native.stderr.replace(/^wasmq: [^:]*: /, ''), 'the native message');
    assert.ok(!existsSync(out), 'nothing written');
    await assert.rejects(quantizeDynamic(path.join(MODELS, model, 'model.onnx')), why);
  }
  r = spawnSync(process.execPath, [CLI, 'quantize', path.join(MODELS, 'mnist-8/model.onnx'), '-o', path.join(os.tmpdir(), 'never-written.onnx'), '--mode', 'dynamic', '--calib', 'random:2'], { encoding: 'utf8' });
  assert.equal(r.status, 2);
  assert.match(r.stderr, /--mode dynamic takes no calibration/);
  await assert.rejects(quantizeDynamic(new Uint8Array(4), { perTensor: 1 }), /perTensor must be a boolean/);
});

// The npm package's quantizeDynamic() and `npx wasmq quantize --mode dynamic`
// run the same C (the wasm quantizer build): byte for byte the native
// CLI's model and summary for every weight form, so the onnxruntime checks
// above hold for them too; the npm model is also run in onnxruntime-web here.
test('quantizeDynamic() and npx wasmq quantize --mode dynamic write the native CLI\'s bytes; onnxruntime-web agrees', async (t) => {
  if (!existsSync(NATIVE_CLI)) return t.skip(`no native CLI at ${NATIVE_CLI}`);
  const file = path.join(MODELS, 'openwakeword-hello-deepa-mlp/model.onnx');
  const dir = mkdtempSync(path.join(os.tmpdir(), 'wasmq-dyn-npm-'));
  try {
    for (const [flags, options] of [[[], {}], [['--per-tensor'], { perTensor: true }], [['--uint8-weights'], { uint8Weights: true }]]) {
      const native = path.join(dir, 'native.onnx'), npx = path.join(dir, 'npx.onnx');
      const rn = spawnSync(NATIVE_CLI, ['quantize', file, '-o', native, '--mode', 'dynamic', ...flags], { encoding: 'utf8' });
      assert.equal(rn.status, 0, rn.stderr);
      const rx = spawnSync(process.execPath, [CLI, 'quantize', file, '-o', npx, '--mode', 'dynamic', ...flags], { encoding: 'utf8' });
      assert.equal(rx.status, 0, rx.stderr);
      assert.equal(rx.stdout.replace(npx, 'OUT'), rn.stdout.replace(native, 'OUT'), `${flags}: npx and native print the same line`);
      const want = readFileSync(native);
      assert.ok(Buffer.from(readFileSync(npx)).equals(want), `${flags}: npx writes the native bytes`);
      const { onnx, summary } = await quantizeDynamic(readFileSync(file), options);
      assert.ok(Buffer.from(onnx).equals(want), `${flags}: quantizeDynamic() returns the native bytes`);
      assert.match(summary, /dynamic int8, 3 of 3 MatMul\/Gemm quantized/);
      const web = await ort.InferenceSession.create(onnx, DISABLED);
      const model = await load(onnx);
      try {
        const data = Float32Array.from(randomArray('float32', 2400, 7), (v) => 2 * v - 1);
        const dims = [1, 25, 96];
        const ours = (await model.run({ 'onnx::Flatten_0': { data, dims } }))['39'].data[0];
        const w = (await web.run({ 'onnx::Flatten_0': new ort.Tensor('float32', data, dims) }))['39'].data[0];
        assert.ok(Math.abs(ours - w) <= 1e-6, `${flags}: ${ours} vs onnxruntime-web ${w}`);
      } finally {
        model.dispose();
        await web.release();
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
