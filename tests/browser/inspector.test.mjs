// The inspector app in Debian's Chromium (playwright-core): every bundled
// demo draws its graph (nodes with data-node/data-backend/data-region,
// transitions with data-transition), overlays switch, models run in the
// Worker, SVG/PNG export, no console errors; the layout of a 1,000-node
// graph in the Worker while the page keeps responding (printed). The demos'
// int8 models are quantized by wasmq in the page; a float model opened from
// a file is quantized there too (random calibration, cancel, downloads).
// Screenshots go to $WQ_ARTIFACTS (default test-artifacts/browser).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, preview } from 'vite';
import { launchChromium, watchErrors, chromiumAvailable } from './chromium.mjs';
import { SHARED } from '../node/helpers.mjs';
import { haveSpeechTools, synthesizeRecording } from '../node/speech.mjs';
import { load, quantize, quantizeDynamic } from '../../src/js/index.mjs';
import { PNG } from 'pngjs';
import { decodeImageFile } from '../../src/js/calib.mjs';
import { imageToTensor, resolveImageSpec } from '../../src/js/images.mjs';
import { BACKEND_COLOURS } from '../../src/js/graph/data.mjs';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const CONFIG = path.join(REPO, 'web/vite.config.mjs');
const ARTIFACTS = path.resolve(REPO, process.env.WQ_ARTIFACTS ?? 'test-artifacts/browser');
mkdirSync(ARTIFACTS, { recursive: true });

let server;
let browser;
let baseUrl;

before(async () => {
  assert.ok(chromiumAvailable(), 'Chromium missing: run bash scripts/setup.sh --browser');
  await build({ configFile: CONFIG, logLevel: 'warn' });
  server = await preview({ configFile: CONFIG, preview: { port: 0, host: '127.0.0.1' }, logLevel: 'warn' });
  baseUrl = server.resolvedUrls.local[0];
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  await new Promise((resolve) => server?.httpServer.close(resolve));
});

async function openPage(query = '') {
  const page = await browser.newPage();
  const errors = watchErrors(page);
  page.requested = [];
  page.on('request', (r) => page.requested.push(r.url()));
  await page.goto(`${baseUrl}${query}`);
  return { page, errors };
}

async function nodeAttrs(page) {
  return page.$$eval('#graph .wq-node', (els) => els.map((e) => ({ node: e.dataset.node, backend: e.dataset.backend, region: e.dataset.region, transition: e.dataset.transition ?? null })));
}

/** Clicks node `id`, panning it into the view first (the graph opens zoomed in to readable labels). */
async function clickNode(page, id) {
  await page.evaluate((n) => globalThis.wasmqInspector.reveal(n), id);
  await page.click(`#graph .wq-node[data-node-id="${id}"]`);
}

const shot = (page, name) => page.screenshot({ path: path.join(ARTIFACTS, `${name}.png`) });

/** The quant panel's float and int8 columns: per-run ms and each output's argmax. */
async function quantColumns(page) {
  return page.$$eval('#q-cols .q-col[data-side]', (cols) =>
    Object.fromEntries(cols.map((c) => [c.dataset.side, { ms: Number(c.dataset.ms), argmax: [...c.querySelectorAll('[data-argmax]')].map((e) => Number(e.dataset.argmax)), name: c.querySelector('h3').textContent }])),
  );
}

test('the built preview: every script, worker and core file carries COOP/COEP', async () => {
  const assets = readdirSync(path.join(REPO, 'web/dist/assets')).filter((f) => /\.(m?js|wasm)$/.test(f));
  assert.ok(assets.some((f) => /^run-worker/.test(f)), assets.join(' '));
  for (const file of ['', ...assets.map((f) => `assets/${f}`), 'wasmq-mt/wasmq.mjs', 'wasmq-mt/wasmq.worker.js', 'wasmq-mt/wasmq.wasm', 'models/smallcnn-qdq.onnx']) {
    const r = await fetch(baseUrl + file);
    assert.equal(r.status, 200, file);
    assert.equal(r.headers.get('cross-origin-embedder-policy'), 'require-corp', file);
    assert.equal(r.headers.get('cross-origin-opener-policy'), 'same-origin', file);
    await r.arrayBuffer();
  }
});

