// load(model, { kernels }): which int8 kernels run, the probe's answer when
// relaxed SIMD is refused, and bit-identical outputs of the SIMD128 and
// relaxed-SIMD builds on every shared int8 model (GEMM, GEMV, 1x1 and
// im2col convolutions, dynamic quantization's float output).
//
// The relaxed build runs where this engine passes the probe (Node 24 or
// Chromium on x86 with VNNI). Elsewhere the same kernels are compared through
// the build with the relaxed dot emulated in SIMD128 (build.sh --relaxed with
// WQ_USDOT_EMULATE=1, in wasm_build/out/usdot/): same packing, layout and
// corrections, so a bug in those fails here on any engine.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { load, configure } from '../../src/js/index.mjs';
import { probeRelaxed, setProbeForTest } from '../../src/js/relaxed_probe.mjs';
import { randomArray } from '../../src/js/random.mjs';
import { SHARED, MODELS, REPO } from './helpers.mjs';

const probe = probeRelaxed();
const EMULATED = path.join(REPO, 'wasm_build/out/usdot');
const realBuild = path.join(REPO, 'wasm_build/out/wasmq-relaxed.wasm');
// Where the probe fails, "relaxed" below means the emulated build.
if (!probe.ok) {
  configure({
    relaxedGlueUrl: new URL(`file://${EMULATED}/wasmq-relaxed.mjs`),
    relaxedWasmUrl: new URL(`file://${EMULATED}/wasmq-relaxed.wasm`),
  });
}

const MODEL_FILES = [
  path.join(SHARED, 'models-int8/mobilenetv2-12-int8/model.onnx'),
  path.join(SHARED, 'models-int8/mlperftiny-kws-dscnn-int8/model.onnx'),
  path.join(MODELS, 'mnist-8-dynamic-int8/model.onnx'),
  path.join(MODELS, 'synthetic/smallcnn_qdq.onnx'),
  path.join(MODELS, 'synthetic/matmul_256x256x256_qdq.onnx'),
  path.join(MODELS, 'synthetic/matmul_256x256x256_qlinear.onnx'),
  path.join(MODELS, 'synthetic/matmul_1x1024x1024_qdq_pertensor.onnx'),
];

test('the probe gives a verdict with its answers; forcing relaxed where it failed is a clear error', async () => {
  assert.equal(typeof probe.ok, 'boolean');
  assert.ok(probe.reason.length > 0);
  const file = MODEL_FILES[3];
  const simd = await load(file, { kernels: 'simd128' });
  assert.equal(simd.info.kernels, 'simd128');
  assert.equal(simd.info.relaxedRefused, undefined);
  simd.dispose();
  await assert.rejects(load(file, { kernels: 'avx' }), /kernels must be 'auto', 'simd128' or 'relaxed'/);
  if (probe.ok) {
    // A passing probe also checked the in-range case every engine agrees on.
    assert.deepEqual(probe.answers.map(([got, want]) => got === want), [true, true, true, true, true]);
    const auto = await load(file);
    assert.equal(auto.info.kernels, existsSync(realBuild) ? 'relaxed' : 'simd128');
    auto.dispose();
  } else {
    await assert.rejects(load(file, { kernels: 'relaxed' }), (e) => {
      assert.equal(e.code, 'WQ_ERR_UNSUPPORTED');
      assert.ok(e.message.includes(probe.reason), e.message);
      return true;
    });
    const auto = await load(file);
    assert.equal(auto.info.kernels, 'simd128');
    assert.equal(auto.info.relaxedRefused, probe.reason);
    auto.dispose();
  }
});

test('SIMD128 and relaxed-SIMD kernels give identical bytes on every shared int8 model', async () => {
  if (!probe.ok) {
    assert.ok(existsSync(path.join(EMULATED, 'wasmq-relaxed.wasm')),
      'the emulated relaxed build is missing: WQ_USDOT_EMULATE=1 WQ_WASM_OUT=wasm_build/out/usdot WQ_WASM_OBJ=wasm_build/out/obj bash wasm_build/build.sh --relaxed');
    setProbeForTest({ ok: true, reason: 'test: emulated relaxed dot', answers: [] });
  }
  try {
    for (const file of MODEL_FILES) {
      const simd = await load(file, { kernels: 'simd128', threads: 1 });
      const relaxed = await load(file, { kernels: 'relaxed', threads: 1 });
      try {
        assert.equal(relaxed.info.kernels, 'relaxed');
        // The decision records name the ISA each int8 GEMM/conv node runs:
        // relaxed for the GEMM-based ones, SIMD128 for depthwise (its code).
        const isas = (m) => m.graph().nodes.filter((n) => n.kernel_isa).map((n) => `${n.kernel}:${n.kernel_isa}`);
        const expected = (k) => (k.startsWith('depthwise:') ? 'depthwise:simd128' : k.replace(/:.*/, ':relaxed'));
        assert.ok(isas(relaxed).some((k) => k.endsWith(':relaxed')) && isas(relaxed).every((k) => k === expected(k)), `${file}: ${isas(relaxed)}`);
        assert.ok(isas(simd).every((k) => k.endsWith(':simd128')), `${file}: ${isas(simd)}`);
        for (const seed of [0, 1]) {
          const feeds = {};
          for (const input of simd.inputs) {
            const dims = input.shape.map((d) => (typeof d === 'number' ? d : 1));
            feeds[input.name] = { data: randomArray(input.dtype, dims.reduce((a, b) => a * b, 1), seed), dims };
          }
          const a = await simd.run(feeds);
          const b = await relaxed.run(feeds);
          for (const name of Object.keys(a)) {
            const bytesA = new Uint8Array(a[name].data.buffer, a[name].data.byteOffset, a[name].data.byteLength);
            const bytesB = new Uint8Array(b[name].data.buffer, b[name].data.byteOffset, b[name].data.byteLength);
            assert.deepEqual(bytesB, bytesA, `${path.basename(path.dirname(file))}/${path.basename(file)} output ${name}, seed ${seed}`);
          }
        }
      } finally {
        simd.dispose();
        relaxed.dispose();
      }
    }
  } finally {
    if (!probe.ok) setProbeForTest(null);
  }
});

test('threaded relaxed build: identical bytes on 2 threads', { skip: !probe.ok && `the probe refused relaxed SIMD here (${probe.reason}); the threaded relaxed build runs only where it passes` }, async () => {
  for (const file of [MODEL_FILES[0], MODEL_FILES[4]]) {
    const simd = await load(file, { kernels: 'simd128', threads: 1 });
    const relaxed = await load(file, { kernels: 'relaxed', threads: 2 });
    try {
      assert.equal(relaxed.info.kernels, 'relaxed');
      assert.equal(relaxed.info.build, 'simd-threads');
      const feeds = {};
      for (const input of simd.inputs) {
        const dims = input.shape.map((d) => (typeof d === 'number' ? d : 1));
        feeds[input.name] = { data: randomArray(input.dtype, dims.reduce((a, b) => a * b, 1), 3), dims };
      }
      const a = Object.values(await simd.run(feeds))[0].data;
      const b = Object.values(await relaxed.run(feeds))[0].data;
      assert.deepEqual(b, a, path.basename(file));
    } finally {
      simd.dispose();
      relaxed.dispose();
    }
  }
});
