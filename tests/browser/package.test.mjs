// The npm package as a new user gets it: `npm pack` (once), the tarball
// installed into a fresh project (once), that project bundled with vite,
// webpack and esbuild (platform browser) and run in Chromium, served as plain
// files with an import map, and used from Node as ESM, CommonJS and
// TypeScript (strict). Bundlers that copy `new URL(..., import.meta.url)`
// assets need no setting; everything else sets one: configure({ baseUrl }).
// Prints the bundle sizes.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, statSync, writeFileSync, createReadStream, existsSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build as viteBuild } from 'vite';
import { build as esbuild } from 'esbuild';
import webpack from 'webpack';
import { SHARED, NATIVE_CLI } from '../node/helpers.mjs';
import { encodeNpy } from '../../src/js/npy.mjs';
import { load, quantize } from '../../src/js/index.mjs';
import { launchChromium, watchErrors } from './chromium.mjs';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const MODEL = path.resolve(SHARED, 'models/synthetic/smallcnn_qdq.onnx');
// A float model for quantize(), served as /float.onnx.
const FLOAT_MODEL = path.resolve(SHARED, 'models/mnist-8/model.onnx');
const work = mkdtempSync(path.join(tmpdir(), 'wq-consumer-'));
const app = path.join(work, 'app');
let browser;
let packedReadme;

const MAIN_JS = `import { load, configure } from 'wasmq';
// esbuild does not rewrite new URL(..., import.meta.url): the page says where the package's wasm_build/out/ folder is.
if (globalThis.WASMQ_BASE) configure({ baseUrl: WASMQ_BASE });
const bytes = new Uint8Array(await (await fetch('./model.onnx')).arrayBuffer());
const model = await load(new Blob([bytes]));
const input = model.inputs[0];
const data = new Float32Array(1 * 3 * 224 * 224).map((_, i) => ((i * 7919) % 255) / 255);
const out = await model.run({ [input.name]: { data, dims: [1, 3, 224, 224] } });
const summary = model.graph().summary;
window.result = { output: Array.from(Object.values(out)[0].data), summary };
document.body.textContent = summary;
`;

before(async () => {
  // What `npm pack` ships, staged outside the repository (prepack swaps the
  // README in place; a suite run must not touch the checkout): the package's
  // "files", package.json, and the npm users' README as prepack puts it.
  const pkg = JSON.parse(readFileSync(path.join(REPO, 'package.json'), 'utf8'));
  const stage = path.join(work, 'stage');
  for (const f of [...pkg.files, 'package.json']) cpSync(path.join(REPO, f), path.join(stage, f), { recursive: true });
  cpSync(path.join(REPO, 'docs/npm-readme.md'), path.join(stage, 'README.md'));
  const packed = JSON.parse(execFileSync('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', work], { cwd: stage, encoding: 'utf8' }));
  const tarball = path.join(work, packed[0].filename);
  mkdirSync(app);
  writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
  execFileSync('npm', ['install', '--ignore-scripts', '--no-audit', '--no-fund', '--prefer-offline', '--loglevel=error', tarball], { cwd: app, stdio: 'pipe' });
  // The package's README is the one for npm users (src/js/README.md).
  packedReadme = execFileSync('tar', ['-xzOf', tarball, 'package/README.md'], { encoding: 'utf8' });
  writeFileSync(path.join(app, 'main.js'), MAIN_JS);
  writeFileSync(path.join(app, 'index.html'), '<!doctype html><meta charset="utf-8"><link rel="icon" href="data:,"><title>consumer</title><script type="module" src="./main.js"></script>');
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
});

