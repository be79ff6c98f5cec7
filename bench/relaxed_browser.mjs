// The SIMD128 and relaxed-SIMD builds in a Chromium page (Debian's Chromium
// via playwright-core): which kernels load() picks there, whether both give
// the same bytes, and (timing) their run times beside onnxruntime-web's.
// Used by tests/browser/relaxed.test.mjs and bench/relaxed.mjs.
//
// The repository is served as files (an import map names #platform), the
// shared models under /shared/. Where the page's probe refuses relaxed SIMD,
// emulated: true compares the usdot-emulated build (wasm_build/out/usdot)
// instead, and the bench's timings of "relaxed" override the probe (timing
// only: such an engine computes the relaxed dot differently).

import { createServer } from 'node:http';
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { launchChromium } from '../tests/browser/chromium.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const TYPES = { '.mjs': 'text/javascript', '.js': 'text/javascript', '.wasm': 'application/wasm', '.html': 'text/html' };

function serve(shared) {
  const server = createServer((req, res) => {
    const url = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    const file = url.startsWith('/shared/') ? path.join(shared, url.slice(8)) : path.join(ROOT, url);
    const inside = file.startsWith(`${ROOT}/`) || file.startsWith(`${shared}/`);
    if (!inside || !existsSync(file) || !statSync(file).isFile()) {
      res.writeHead(404).end();
      return;
    }
    const type = TYPES[path.extname(file)] ?? 'application/octet-stream';
    res.writeHead(200, { 'content-type': type }).end(readFileSync(file));
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

const PAGE = `<!doctype html><meta charset="utf-8"><link rel="icon" href="data:,"><title>relaxed</title>
<script type="importmap">{"imports":{"#platform":"/src/js/platform/browser.mjs","onnxruntime-web":"/node_modules/onnxruntime-web/dist/ort.wasm.min.mjs"}}</script>
<script type="module">
const params = JSON.parse(decodeURIComponent(location.hash.slice(1)));
const { probeRelaxed, setProbeForTest } = await import('/src/js/relaxed_probe.mjs');
const { load, configure } = await import('/src/js/index.mjs');
const probe = probeRelaxed();
const out = { probe, userAgent: navigator.userAgent, models: [] };
try {
  const emulated = !probe.ok && !params.timing;
  if (emulated) configure({ relaxedGlueUrl: '/wasm_build/out/usdot/wasmq-relaxed.mjs', relaxedWasmUrl: '/wasm_build/out/usdot/wasmq-relaxed.wasm' });
  out.emulated = emulated;
  const auto = await load(await (await fetch(params.models[0].url)).arrayBuffer(), { inputShapes: params.models[0].inputShapes });
  out.auto = { kernels: auto.info.kernels, relaxedRefused: auto.info.relaxedRefused ?? null };
  auto.dispose();
  if (!probe.ok) setProbeForTest({ ok: true, reason: emulated ? 'emulated' : 'timing only', answers: [] });
  let ort = null;
  if (params.timing) {
    ort = await import('onnxruntime-web');
    ort.env.wasm.numThreads = 1;
    ort.env.wasm.wasmPaths = '/node_modules/onnxruntime-web/dist/';
    ort.env.logLevel = 'error';
  }
  for (const m of params.models) {
    const bytes = new Uint8Array(await (await fetch(m.url)).arrayBuffer());
    const simd = await load(bytes, { kernels: 'simd128', inputShapes: m.inputShapes });
    const relaxed = await load(bytes, { kernels: 'relaxed', inputShapes: m.inputShapes });
    const feeds = {};
    for (const input of simd.inputs) {
      const dims = input.shape.map((d) => (typeof d === 'number' ? d : 1));
      const n = dims.reduce((a, b) => a * b, 1);
      feeds[input.name] = { data: new Float32Array(n).map((_, i) => (((i * 7919 + 13) % 255) / 127.5) - 1), dims };
    }
    const a = Object.values(await simd.run(feeds))[0].data;
    const b = Object.values(await relaxed.run(feeds))[0].data;
    const row = { name: m.name, relaxedKernels: relaxed.info.kernels, identical: a.length === b.length && a.every((v, i) => Object.is(v, b[i])) };
    if (params.timing) {
      // The page's clock is coarse (0.1 ms): the mean of a round's runs, timed together.
      const time = async (fn) => {
        const t0 = performance.now();
        while (performance.now() - t0 < params.warmupMs) await fn();
        const s = performance.now();
        for (let i = 0; i < params.runs; i++) await fn();
        return (performance.now() - s) / params.runs;
      };
      const session = await ort.InferenceSession.create(bytes, { executionProviders: ['wasm'], graphOptimizationLevel: 'all' });
      const ortFeeds = Object.fromEntries(Object.entries(feeds).map(([k, v]) => [k, new ort.Tensor('float32', v.data, v.dims)]));
      row.ms = { simd128: [], relaxed: [], ort: [] };
      for (let round = 0; round < params.rounds; round++) {
        row.ms.simd128.push(await time(() => simd.run(feeds)));
        row.ms.relaxed.push(await time(() => relaxed.run(feeds)));
        row.ms.ort.push(await time(() => session.run(ortFeeds)));
      }
      await session.release();
    }
    simd.dispose();
    relaxed.dispose();
    out.models.push(row);
  }
} catch (e) {
  out.error = String(e && e.stack || e);
}
window.result = out;
</script>`;

/**
 * Runs the page on models [{name, file, inputShapes}] and returns its
 * result: {probe, userAgent, auto: {kernels, relaxedRefused}, emulated,
 * models: [{name, relaxedKernels, identical, ms?}], error?}.
 */
export async function runRelaxedPage({ shared, models, timing = false, runs = 20, rounds = 3, warmupMs = 500, timeoutMs = 300000 }) {
  const server = await serve(path.resolve(shared));
  const context = await launchChromium();
  try {
    const page = await context.newPage();
    const base = `http://127.0.0.1:${server.address().port}`;
    await page.route(`${base}/relaxed.html`, (route) => route.fulfill({ status: 200, contentType: 'text/html', body: PAGE }));
    const params = {
      timing,
      runs,
      rounds,
      warmupMs,
      models: models.map((m) => ({ name: m.name, url: `/shared/${path.relative(path.resolve(shared), m.file)}`, inputShapes: m.inputShapes ?? {} })),
    };
    await page.goto(`${base}/relaxed.html#${encodeURIComponent(JSON.stringify(params))}`);
    await page.waitForFunction(() => window.result !== undefined, null, { timeout: timeoutMs });
    return await page.evaluate(() => window.result);
  } finally {
    await context.close();
    await new Promise((r) => server.close(r));
  }
}
