// `npm run web` (vite's dev server) with the threaded core built, in
// Debian's Chromium: every script and worker it serves carries COOP/COEP, so
// the page is cross-origin isolated and the model loads, runs, and runs on 2
// threads; a load failure is shown in the page, never an endless "Loading…".
// (The built preview is covered by inspector.test.mjs.)
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createServer } from 'vite';
import { launchChromium, watchErrors, chromiumAvailable } from './chromium.mjs';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const CONFIG = path.join(REPO, 'web/vite.config.mjs');

let server;
let browser;
let baseUrl;

before(async () => {
  assert.ok(chromiumAvailable(), 'Chromium missing: run bash scripts/setup.sh --browser');
  // The state that used to hang the page: the threaded core exists (a no-op when up to date).
  execFileSync('bash', ['wasm_build/build.sh', '--threads'], { cwd: REPO, stdio: 'ignore', env: { ...process.env, NODE_PATH: '/usr/share/nodejs' } });
  server = await createServer({ configFile: CONFIG, server: { port: 0, host: '127.0.0.1' }, logLevel: 'warn' });
  await server.listen();
  baseUrl = server.resolvedUrls.local[0];
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  await server?.close();
});

test('npm run web: every script and worker carries COOP/COEP; a demo loads, runs, on 2 threads', async () => {
  // What the page and its workers fetch, straight from the server.
  for (const file of ['', 'app.mjs', 'run-worker.mjs', 'layout-worker.mjs', 'wasmq-mt/wasmq.mjs', 'wasmq-mt/wasmq.worker.js', 'wasmq-mt/wasmq.wasm', 'models/smallcnn-qdq.onnx']) {
    const r = await fetch(baseUrl + file);
    assert.equal(r.status, 200, file);
    assert.equal(r.headers.get('cross-origin-embedder-policy'), 'require-corp', file);
    assert.equal(r.headers.get('cross-origin-opener-policy'), 'same-origin', file);
    await r.arrayBuffer();
  }
  const page = await browser.newPage();
  const errors = watchErrors(page);
  await page.goto(`${baseUrl}?demo=smallcnn`);
  await page.waitForSelector('#graph .wq-node', { timeout: 60000 });
  assert.equal(await page.evaluate(() => globalThis.crossOriginIsolated), true);
  const cores = await page.evaluate(() => navigator.hardwareConcurrency);
  const status = await page.$eval('#status', (e) => ({ build: e.dataset.build, threads: Number(e.dataset.threads), shown: document.getElementById('threads').textContent }));
  console.log(`dev server: ${status.build}, ${status.shown}`);
  if (cores > 1) assert.deepEqual([status.build, status.threads, status.shown], ['simd-threads', Math.min(cores, 4), `${Math.min(cores, 4)} threads`]);
  await page.click('#run');
  await page.waitForFunction(() => /per run/.test(document.getElementById('status-text').textContent), null, { timeout: 30000 });
  assert.match(await page.$eval('#status-text', (e) => e.textContent), /smallcnn.*ms per run/);
  assert.deepEqual(errors, []);
  await page.close();
});

test('npm run web: a model that fails to load says why in the page', async () => {
  const page = await browser.newPage();
  await page.goto(baseUrl);
  await page.setInputFiles('#file', { name: 'notes.onnx', mimeType: 'application/octet-stream', buffer: Buffer.from('these are my notes, not a model\n') });
  await page.waitForSelector('#status.error', { timeout: 30000 });
  const text = await page.$eval('#status-text', (e) => e.textContent);
  console.log(`shown: ${text}`);
  assert.match(text, /^notes\.onnx: /);
  await page.close();
});

test('npm run web: a thread worker the page may not start (served without COEP) falls back to one thread, says why, and runs', async () => {
  // The state the dev server used to be in: the worker script served without
  // COEP (a second server whose first middleware drops that header for it).
  const dropCoep = {
    name: 'drop-coep-on-thread-worker',
    enforce: 'pre',
    configureServer(s) {
      s.middlewares.use((req, res, next) => {
        if (/wasmq\.worker\.js/.test(req.url ?? '')) {
          const set = res.setHeader.bind(res);
          res.setHeader = (k, v) => (k.toLowerCase() === 'cross-origin-embedder-policy' ? res : set(k, v));
        }
        next();
      });
    },
  };
  const broken = await createServer({ configFile: CONFIG, server: { port: 0, host: '127.0.0.1' }, logLevel: 'warn', plugins: [dropCoep] });
  await broken.listen();
  const worker = await fetch(`${broken.resolvedUrls.local[0]}wasmq-mt/wasmq.worker.js`);
  assert.equal(worker.headers.get('cross-origin-embedder-policy'), null);
  await worker.arrayBuffer();
  after(() => broken.close());
  const page = await browser.newPage();
  const errors = watchErrors(page);
  await page.goto(`${broken.resolvedUrls.local[0]}?demo=smallcnn`);
  await page.waitForSelector('#graph .wq-node', { timeout: 60000 });
  const status = await page.$eval('#status', (e) => ({ build: e.dataset.build, threads: Number(e.dataset.threads), shown: document.getElementById('threads').textContent }));
  console.log(`worker blocked: ${status.shown}`);
  assert.deepEqual([status.build, status.threads], ['simd', 1]);
  assert.match(status.shown, /^1 thread \(\d+ asked\): .*thread worker .*failed to start.*Cross-Origin-Embedder-Policy/);
  await page.click('#run');
  await page.waitForFunction(() => /per run/.test(document.getElementById('status-text').textContent), null, { timeout: 30000 });
  // Chromium reports the blocked script itself; nothing else went wrong.
  assert.ok(errors.every((e) => /wasmq\.worker\.js|ERR_BLOCKED_BY_RESPONSE|Failed to load resource/.test(e)), errors.join('\n'));
  await page.close();
});

test('npm run web before the threaded core is built: one thread, and the page says how to build it', async () => {
  const noThreaded = {
    name: 'no-threaded-core',
    enforce: 'pre',
    configureServer(s) {
      s.middlewares.use((req, res, next) => {
        if (!/^\/wasmq-mt\//.test(req.url ?? '')) return next();
        res.statusCode = 404;
        res.end('not built');
      });
    },
  };
  const server2 = await createServer({ configFile: CONFIG, server: { port: 0, host: '127.0.0.1' }, logLevel: 'warn', plugins: [noThreaded] });
  await server2.listen();
  after(() => server2.close());
  const page = await browser.newPage();
  await page.goto(`${server2.resolvedUrls.local[0]}?demo=smallcnn`);
  await page.waitForSelector('#graph .wq-node', { timeout: 60000 });
  const shown = await page.$eval('#threads', (e) => e.textContent);
  console.log(`no threaded core: ${shown}`);
  assert.match(shown, /^1 thread \(\d+ asked\): cannot load the threaded wasm core .*\(build it: bash wasm_build\/build\.sh --threads\)$/);
  await page.close();
});