test('draw-a-digit demo: mnist-8 quantized by wasmq in the page, int8 graph with regions and transitions, live prediction float vs int8, overlays, export', async () => {
  const { page, errors } = await openPage('?demo=mnist');
  await page.waitForSelector('.mnist-out .pred', { timeout: 30000 });
  await shot(page, 'mnist-demo-start');
  // The int8 model is quantized on demo open (the ten bundled digits), then both predict.
  await page.waitForSelector('.mnist-out[data-int8]', { timeout: 60000 });
  assert.equal(await page.$eval('#graph-model', (e) => e.selectedOptions[0].textContent), 'mnist-8 (int8, quantized by wasmq)');
  assert.match(await page.$eval('#q-summary', (e) => e.textContent), /10 calibration samples/);
  const cols = await quantColumns(page);
  assert.deepEqual([cols.float.argmax, cols.int8.argmax], [[2], [2]]);
  // The float model's graph is drawn beside the int8 one.
  const beside = await page.$$eval('#graph-beside .wq-node', (els) => els.map((e) => e.dataset.backend));
  assert.ok(beside.length >= 8 && beside.every((b) => b === 'float'), `beside: ${beside}`);
  console.log(`mnist-8 in the page: float ${cols.float.ms.toFixed(3)} ms, int8 (wasmq) ${cols.int8.ms.toFixed(3)} ms per run; ${await page.$eval('#q-summary', (e) => e.textContent)}`);
  // The server isolates the page (COOP/COEP), so models run on the threaded core.
  assert.equal(await page.evaluate(() => globalThis.crossOriginIsolated), true);
  const build = await page.$eval('#status', (e) => ({ build: e.dataset.build, threads: Number(e.dataset.threads) }));
  const cores = await page.evaluate(() => navigator.hardwareConcurrency);
  assert.deepEqual(build, cores > 1 ? { build: 'simd-threads', threads: Math.min(cores, 4) } : { build: 'simd', threads: 1 });
  const nodes = await nodeAttrs(page);
  assert.ok(nodes.length >= 9, `drew ${nodes.length} nodes`);
  assert.ok(nodes.every((n) => n.node && n.backend && n.region !== undefined));
  assert.ok(nodes.some((n) => n.backend === 'int8-simd' && Number(n.region) >= 1));
  assert.ok(nodes.some((n) => n.transition), 'a layout transition is drawn');
  // The sample digit: both models agree with the reference.
  const pred = await page.$eval('.mnist-out', (e) => [e.dataset.float, e.dataset.int8]);
  assert.deepEqual(pred, ['2', '2']); // test_data_set_0 of mnist-8 is a 2 (its reference output peaks at 2); int8 by wasmq agrees
  // Draw a stroke: the prediction updates without errors.
  const box = await page.$eval('canvas.pad', (c) => c.getBoundingClientRect().toJSON());
  await page.click('.demo-card button');
  await page.mouse.move(box.x + 112, box.y + 30);
  await page.mouse.down();
  await page.mouse.move(box.x + 112, box.y + 200, { steps: 8 });
  await page.mouse.up();
  // A vertical bar is no 2: the live prediction moves away from it.
  await page.waitForFunction(() => document.querySelector('.mnist-out').dataset.float !== '2', null, { timeout: 15000 });
  console.log(`drawn bar predicted as: ${await page.$eval('.mnist-out', (e) => `float ${e.dataset.float}, int8 ${e.dataset.int8}`)}`);
  // Run with profiling, then the time overlay colours every node.
  await page.click('#run');
  await page.waitForFunction(() => !document.querySelector('[data-overlay="time"]').disabled && /per run/.test(document.getElementById('status-text').textContent), null, { timeout: 30000 });
  await page.click('[data-overlay="time"]');
  await page.waitForSelector('svg.wq-graph[data-overlay="time"]');
  const timed = await page.$$eval('#graph .wq-node[data-value]', (els) => els.length);
  assert.equal(timed, nodes.length);
  // Compare with the float model: per-node error as the error overlay.
  await page.click('#compare');
  await page.waitForSelector('svg.wq-graph[data-overlay="error"]', { timeout: 30000 });
  const errored = await page.$$eval('#graph .wq-node[data-value]', (els) => els.map((e) => Number(e.dataset.value)));
  // On the bundled digit (0..255 pixels) the gaps are absolute, so the bound is on the SNR.
  assert.ok(errored.length >= 3 && errored.every((v) => Number.isFinite(v) && v >= 0), `error values ${errored}`);
  const compared = await page.$eval('#status-text', (e) => e.textContent);
  console.log(compared);
  const lowest = Number(/lowest SNR ([\d.e+-]+) dB/.exec(compared)?.[1]);
  assert.ok(lowest >= 20, compared);
  await page.click('[data-overlay="region"]');
  await page.waitForSelector('svg.wq-graph[data-overlay="region"]');
  // Select a node: the side panel shows its reason and qparams.
  await page.click('#graph .wq-node[data-backend^="int8"][data-op^="Q"]');
  const side = await page.$eval('#side', (e) => e.textContent);
  assert.match(side, /reason/);
  assert.match(side, /scale/);
  // Search by op.
  await page.fill('#search', 'MaxPool');
  assert.ok((await page.$$('#graph .wq-node.match')).length >= 1);
  // Export SVG: the downloaded file is the drawn graph.
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('#export-svg')]);
  const svg = readFileSync(await download.path(), 'utf8');
  assert.match(svg, /^<svg xmlns="http:\/\/www.w3.org\/2000\/svg"/);
  assert.equal((svg.match(/data-node=/g) ?? []).length, nodes.length);
  const [png] = await Promise.all([page.waitForEvent('download'), page.click('#export-png')]);
  assert.deepEqual([...readFileSync(await png.path()).subarray(1, 4)], [0x50, 0x4e, 0x47]);
  await shot(page, 'mnist-demo');
  // Opening the demo again reuses this session's quantization.
  await page.evaluate(() => globalThis.wasmqInspector.openDemo('mnist'));
  await page.waitForSelector('.mnist-out[data-int8]', { timeout: 30000 });
  assert.match(await page.$eval('#q-summary', (e) => e.textContent), /cached for this session/);
  assert.deepEqual(await page.$eval('.mnist-out', (e) => [e.dataset.float, e.dataset.int8]), ['2', '2']);
  assert.deepEqual(errors, []);
  await page.close();
});