/** Serves dir; /model.onnx and /float.onnx are the shared models. */
async function serve(dir) {
  const types = { '.js': 'text/javascript', '.mjs': 'text/javascript', '.html': 'text/html', '.wasm': 'application/wasm' };
  const server = createServer((req, res) => {
    const url = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    const shared = { '/model.onnx': MODEL, '/float.onnx': FLOAT_MODEL }[url];
    const file = shared ?? path.join(dir, url === '/' ? 'index.html' : url);
    if (!file.startsWith(dir) && !shared) return res.writeHead(403).end();
    if (!existsSync(file) || statSync(file).isDirectory()) return res.writeHead(404).end();
    res.writeHead(200, { 'Content-Type': types[path.extname(file)] ?? 'application/octet-stream' });
    createReadStream(file).pipe(res);
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  // Chromium keeps its connections open: close them, or close() waits for them.
  const close = () =>
    new Promise((r) => {
      server.close(r);
      server.closeAllConnections();
    });
  return { url: `http://127.0.0.1:${server.address().port}/`, close };
}

async function expected() {
  const model = await load(MODEL);
  try {
    const data = new Float32Array(1 * 3 * 224 * 224).map((_, i) => ((i * 7919) % 255) / 255);
    const out = await model.run({ [model.inputs[0].name]: { data, dims: [1, 3, 224, 224] } });
    return { output: Array.from(Object.values(out)[0].data), summary: model.graph().summary };
  } finally {
    model.dispose();
  }
}

async function runInChromium(dir, file = '') {
  const server = await serve(dir);
  const page = await browser.newPage();
  const errors = watchErrors(page);
  try {
    await page.goto(server.url + file);
    await page.waitForFunction(() => window.result, null, { timeout: 30000 });
    assert.deepEqual(errors, []);
    return await page.evaluate(() => window.result);
  } finally {
    await page.close();
    await server.close();
  }
}

const sizeOf = (dir) => readdirSync(dir, { recursive: true }).map((f) => path.join(dir, f)).filter((f) => statSync(f).isFile()).map((f) => [path.relative(dir, f), statSync(f).size]);

test('the packed tarball: LICENSE, types, no test or build files; wasmq --version from the installed bin', () => {
  const pkgDir = path.join(app, 'node_modules/wasmq');
  for (const f of ['LICENSE', 'package.json', 'src/js/index.mjs', 'src/js/index.d.ts', 'src/js/platform/browser.mjs', 'wasm_build/out/wasmq.wasm', 'wasm_build/out/wasmq-quant.mjs', 'wasm_build/out/wasmq-quant.wasm']) {
    assert.ok(existsSync(path.join(pkgDir, f)), `${f} in the package`);
  }
  assert.ok(!existsSync(path.join(pkgDir, 'tests')));
  const version = JSON.parse(readFileSync(path.join(REPO, 'package.json'), 'utf8')).version;
  assert.equal(execFileSync(path.join(app, 'node_modules/.bin/wasmq'), ['--version'], { encoding: 'utf8' }).trim(), version);
});

test('consumer project built with vite runs the model in Chromium (same output as Node)', async () => {
  const outDir = path.join(work, 'vite-dist');
  await viteBuild({ root: app, base: './', logLevel: 'warn', build: { outDir, target: 'es2022' } });
  const files = sizeOf(outDir);
  console.log(`vite bundle: ${files.map(([f, s]) => `${f} ${(s / 1024).toFixed(1)} KB`).join(', ')}`);
  const got = await runInChromium(outDir);
  assert.deepEqual(got, await expected());
});

test('consumer project built with webpack (target web) runs the model in Chromium, no setting needed', async () => {
  const outDir = path.join(work, 'webpack-dist');
  const stats = await new Promise((resolve, reject) =>
    webpack({ mode: 'production', context: app, entry: './main.js', target: 'web', output: { path: outDir, filename: 'main.js' }, performance: { hints: false } }, (err, st) => (err ? reject(err) : resolve(st))),
  );
  assert.ok(!stats.hasErrors(), stats.toString('errors-only'));
  // webpack emits the cores as assets (new URL(..., import.meta.url)).
  const files = sizeOf(outDir);
  assert.ok(files.some(([f]) => f.endsWith('.wasm')), files.join(' '));
  console.log(`webpack bundle: ${files.map(([f, sz]) => `${f} ${(sz / 1024).toFixed(1)} KB`).join(', ')}`);
  writeFileSync(path.join(outDir, 'index.html'), '<!doctype html><meta charset="utf-8"><link rel="icon" href="data:,"><title>consumer</title><script src="./main.js"></script>');
  const got = await runInChromium(outDir);
  assert.deepEqual(got, await expected());
});

test('consumer project built with esbuild (platform browser) runs the model in Chromium', async () => {
  const outDir = path.join(work, 'esbuild-dist');
  mkdirSync(outDir, { recursive: true });
  await esbuild({ entryPoints: [path.join(app, 'main.js')], bundle: true, format: 'esm', platform: 'browser', target: 'es2022', outfile: path.join(outDir, 'main.js'), absWorkingDir: app, logLevel: 'error' });
  // The package's wasm_build/out/ folder is copied beside the bundle, as the README tells esbuild users.
  cpSync(path.join(app, 'node_modules/wasmq/wasm_build/out'), path.join(outDir, 'wasmq'), { recursive: true });
  writeFileSync(
    path.join(outDir, 'index.html'),
    `<!doctype html><meta charset="utf-8"><link rel="icon" href="data:,"><title>consumer</title><script>globalThis.WASMQ_BASE = './wasmq/';</script><script type="module" src="./main.js"></script>`,
  );
  const bundle = statSync(path.join(outDir, 'main.js')).size;
  console.log(`esbuild bundle: main.js ${(bundle / 1024).toFixed(1)} KB (+ the copied wasm_build/out/ folder as wasmq/)`);
  const got = await runInChromium(outDir);
  assert.deepEqual(got, await expected());
});

test('consumer project in Node as CommonJS: require() of the installed package loads and runs', () => {
  writeFileSync(path.join(app, 'node.cjs'), `const { load } = require('wasmq');
const { readFileSync } = require('node:fs');
load(readFileSync(${JSON.stringify(MODEL)})).then(async (m) => {
  const out = await m.run({ [m.inputs[0].name]: new Float32Array(3 * 224 * 224) });
  console.log(m.graph().summary, Object.keys(out).length);
});`);
  const out = execFileSync(process.execPath, ['node.cjs'], { cwd: app, encoding: 'utf8' });
  assert.match(out, /^int8: 6 of 8 nodes in 1 region.* 1\n$/);
});

// What a TypeScript user writes: run()'s outputs are Tensors whose data is
// typed by checking dtype (no casts); a wrong assumption does not compile.
const TS_MAIN = `import { load, configure, type Tensor, type Model } from 'wasmq';

declare const process: { argv: string[] };
configure({ baseUrl: new URL('../node_modules/wasmq/wasm_build/out/', import.meta.url) });
const model: Model = await load(process.argv[2]);
const input = model.inputs[0];
const out = await model.run({ [input.name]: { data: new Float32Array(3 * 224 * 224), dims: [1, 3, 224, 224] } });
let sum = 0;
for (const [name, tensor] of Object.entries(out)) {
  const t: Tensor = tensor;
  if (t.dtype === 'float32') {
    const data: Float32Array = t.data;
    sum += data.reduce((a, b) => a + b, 0);
  } else if (t.dtype === 'int64') {
    const data: BigInt64Array = t.data;
    sum += Number(data[0]);
  }
  console.log(name, t.dims.join('x'), t.dtype);
}
const one: Tensor<'float32'> | undefined = undefined;
// @ts-expect-error: data is a union until dtype is checked
const unchecked: Float32Array = out[model.outputs[0].name].data;
const profiled = await model.run({ [input.name]: new Float32Array(3 * 224 * 224) }, { profile: true });
console.log(profiled.profile?.length ?? 0, one, unchecked.length > 0, Number.isFinite(sum));
`;

test('consumer project in TypeScript (strict): run() outputs typed per dtype without casts; tsc passes and the output runs', () => {
  const ts = path.join(app, 'ts');
  mkdirSync(ts, { recursive: true });
  writeFileSync(path.join(ts, 'main.ts'), TS_MAIN);
  writeFileSync(
    path.join(ts, 'tsconfig.json'),
    JSON.stringify({ compilerOptions: { strict: true, target: 'es2022', module: 'nodenext', moduleResolution: 'nodenext', outDir: '../ts-out', types: [], lib: ['es2022', 'dom'], skipLibCheck: false, noUnusedLocals: false }, files: ['main.ts'] }),
  );
  const tsc = path.join(REPO, 'node_modules/typescript/bin/tsc');
  const r = spawnSync(process.execPath, [tsc, '-p', ts], { cwd: app, encoding: 'utf8' });
  assert.equal(r.status, 0, `tsc: ${r.stdout}${r.stderr}`);
  const out = execFileSync(process.execPath, [path.join(app, 'ts-out/main.js'), MODEL], { cwd: app, encoding: 'utf8' });
  assert.match(out, /float32/);
  assert.match(out, /^\d+ undefined true true$/m);
});

test("the main export is the API only; tooling entry points (getCore, resetCore, checkCase) are under 'wasmq/internal'", () => {
  writeFileSync(path.join(app, 'exports.mjs'), `import * as api from 'wasmq';
import * as internal from 'wasmq/internal';
console.log(JSON.stringify({ api: Object.keys(api).filter((k) => /core|case/i.test(k)), internal: Object.keys(internal).sort() }));`);
  const got = JSON.parse(execFileSync(process.execPath, ['exports.mjs'], { cwd: app, encoding: 'utf8' }));
  assert.deepEqual(got, { api: [], internal: ['checkCase', 'getCore', 'resetCore'] });
});

test('the tarball README is written for npm users: install and use first, no repository scripts; prepack/postpack swap it in and back', () => {
  // The swap on a copy of the layout (scripts/, docs/, README.md), never on the checkout.
  const copy = path.join(work, 'readme-swap');
  for (const f of ['scripts/pack-readme.mjs', 'docs/npm-readme.md', 'README.md']) cpSync(path.join(REPO, f), path.join(copy, f));
  const repoReadme = readFileSync(path.join(REPO, 'README.md'), 'utf8');
  execFileSync(process.execPath, [path.join(copy, 'scripts/pack-readme.mjs'), 'swap']);
  assert.equal(readFileSync(path.join(copy, 'README.md'), 'utf8'), readFileSync(path.join(REPO, 'docs/npm-readme.md'), 'utf8'));
  execFileSync(process.execPath, [path.join(copy, 'scripts/pack-readme.mjs'), 'restore']);
  assert.equal(readFileSync(path.join(copy, 'README.md'), 'utf8'), repoReadme);
  assert.ok(!existsSync(path.join(copy, '.README.repo.md')));
  const scripts = JSON.parse(readFileSync(path.join(REPO, 'package.json'), 'utf8')).scripts;
  assert.match(scripts.prepack, /pack-readme\.mjs swap/);
  assert.match(scripts.postpack, /pack-readme\.mjs restore/);
  assert.equal(packedReadme, readFileSync(path.join(REPO, 'docs/npm-readme.md'), 'utf8'));
  assert.match(packedReadme, /npm install/);
  assert.match(packedReadme, /configure\(\{ baseUrl/);
  assert.doesNotMatch(packedReadme, /scripts\/|demo\.sh|test\.sh/);
});

test('consumer project in Node: import from the installed package, run, and a clear error when the .wasm is elsewhere', () => {
  const script = `import { load, configure } from 'wasmq';
import { readFileSync } from 'node:fs';
const m = await load(readFileSync(${JSON.stringify(MODEL)}));
console.log(m.graph().summary);`;
  writeFileSync(path.join(app, 'node.mjs'), script);
  const out = execFileSync(process.execPath, ['node.mjs'], { cwd: app, encoding: 'utf8' });
  assert.match(out, /^int8: 6 of 8 nodes in 1 region/);
  // quantize() from the installed package (its wasmq-quant.wasm), then load() of the result.
  writeFileSync(path.join(app, 'quant.mjs'), `import { quantize, load } from 'wasmq';
import { readFileSync } from 'node:fs';
const q = await quantize(readFileSync(${JSON.stringify(FLOAT_MODEL)}));
await q.observe({ Input3: new Float32Array(784).map((_, i) => (i * 37) % 256) });
const { onnx } = await q.finish();
const m = await load(onnx);
console.log(m.graph().summary);`);
  assert.match(execFileSync(process.execPath, ['quant.mjs'], { cwd: app, encoding: 'utf8' }), /^int8: \d+ of \d+ nodes/);
  writeFileSync(path.join(app, 'bad.mjs'), `import { load, configure } from 'wasmq';
configure({ wasmUrl: 'http://127.0.0.1:9/missing/wasmq.wasm' });
try { await load(new Uint8Array(4)); } catch (e) { console.log(e.message); }`);
  const msg = execFileSync(process.execPath, ['bad.mjs'], { cwd: app, encoding: 'utf8' });
  assert.match(msg, /cannot load the wasm core from http:\/\/127\.0\.0\.1:9\/missing\/wasmq\.wasm/);
  assert.match(msg, /configure\(\{ wasmUrl/);
});

// No bundler: the installed package served as files, an import map naming
// the package entry and its #platform import (what package.json's
// "imports" does for bundlers and Node).
const IMPORT_MAP = {
  imports: {
    wasmq: './node_modules/wasmq/src/js/index.mjs',
    '#platform': './node_modules/wasmq/src/js/platform/browser.mjs',
  },
};

test('plain <script type=module> with an import map runs the model in Chromium', async () => {
  writeFileSync(
    path.join(app, 'plain.html'),
    `<!doctype html><meta charset="utf-8"><link rel="icon" href="data:,"><title>plain</title>
<script type="importmap">${JSON.stringify(IMPORT_MAP)}</script>
<script type="module" src="./main.js"></script>`,
  );
  const got = await runInChromium(app, 'plain.html');
  assert.deepEqual(got, await expected());
});

// Workers do not read import maps, so the Worker script is bundled (esbuild
// here; vite does the same for the inspector's Workers).
test('in a module Worker bundled by esbuild', async () => {
  const outDir = path.join(work, 'worker-dist');
  mkdirSync(outDir, { recursive: true });
  writeFileSync(
    path.join(app, 'worker-src.js'),
    `import { load, configure } from 'wasmq';
configure({ baseUrl: new URL('./wasmq/', self.location.href) });
self.onmessage = async ({ data }) => {
  const model = await load(new Blob([data]));
  const input = new Float32Array(1 * 3 * 224 * 224).map((_, i) => ((i * 7919) % 255) / 255);
  const out = await model.run({ [model.inputs[0].name]: { data: input, dims: [1, 3, 224, 224] } });
  self.postMessage({ output: Array.from(Object.values(out)[0].data), summary: model.graph().summary });
};`,
  );
  await esbuild({ entryPoints: [path.join(app, 'worker-src.js')], bundle: true, format: 'esm', platform: 'browser', target: 'es2022', outfile: path.join(outDir, 'worker.js'), absWorkingDir: app, logLevel: 'error' });
  cpSync(path.join(app, 'node_modules/wasmq/wasm_build/out'), path.join(outDir, 'wasmq'), { recursive: true });
  writeFileSync(
    path.join(outDir, 'worker.html'),
    `<!doctype html><meta charset="utf-8"><link rel="icon" href="data:,"><title>worker</title>
<script type="module">
const worker = new Worker('./worker.js', { type: 'module' });
worker.onmessage = ({ data }) => { window.result = data; };
worker.postMessage(new Uint8Array(await (await fetch('./model.onnx')).arrayBuffer()));
</script>`,
  );
  const got = await runInChromium(outDir, 'worker.html');
  assert.deepEqual(got, await expected());
});

// quantize() in the page: the quant build fetched by the package itself,
// the same ONNX bytes as in Node and natively, twice over, and the result
// runs. Eight samples (two held apart for the evaluation) and a cosine
// target, so the held-out evaluation and the search run too.
const QUANT_SAMPLE = (k) => new Float32Array(784).map((_, i) => ((i + k) * 37) % 256);
// Ranges chosen per tensor by measured output error ("tensor"): the choice
// compares measured errors, so it must come out the same everywhere too.
const QUANT_CONFIG = { calibration: { method: 'tensor' } };
const QUANT_OPTIONS = { targetCosine: 0.99999, maxTime: 600, config: QUANT_CONFIG };
const QUANT_JS = `import { quantize, load } from 'wasmq';
const bytes = new Uint8Array(await (await fetch('./float.onnx')).arrayBuffer());
const progress = [];
const once = async (onProgress) => {
  const q = await quantize(bytes, { onProgress, ...${JSON.stringify(QUANT_OPTIONS)} });
  await q.observeAll([0, 1, 2, 3, 4, 5, 6, 7].map((k) => ({ Input3: new Float32Array(784).map((_, i) => ((i + k) * 37) % 256) })));
  const r = await q.finish();
  q.dispose();
  return r;
};
const { onnx, summary } = await once((p) => progress.push(p));
const again = await once();
const model = await load(onnx);
const out = await model.run({ Input3: new Float32Array(784).map((_, i) => (i * 11) % 256) });
window.result = { onnx: Array.from(onnx), twice: Array.from(again.onnx).every((b, i) => b === onnx[i]) && again.onnx.length === onnx.length, summary, progress, output: Array.from(Object.values(out)[0].data) };
`;

test('quantize() in Chromium (import map page): the same ONNX bytes twice, as in Node and natively, and load() runs them', async () => {
  writeFileSync(path.join(app, 'quant.js'), QUANT_JS);
  writeFileSync(
    path.join(app, 'quant.html'),
    `<!doctype html><meta charset="utf-8"><link rel="icon" href="data:,"><title>quant</title>
<script type="importmap">${JSON.stringify(IMPORT_MAP)}</script>
<script type="module" src="./quant.js"></script>`,
  );
  const got = await runInChromium(app, 'quant.html');
  const inNode = async () => {
    const q = await quantize(readFileSync(FLOAT_MODEL), QUANT_OPTIONS);
    await q.observeAll([0, 1, 2, 3, 4, 5, 6, 7].map((k) => ({ Input3: QUANT_SAMPLE(k) })));
    const r = await q.finish();
    q.dispose();
    return r;
  };
  const { onnx, summary, report } = await inNode();
  assert.deepEqual(Array.from((await inNode()).onnx), Array.from(onnx), 'Node: the same bytes twice');
  assert.equal(got.twice, true, 'Chromium: the same bytes twice');
  assert.deepEqual(got.onnx, Array.from(onnx));
  assert.equal(got.summary, summary);
  assert.equal(report.heldOutSamples, 2);
  assert.ok(report.tensors.some((t) => t.method && t.method !== report.rangeMethod), 'some tensor took another range method than the global one');
  assert.deepEqual(got.progress, [1, 2, 3, 4, 5, 6, 7, 8].map((done) => ({ done, total: 8 })));
  assert.ok(existsSync(NATIVE_CLI), `the native command ${NATIVE_CLI} is built (npm run build:native): the bytes are compared with it`);
  {
    // The native command on the same samples (.npy folders) and settings.
    const dir = path.join(work, 'native-calib');
    writeFileSync(path.join(work, 'quant-config.json'), JSON.stringify(QUANT_CONFIG));
    for (let k = 0; k < 8; k++) {
      mkdirSync(path.join(dir, `s${k}`), { recursive: true });
      writeFileSync(path.join(dir, `s${k}`, 'Input3.npy'), encodeNpy({ dtype: 'float32', dims: [1, 1, 28, 28], data: QUANT_SAMPLE(k) }));
    }
    for (const name of ['a.onnx', 'b.onnx']) {
      execFileSync(NATIVE_CLI, ['quantize', FLOAT_MODEL, '-o', path.join(work, name), '--calib', dir, '--config', path.join(work, 'quant-config.json'), '--target-cosine', '0.99999', '--max-time', '600'], { stdio: 'pipe' });
      assert.deepEqual(Array.from(readFileSync(path.join(work, name))), Array.from(onnx), `native ${name}: the same bytes`);
    }
  }
  const model = await load(onnx);
  try {
    const out = await model.run({ Input3: new Float32Array(784).map((_, i) => (i * 11) % 256) });
    assert.deepEqual(got.output, Array.from(Object.values(out)[0].data));
  } finally {
    model.dispose();
  }
});
