// Chromium: load() picks relaxed SIMD exactly when the page's probe passes
// (else SIMD128, saying why), and the relaxed kernels give the same bytes as
// SIMD128 on int8 models (GEMM, GEMV, 1x1/im2col convolutions). Where
// Chromium's relaxed dot is not the one the kernels rely on (x86 without
// VNNI), the comparison runs the usdot-emulated build (bench/relaxed_browser.mjs).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { chromiumAvailable } from './chromium.mjs';
import { runRelaxedPage } from '../../bench/relaxed_browser.mjs';
import { SHARED, MODELS } from '../node/helpers.mjs';

const CASES = [
  { name: 'mlperftiny-kws-dscnn-int8', file: path.join(SHARED, 'models-int8/mlperftiny-kws-dscnn-int8/model.onnx') },
  { name: 'matmul_256x256x256_qdq', file: path.join(MODELS, 'synthetic/matmul_256x256x256_qdq.onnx') },
  { name: 'matmul_1x1024x1024_qdq_pertensor', file: path.join(MODELS, 'synthetic/matmul_1x1024x1024_qdq_pertensor.onnx') },
  { name: 'smallcnn_qdq', file: path.join(MODELS, 'synthetic/smallcnn_qdq.onnx') },
];

test('Chromium: relaxed SIMD selected where the probe passes, identical bytes to SIMD128', { skip: !chromiumAvailable() && 'no Chromium' }, async () => {
  const r = await runRelaxedPage({ shared: SHARED, models: CASES });
  assert.equal(r.error, undefined, r.error);
  assert.match(r.userAgent, /Chrome\//);
  if (r.probe.ok) {
    assert.equal(r.auto.kernels, 'relaxed');
    assert.equal(r.emulated, false);
  } else {
    assert.equal(r.auto.kernels, 'simd128');
    assert.equal(r.auto.relaxedRefused, r.probe.reason);
    assert.equal(r.emulated, true);
  }
  assert.deepEqual(r.models.map((m) => [m.name, m.relaxedKernels, m.identical]), CASES.map((c) => [c.name, 'relaxed', true]));
});