test('super-resolution and segmentation demos: float output first, then int8 quantized in the page from the bundled input, side by side', async () => {
  for (const [demo, done] of [
    ['superres', /672×672: float .* ms, int8 .* ms/],
    ['segmentation', /mask 160×96: float .* ms, int8 .* ms/],
  ]) {
    const { page, errors } = await openPage(`?demo=${demo}`);
    await page.waitForFunction((re) => new RegExp(re).test(document.getElementById('status-text').textContent), done.source, { timeout: 120000 });
    console.log(`${demo}: ${await page.$eval('#status-text', (e) => e.textContent)}; ${await page.$eval('#q-summary', (e) => e.textContent)}`);
    assert.equal(await page.$eval('#demo-panel', (p) => p.querySelectorAll('.demo-card[data-int8="done"] canvas').length), 1);
    // The int8 graph is drawn; the float one is a pick away.
    const nodes = await nodeAttrs(page);
    assert.ok(nodes.filter((n) => n.backend === 'int8-simd').length >= 3, `int8 nodes: ${nodes.map((n) => n.backend)}`);
    await shot(page, `${demo}-demo`);
    const models = await page.$$eval('#graph-model option', (os) => os.map((o) => o.value));
    await page.selectOption('#graph-model', models[0]);
    await page.waitForFunction(() => /\(float\)$/.test(document.querySelector('#graph svg title')?.textContent ?? ''));
    assert.ok((await nodeAttrs(page)).every((n) => n.backend === 'float' && n.region === '-1'));
    const cols = await quantColumns(page);
    assert.ok(cols.float.ms > 0 && cols.int8.ms > 0);
    if (demo === 'segmentation') console.log(`segmentation: ${await page.$eval('[data-differ]', (e) => e.dataset.differ)} of 15360 mask pixels differ at 0.5`);
    assert.deepEqual(errors, []);
    await page.close();
  }
});

test('quantize a float model opened from a file: random calibration with progress, cancel mid-calibration, int8 graph, both run, downloads; a quantized model is refused in the page', async () => {
  const { page, errors } = await openPage();
  await page.setInputFiles('#file', path.join(SHARED, 'models/mnist-8/model.onnx'));
  await page.waitForFunction(() => document.querySelector('#graph svg title')?.textContent === 'model.onnx');
  await page.click('#quantize');
  // A file has no bundled sample: random calibration only.
  assert.equal(await page.$eval('#q-sample', (e) => e.disabled), true);
  // Cancel mid-calibration: the worker is terminated, progress stops, no model is added.
  await page.fill('#q-n', '100000');
  await page.click('#q-start');
  await page.waitForFunction(() => Number(document.getElementById('quant-panel').dataset.done) >= 20, null, { timeout: 60000 });
  await page.click('#q-cancel');
  await page.waitForFunction(() => document.getElementById('quant-panel').dataset.state === 'cancelled');
  const stopped = await page.$eval('#quant-panel', (e) => Number(e.dataset.done));
  assert.ok(stopped >= 20 && stopped < 100000);
  assert.match(await page.$eval('#status-text', (e) => e.textContent), new RegExp(`cancelled after ${stopped} of 100000 samples`));
  await page.waitForTimeout(500);
  assert.equal(await page.$eval('#quant-panel', (e) => Number(e.dataset.done)), stopped);
  assert.deepEqual(await page.$$eval('#graph-model option', (os) => os.map((o) => o.textContent)), ['model.onnx']);
  await shot(page, 'quantize-cancelled');
  // The quantizer's wasm was fetched for this (and only now: see the smallcnn test).
  assert.ok(page.requested.some((u) => /wasmq-quant[^/]*\.wasm$/.test(u)), page.requested.join('\n'));
  // Quantize with 8 random samples: progress reaches 8 of 8, the int8 graph is shown.
  await page.fill('#q-n', '8');
  await page.click('#q-start');
  await page.waitForFunction(() => document.getElementById('quant-panel').dataset.ran === 'true', null, { timeout: 60000 });
  assert.equal(await page.$eval('#quant-panel', (e) => `${e.dataset.done}/${e.dataset.total}`), '8/8');
  assert.equal(await page.$eval('#graph svg title', (e) => e.textContent), 'model (int8, wasmq)');
  const nodes = await nodeAttrs(page);
  assert.ok(nodes.filter((n) => n.backend === 'int8-simd').length >= 4);
  const cols = await quantColumns(page);
  assert.ok(cols.float.ms > 0 && cols.int8.ms > 0);
  assert.equal(cols.float.argmax.length, 1);
  console.log(`mnist-8 from a file, 8 random samples: float ${cols.float.ms.toFixed(3)} ms, int8 ${cols.int8.ms.toFixed(3)} ms; argmax ${cols.float.argmax} vs ${cols.int8.argmax}`);
  await shot(page, 'quantize-file');
  // The downloads: the QDQ model loads (int8 nodes) in Node, the report is the quantizer's JSON.
  const [onnx] = await Promise.all([page.waitForEvent('download'), page.click('#q-onnx')]);
  assert.equal(onnx.suggestedFilename(), 'model-int8.onnx');
  const m = await load(readFileSync(await onnx.path()));
  try {
    assert.match(m.graph().summary, /^int8: /);
  } finally {
    m.dispose();
  }
  const [report] = await Promise.all([page.waitForEvent('download'), page.click('#q-report')]);
  assert.equal(report.suggestedFilename(), 'model-quant-report.json');
  assert.equal(typeof JSON.parse(readFileSync(await report.path(), 'utf8')), 'object');
  // A calibration sample of the wrong shape: the quantizer's message, in the page.
  const bad = await page.evaluate(() =>
    globalThis.wasmqInspector.quant.quantizeLoaded('file', { samples: [{ Input3: { data: new Float32Array(10), dims: [1, 1, 2, 5] } }] }).then(
      () => 'resolved',
      (e) => e.message,
    ),
  );
  assert.match(bad, /Input3/);
  assert.equal(await page.$eval('#q-error', (e) => e.textContent), `quantize model.onnx: ${bad}`);
  console.log(`bad sample shape, shown in the page: ${bad}`);
  // Quantizing the int8 model again is refused, in the page.
  await page.click('#quantize');
  await page.click('#q-start');
  await page.waitForSelector('#q-error:not([hidden])');
  assert.match(await page.$eval('#q-error', (e) => e.textContent), /already quantized/);
  assert.match(await page.$eval('#status-text', (e) => e.textContent), /already quantized/);
  await shot(page, 'quantize-refused');
  assert.deepEqual(errors, []);
  await page.close();
});

test('dynamic int8 in the page: the openwakeword MLP from a file becomes onnxruntime\'s dynamic form (the package\'s bytes), its three products on the int8 GEMM; an opset-8 model is refused', async () => {
  const { page, errors } = await openPage();
  const file = path.join(SHARED, 'models/openwakeword-hello-deepa-mlp/model.onnx');
  await page.setInputFiles('#file', file);
  await page.waitForFunction(() => document.querySelector('#graph svg title')?.textContent === 'model.onnx');
  await page.click('#quantize');
  await page.check('#q-dynamic');
  await page.click('#q-start');
  await page.waitForFunction(() => document.getElementById('quant-panel').dataset.ran === 'true', null, { timeout: 60000 });
  const summary = await page.$eval('#q-summary', (e) => e.textContent);
  assert.match(summary, /dynamic int8, 3 of 3 MatMul\/Gemm quantized.*no calibration/);
  assert.equal(await page.$eval('#graph svg title', (e) => e.textContent), 'model (int8, wasmq)');
  const graph = await page.evaluate(() => [...document.querySelectorAll('#graph .wq-node')].map((e) => e.textContent));
  assert.equal(graph.filter((t) => /QGemmToFloat/.test(t)).length, 3, graph.join(' | '));
  const cols = await quantColumns(page);
  assert.ok(cols.float.ms > 0 && cols.int8.ms > 0);
  const [onnx] = await Promise.all([page.waitForEvent('download'), page.click('#q-onnx')]);
  const want = (await quantizeDynamic(readFileSync(file))).onnx;
  assert.ok(Buffer.from(readFileSync(await onnx.path())).equals(Buffer.from(want)), 'the page writes the package\'s bytes');
  console.log(`openwakeword MLP, dynamic int8 in the page: ${summary.split('\n')[0]}; float ${cols.float.ms.toFixed(3)} ms, int8 ${cols.int8.ms.toFixed(3)} ms`);
  await shot(page, 'quantize-dynamic');
  // mnist-8 is opset 8: DynamicQuantizeLinear needs 11, said in the page.
  await page.setInputFiles('#file', path.join(SHARED, 'models/mnist-8/model.onnx'));
  await page.waitForFunction(() => document.querySelector('#graph svg title')?.textContent === 'model.onnx' && document.getElementById('quant-panel').dataset.state !== 'busy');
  await page.click('#quantize');
  await page.check('#q-dynamic');
  await page.click('#q-start');
  await page.waitForSelector('#q-error:not([hidden])');
  assert.match(await page.$eval('#q-error', (e) => e.textContent), /opset 11/);
  assert.deepEqual(errors, []);
  await page.close();
});

// Five small PNGs of seeded patterns: what a user drags from a folder.
function pngFiles() {
  return [0, 1, 2, 3, 4].map((k) => {
    const png = new PNG({ width: 40 + 4 * k, height: 30 + 2 * k });
    for (let i = 0; i < png.width * png.height; i++) {
      const x = i % png.width;
      const y = Math.floor(i / png.width);
      const v = ((x * (k + 3) + y * (7 - k) + ((x * y) % (11 + k))) * 5) % 256;
      png.data.set([v, (v * 3) % 256, 255 - v, 255], 4 * i);
    }
    return { name: `img${k}.png`, bytes: [...PNG.sync.write(png)] };
  });
}

test('images dropped on the Quantize panel calibrate: decoded by the browser, the same ONNX bytes as quantize() in Node on the same files', async () => {
  const { page, errors } = await openPage();
  await page.setInputFiles('#file', path.join(SHARED, 'models/mnist-8/model.onnx'));
  await page.waitForFunction(() => document.querySelector('#graph svg title')?.textContent === 'model.onnx');
  await page.click('#quantize');
  assert.equal(await page.$eval('#q-images', (e) => e.disabled), true);
  const files = pngFiles();
  const drop = async (list) => {
    const dataTransfer = await page.evaluateHandle((fs) => {
      const dt = new DataTransfer();
      for (const f of fs) dt.items.add(new File([new Uint8Array(f.bytes)], f.name, { type: f.type ?? 'image/png' }));
      return dt;
    }, list);
    await page.dispatchEvent('#quant-panel', 'drop', { dataTransfer });
  };
  // Not an image: refused in the panel, no model opened.
  await drop([{ name: 'notes.txt', bytes: [104, 105], type: 'text/plain' }]);
  await page.waitForSelector('#q-error:not([hidden])');
  assert.match(await page.$eval('#q-error', (e) => e.textContent), /PNG or JPEG/);
  await drop(files.slice(0, 2));
  await page.waitForFunction(() => document.getElementById('quant-panel').dataset.images === '2');
  await drop(files.slice(2));
  await page.waitForFunction(() => document.getElementById('quant-panel').dataset.images === '5');
  assert.equal(await page.$eval('#q-images', (e) => e.checked), true);
  assert.equal(await page.$eval('#q-images-text', (e) => e.textContent), '5 dropped images (drop more)');
  assert.deepEqual(await page.$$eval('#graph-model option', (os) => os.map((o) => o.textContent)), ['model.onnx']);
  await page.click('#q-start');
  await page.waitForFunction(() => document.getElementById('quant-panel').dataset.ran === 'true', null, { timeout: 60000 });
  assert.equal(await page.$eval('#quant-panel', (e) => `${e.dataset.done}/${e.dataset.total}`), '5/5');
  assert.match(await page.$eval('#q-summary', (e) => e.textContent), /images preprocessed by the default spec \(GRAY, pixels \/ 255, crop\)/);
  await shot(page, 'quantize-dropped-images');
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('#q-onnx')]);
  const pageOnnx = readFileSync(await download.path());
  // Node: the same files decoded by pngjs, the same spec, the same quantizer.
  const spec = resolveImageSpec({}, [{ name: 'Input3', dtype: 'float32', shape: [1, 1, 28, 28] }]);
  const q = await quantize(readFileSync(path.join(SHARED, 'models/mnist-8/model.onnx')));
  try {
    for (const f of files) await q.observe({ Input3: imageToTensor(decodeImageFile(Buffer.from(f.bytes), f.name), spec) });
    const { onnx, report } = await q.finish();
    assert.equal(report.heldOutSamples, 1);
    assert.deepEqual([...pageOnnx], [...onnx]);
  } finally {
    q.dispose();
  }
  assert.deepEqual(errors, []);
  await page.close();
});

// 16-bit PCM mono WAV bytes of float samples in [-1, 1].
function wavBytes(samples, rate) {
  const b = Buffer.alloc(44 + 2 * samples.length);
  b.write('RIFF', 0);
  b.writeUInt32LE(36 + 2 * samples.length, 4);
  b.write('WAVEfmt ', 8);
  b.writeUInt32LE(16, 16);
  b.writeUInt16LE(1, 20); // PCM
  b.writeUInt16LE(1, 22); // mono
  b.writeUInt32LE(rate, 24);
  b.writeUInt32LE(2 * rate, 28);
  b.writeUInt16LE(2, 32);
  b.writeUInt16LE(16, 34);
  b.write('data', 36);
  b.writeUInt32LE(2 * samples.length, 40);
  samples.forEach((v, i) => b.writeInt16LE(Math.max(-32768, Math.min(32767, Math.round(v * 32767))), 44 + 2 * i));
  return b;
}

test('voice activity demo: a generated WAV (espeak-ng speech between silences) through Silero v3.1, float and int8 quantized in the page, decisions as in Node', { skip: !haveSpeechTools() && 'espeak-ng and sox are needed' }, async () => {
  const { samples } = synthesizeRecording();
  const wav = wavBytes(samples, 16000);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'wasmq-vad-'));
  const file = path.join(dir, 'speech.wav');
  writeFileSync(file, wav);
  // The float model in Node on the same 16-bit samples: the page must find the same speech chunks.
  const pcm = Float32Array.from({ length: samples.length }, (_, i) => wav.readInt16LE(44 + 2 * i) / 32768);
  const model = await load(path.join(SHARED, 'models/silero-vad-v3.1/model.onnx'));
  const stream = model.stream({ hn: 'h0', cn: 'c0' });
  let speech = 0;
  const chunks = Math.floor(pcm.length / 1536);
  for (let k = 0; k < chunks; k++) speech += (await stream.push(pcm.subarray(k * 1536, (k + 1) * 1536))).output.data[1] > 0.5;
  model.dispose();
  const { page, errors } = await openPage('?demo=vad');
  try {
    await page.waitForSelector('#vad-file');
    await page.setInputFiles('#vad-file', file);
    await page.waitForSelector('[data-done="true"]', { timeout: 240000 });
    const d = await page.$eval('[data-done="true"]', (e) => ({ ...e.dataset }));
    console.log(`vad: ${await page.$eval('#vad-info', (e) => e.textContent)}`);
    await shot(page, 'vad-demo');
    assert.equal(Number(d.chunks), chunks);
    assert.equal(Number(d.speech), speech, 'float speech chunks equal to Node\'s');
    assert.ok(speech > chunks / 5 && speech < (chunks * 4) / 5, `speech and silence both present (${speech} of ${chunks})`);
    assert.ok(Number(d.same) >= 0.97 * chunks, `int8 decisions equal to float on ${d.same} of ${chunks}`);
    assert.deepEqual(errors, []);
  } finally {
    await page.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('int8 demos: smallcnn (QDQ) and kws-dscnn draw int8 regions; opening a file by the picker', async () => {
  const { page, errors } = await openPage('?demo=smallcnn');
  await page.waitForSelector('#graph .wq-node');
  const nodes = await nodeAttrs(page);
  // The input's NCHW->NHWC transition is fused into its QuantizeLinear.
  assert.equal(nodes.length, 8);
  assert.deepEqual(nodes.filter((n) => n.transition).map((n) => n.transition), ['NCHW->NHWC']);
  assert.match(await page.$eval('#summary', (e) => e.textContent), /^int8: 6 of 8 nodes in 1 region;.*1 transition moving 0 B \(1 fused\)/);
  await shot(page, 'smallcnn-demo');
  // Nothing quantizes here, so the quantizer's wasm is never fetched.
  assert.deepEqual(page.requested.filter((u) => /quant/.test(u)), []);
  await page.setInputFiles('#file', path.join(SHARED, 'models/synthetic/smallcnn_f32.onnx'));
  await page.waitForFunction(() => document.querySelector('#graph svg title')?.textContent === 'smallcnn_f32.onnx');
  assert.ok((await nodeAttrs(page)).every((n) => n.backend === 'float'));
  assert.deepEqual(errors, []);
  await page.close();
});

test('layout decisions in the side panel: a transition says which readers needed its order and where its tensor comes from', async () => {
  const { page, errors } = await openPage('?demo=smallcnn');
  await page.waitForSelector('#graph .wq-node');
  await page.setInputFiles('#file', path.join(REPO, 'tests/models/ops_qdq.onnx'));
  await page.waitForFunction(() => document.querySelector('#graph svg title')?.textContent === 'ops_qdq.onnx');
  // The records the page draws from: the model's own graph() (same core).
  const m = await load(readFileSync(path.join(REPO, 'tests/models/ops_qdq.onnx')));
  const g = m.graph();
  m.dispose();
  const t = g.transitions.find((x) => !x.fused && x.to === 'NCHW');
  await clickNode(page, t.node);
  const panel = await page.$eval('#side', (e) => {
    const dd = e.querySelector('dd[data-needed-by]');
    return { why: e.querySelector('dd[data-layout-why]')?.dataset.layoutWhy, neededBy: dd?.dataset.neededBy, bytes: dd?.dataset.bytes, producer: dd?.dataset.producer, text: dd?.textContent };
  });
  assert.deepEqual([panel.why, panel.neededBy, panel.bytes, panel.producer], ['TRANSITION', t.needed_by.join(' '), String(t.bytes), String(t.producer)]);
  const reader = g.nodes[t.needed_by[0]];
  assert.ok(panel.text.includes(`${reader.op} '${reader.name}' (${reader.layout.label}, ${reader.layout.why})`), panel.text);
  assert.ok(panel.text.includes(`${g.nodes[t.producer].op} '${g.nodes[t.producer].name}'`), panel.text);
  // The reader's own panel: its label, why, and the transition it needed.
  await clickNode(page, reader.id);
  const readerPanel = await page.$eval('#side', (e) => ({ why: e.querySelector('dd[data-layout-why]')?.dataset.layoutWhy, needs: e.querySelector('dd[data-needs]')?.dataset.needs, other: e.querySelector('[data-other-bytes]')?.dataset.otherBytes }));
  assert.deepEqual(readerPanel, { why: reader.layout.why, needs: String(t.node), other: String(reader.layout.other_bytes) });
  // A conv: fixed channels-last by its kernel; the drawn node carries the code too.
  const conv = g.nodes.find((n) => n.op === 'QConv');
  assert.equal(await page.$eval(`#graph .wq-node[data-node-id="${conv.id}"]`, (e) => e.dataset.layoutWhy), 'KERNEL_CHANNELS_LAST');
  await clickNode(page, t.node);
  await shot(page, 'layout-why');
  assert.deepEqual(errors, []);
  await page.close();
});

// What is asserted is that the layout leaves the page responsive (it runs in
// the Worker); its duration is printed, not asserted: it depends on the
// machine's load (3.5 s in a suite run with builds running beside it).
test('layout of a 1,000-node graph runs in the Worker and the page keeps responding', async () => {
  const { page, errors } = await openPage();
  const r = await page.evaluate(() => globalThis.wasmqInspector.layoutBenchmark(1000));
  console.log(
    `layout 1000-node graph in the worker: ${r.workerMs.toFixed(0)} ms (wall ${r.wallMs.toFixed(0)} ms, ${r.nodes} nodes, ${r.edges} edges); ` +
      `main thread: ${r.ticks} timer ticks, longest gap ${r.maxMainThreadGapMs.toFixed(0)} ms`,
  );
  assert.ok(r.nodes >= 1000);
  assert.ok(r.ticks > 0, 'the main thread ran timers while the Worker laid out the graph');
  assert.ok(r.maxMainThreadGapMs < 200, `main thread stalled ${r.maxMainThreadGapMs} ms`);
  assert.deepEqual(errors, []);
  await page.close();
});

/** sRGB hex as seen with a red-green deficiency (Viénot, Brettel & Mollon 1999, protan and deutan). */
function simulated(hex, kind) {
  const lin = (c) => (c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4);
  const [r, g, b] = [1, 3, 5].map((i) => lin(parseInt(hex.slice(i, i + 2), 16) / 255));
  const m = kind === 'protan' ? [[0.11238, 0.88762, 0], [0.11238, 0.88762, 0], [0.00401, -0.00401, 1]] : [[0.29275, 0.70725, 0], [0.29275, 0.70725, 0], [-0.02234, 0.02234, 1]];
  return m.map((row) => 255 * Math.max(0, Math.min(1, row[0] * r + row[1] * g + row[2] * b)) ** (1 / 2.2));
}

test('backend is the fill, the same as the legend, each backend its own colour (also with red-green colour blindness); regions are outlines', async () => {
  const { page, errors } = await openPage('?demo=smallcnn');
  await page.waitForSelector('#graph .wq-node');
  const legend = await page.$$eval('#legend [data-legend]', (els) => Object.fromEntries(els.map((e) => [e.dataset.legend, getComputedStyle(e.querySelector('i')).backgroundColor])));
  const drawn = await page.$$eval('#graph .wq-node', (els) =>
    els.map((e) => ({ backend: e.dataset.backend, role: e.dataset.role, region: Number(e.dataset.region), fill: getComputedStyle(e.querySelector('rect, polygon')).fill, stroke: e.querySelector('rect, polygon').getAttribute('stroke-width') })),
  );
  const keyOf = (n) => (n.role === 'transition' ? 'transition' : n.role === 'quantize' || n.role === 'dequantize' ? 'quantize' : n.backend);
  for (const n of drawn) assert.equal(n.fill, legend[keyOf(n)], `${n.backend}/${n.role} drawn ${n.fill}, legend ${legend[keyOf(n)]}`);
  assert.ok(new Set(drawn.map(keyOf)).size >= 2, 'the demo shows more than one backend');
  // Region members are outlined (thick stroke), never filled by region.
  assert.ok(drawn.filter((n) => n.region > 0).every((n) => Number(n.stroke) >= 3));
  assert.ok(drawn.filter((n) => n.region <= 0).every((n) => Number(n.stroke) < 3));
  // The five backend colours are far apart as drawn, and as a protan or deutan viewer sees them.
  const hex = Object.values(BACKEND_COLOURS).slice(0, 5);
  for (const kind of [null, 'protan', 'deutan']) {
    const seen = hex.map((h) => (kind ? simulated(h, kind) : [1, 3, 5].map((i) => parseInt(h.slice(i, i + 2), 16))));
    let closest = Infinity;
    for (let i = 0; i < seen.length; i++) for (let j = i + 1; j < seen.length; j++) closest = Math.min(closest, Math.hypot(...seen[i].map((v, k) => v - seen[j][k])));
    console.log(`backend colours, closest pair ${kind ?? 'as drawn'}: ${closest.toFixed(0)} (RGB distance)`);
    assert.ok(closest >= 40, `${kind}: two backend colours ${closest.toFixed(0)} apart`);
  }
  await shot(page, 'backend-colours');
  assert.deepEqual(errors, []);
  await page.close();
});

test('a 211-node graph (ppocr-mobile-v2-cls) opens readable: every visible node label >= 9 px on screen; memory lanes folded', async () => {
  const { page, errors } = await openPage();
  await page.setInputFiles('#file', path.join(SHARED, 'models/ppocr-mobile-v2-cls/model.onnx'));
  await page.waitForFunction(() => document.querySelector('#graph svg title')?.textContent === 'model.onnx', null, { timeout: 60000 });
  const r = await page.evaluate(() => {
    const view = document.getElementById('graph').getBoundingClientRect();
    const px = [];
    for (const g of document.querySelectorAll('#graph .wq-node')) {
      const t = g.querySelector('text');
      const b = t.getBoundingClientRect();
      if (b.right < view.left || b.left > view.right || b.bottom < view.top || b.top > view.bottom) continue;
      px.push(Number(t.getAttribute('font-size')) * t.getScreenCTM().a);
    }
    return { total: document.querySelectorAll('#graph .wq-node').length, visible: px.length, min: Math.min(...px), view: [view.width, view.height] };
  });
  console.log(`211-node graph at open: ${r.visible} of ${r.total} nodes in view (${r.view.map(Math.round).join('x')} px), smallest label ${r.min.toFixed(1)} px`);
  assert.ok(r.total >= 200, `${r.total} nodes`);
  assert.ok(r.visible >= 5, `${r.visible} nodes in view`);
  assert.ok(r.min >= 9, `a visible label is ${r.min} px`);
  assert.equal(await page.$eval('#lanes-box', (e) => e.open), false);
  // The minimap shows the whole graph and a box for the view; a click at its bottom goes there.
  const box = () => page.$eval('#minimap .mm-view', (r) => ({ y: Number(r.getAttribute('y')), h: Number(r.getAttribute('height')) }));
  assert.equal(await page.$eval('#minimap', (e) => e.hidden), false);
  const before = await box();
  const mm = await page.$eval('#minimap', (e) => e.getBoundingClientRect().toJSON());
  await page.mouse.click(mm.x + mm.width / 2, mm.y + mm.height - 4);
  const after = await box();
  console.log(`minimap: view box y ${before.y.toFixed(0)} -> ${after.y.toFixed(0)} (height ${after.h.toFixed(0)} graph units)`);
  assert.ok(after.y > before.y + after.h, JSON.stringify({ before, after }));
  // Now the view shows the graph's last nodes (it has 211, in execution order).
  const inView = await page.$$eval('#graph .wq-node', (els) => {
    const view = document.getElementById('graph').getBoundingClientRect();
    return els.filter((e) => {
      const b = e.getBoundingClientRect();
      return b.bottom > view.top && b.top < view.bottom;
    }).map((e) => Number(e.dataset.nodeId));
  });
  assert.ok(inView.length > 0 && Math.min(...inView) > 150, `in view after the click: ${inView}`);
  await shot(page, 'ppocr-initial-view');
  assert.deepEqual(errors, []);
  await page.close();
});

test('node panel: the ONNX attributes of the node and statistics of the weights it reads (shape, dtype, min/max, histogram)', async () => {
  const { page, errors } = await openPage();
  await page.setInputFiles('#file', path.join(SHARED, 'models/mnist-8/model.onnx'));
  await page.waitForFunction(() => document.querySelector('#graph svg title')?.textContent === 'model.onnx');
  const id = await page.$eval('#graph .wq-node[data-node="Convolution28"]', (e) => Number(e.dataset.nodeId));
  await clickNode(page, id);
  await page.waitForSelector('#side [data-onnx-node="Convolution28"]');
  const panel = await page.$eval('#side', (e) => ({
    attrs: Object.fromEntries([...e.querySelectorAll('[data-attr]')].map((d) => [d.dataset.attr, d.textContent])),
    weights: [...e.querySelectorAll('[data-weight]')].map((d) => ({ name: d.dataset.weight, min: Number(d.dataset.min), max: Number(d.dataset.max), text: d.textContent, bars: d.querySelectorAll('svg.hist rect').length })),
  }));
  // mnist-8's first convolution as the ONNX model zoo ships it: 5x5 kernel, SAME_UPPER, 8 filters of 1 channel.
  assert.equal(panel.attrs.kernel_shape, '[5, 5]');
  assert.equal(panel.attrs.auto_pad, '"SAME_UPPER"');
  assert.equal(panel.weights.length, 1);
  const w = panel.weights[0];
  assert.equal(w.name, 'Parameter5');
  assert.match(w.text, /float32 \[8, 1, 5, 5\] · 200 values/);
  assert.ok(w.min < 0 && w.max > 0 && w.bars === 16, JSON.stringify(w));
  await shot(page, 'node-panel-onnx');
  assert.deepEqual(errors, []);
  await page.close();
});

test('the graph can be drawn left to right: inputs on the left, outputs on the right, then top-down again', async () => {
  const { page, errors } = await openPage();
  await page.setInputFiles('#file', path.join(SHARED, 'models/mnist-8/model.onnx'));
  await page.waitForFunction(() => document.querySelector('#graph svg title')?.textContent === 'model.onnx');
  const extent = () =>
    page.evaluate(() => {
      const svg = document.querySelector('#graph svg');
      const at = (sel) => {
        const b = svg.querySelector(sel).getBBox();
        return { x: b.x, y: b.y };
      };
      return { input: at('[data-graph-input] rect'), output: at('[data-graph-output] rect') };
    });
  const tb = await extent();
  assert.ok(tb.output.y > tb.input.y + 200, JSON.stringify(tb));
  await page.click('#direction');
  await page.waitForFunction(() => document.getElementById('direction').dataset.direction === 'LR');
  await page.waitForFunction(() => {
    const svg = document.querySelector('#graph svg');
    const i = svg?.querySelector('[data-graph-input] rect')?.getBBox();
    const o = svg?.querySelector('[data-graph-output] rect')?.getBBox();
    return i && o && o.x > i.x + 200;
  });
  const lr = await extent();
  assert.ok(Math.abs(lr.output.y - lr.input.y) < 100, JSON.stringify(lr));
  await shot(page, 'left-to-right');
  await page.click('#direction');
  await page.waitForFunction(() => document.getElementById('direction').dataset.direction === 'TB');
  assert.deepEqual(errors, []);
  await page.close();
});

test('int8 regions collapse into one box each (node count and top ops on it), edges across the border kept; a click opens it again', async () => {
  const { page, errors } = await openPage('?demo=smallcnn');
  await page.waitForSelector('#graph .wq-node');
  const full = await nodeAttrs(page);
  const inRegion = full.filter((n) => n.region === '1').length;
  await page.click('#collapse');
  await page.waitForSelector('#graph [data-region-group="1"]');
  const box = await page.$eval('#graph [data-region-group="1"]', (e) => ({ members: Number(e.dataset.members), text: e.textContent }));
  assert.equal(box.members, inRegion);
  assert.match(box.text, new RegExp(`int8 region 1.*${inRegion} nodes: `));
  const shown = await page.$$eval('#graph .wq-node', (els) => els.length);
  assert.equal(shown, full.length - inRegion + 1);
  // Every edge still ends at a drawn box.
  const dangling = await page.$$eval('#graph .wq-edges path', (ps) => {
    const keys = new Set([...document.querySelectorAll('#graph [data-key]')].map((e) => e.dataset.key));
    return ps.map((p) => p.dataset.edge.split('>')).filter(([a, b]) => !keys.has(a) || !keys.has(b)).length;
  });
  assert.equal(dangling, 0);
  console.log(`smallcnn collapsed: ${full.length} nodes -> ${shown} boxes; ${box.text}`);
  await shot(page, 'regions-collapsed');
  await page.click('#graph [data-region-group="1"]');
  await page.waitForFunction((n) => document.querySelectorAll('#graph .wq-node').length === n, full.length);
  assert.deepEqual(errors, []);
  await page.close();
});
