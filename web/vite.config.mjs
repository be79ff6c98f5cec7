// The inspector app. Demo models are read from ../shared (next to the
// repository, as in CI) when the page asks for them: never copied into the
// repository or the build output.
import { defineConfig } from 'vite';
import { createReadStream, existsSync, cpSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const SHARED = process.env.WQ_SHARED_DIR ? path.resolve(process.env.WQ_SHARED_DIR) : path.resolve(REPO, '../shared');

// /models/<file> -> shared file, only these (the bundled demos and their sample data).
export const DEMO_FILES = {
  'mnist-8.onnx': 'models/mnist-8/model.onnx',
  'mnist-8-digits.pb': 'models/mnist-8/test_data_set_0/input_0.pb',
  'super-resolution-10.onnx': 'models/super-resolution-10/model.onnx',
  'super-resolution-input.pb': 'models/super-resolution-10/test_data_set_0/input_0.pb',
  'segmentation.onnx': 'models/teams-segmentation-msra190729/model.onnx',
  'segmentation-input.pb': 'models/teams-segmentation-msra190729/test_data_set_0/input_0.pb',
  'silero-vad-v3.1.onnx': 'models/silero-vad-v3.1/model.onnx',
  'smallcnn-qdq.onnx': 'models/synthetic/smallcnn_qdq.onnx',
  'smallcnn-f32.onnx': 'models/synthetic/smallcnn_f32.onnx',
  'mobilenetv2-12-int8.onnx': 'models-int8/mobilenetv2-12-int8/model.onnx',
  'kws-dscnn-int8.onnx': 'models-int8/mlperftiny-kws-dscnn-int8/model.onnx',
};

// The threaded core (wasm_build/out/mt: wasmq.mjs, .wasm, .worker.js) is
// served at ./wasmq-mt/ and copied there by the build; the page tells the
// model Worker where it is.
const THREADED_DIR = path.join(REPO, 'wasm_build/out/mt');
const THREADED_FILES = { 'wasmq.mjs': 'text/javascript', 'wasmq.worker.js': 'text/javascript', 'wasmq.wasm': 'application/wasm' };

// Shared wasm memory (the threaded build) needs a cross-origin isolated page,
// and an isolated page's Workers (the model Worker, the threaded core's pool
// workers) are blocked unless their scripts carry COEP too. vite adds
// `headers` only to what its own middlewares serve, so every response gets
// them here, first, whoever serves it.
const ISOLATION_HEADERS = { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' };

function isolate(req, res, next) {
  for (const [k, v] of Object.entries(ISOLATION_HEADERS)) res.setHeader(k, v);
  next();
}

function serveThreadedCore(req, res, next) {
  const m = /^\/wasmq-mt\/([^/?#]+)/.exec(req.url ?? '');
  if (!m || !THREADED_FILES[m[1]] || !existsSync(path.join(THREADED_DIR, m[1]))) return next();
  res.setHeader('Content-Type', THREADED_FILES[m[1]]);
  createReadStream(path.join(THREADED_DIR, m[1])).pipe(res);
}

function serveSharedModels(req, res, next) {
  const m = /^\/models\/([^/?#]+)/.exec(req.url ?? '');
  if (!m) return next();
  const rel = DEMO_FILES[decodeURIComponent(m[1])];
  const file = rel && path.join(SHARED, rel);
  if (!file || !existsSync(file)) {
    res.statusCode = 404;
    res.end(`no demo file ${m[1]} (looked in ${SHARED})`);
    return;
  }
  res.setHeader('Content-Type', 'application/octet-stream');
  createReadStream(file).pipe(res);
}

export default defineConfig({
  root: path.join(REPO, 'web'),
  base: './',
  publicDir: false,
  server: { fs: { allow: [REPO] }, host: '127.0.0.1', headers: ISOLATION_HEADERS },
  preview: { host: '127.0.0.1', headers: ISOLATION_HEADERS },
  worker: { format: 'es' },
  build: { outDir: path.join(REPO, 'web/dist'), emptyOutDir: true, target: 'es2022', chunkSizeWarningLimit: 1024 },
  plugins: [
    {
      name: 'wasmq-shared-models',
      configureServer(server) {
        server.middlewares.use(isolate);
        server.middlewares.use(serveSharedModels);
        server.middlewares.use(serveThreadedCore);
      },
      configurePreviewServer(server) {
        server.middlewares.use(isolate);
        server.middlewares.use(serveSharedModels);
      },
      writeBundle(options) {
        // Without the threaded build the page runs single-threaded (model.info says why).
        for (const f of Object.keys(THREADED_FILES)) {
          if (existsSync(path.join(THREADED_DIR, f))) cpSync(path.join(THREADED_DIR, f), path.join(options.dir, 'wasmq-mt', f));
        }
      },
    },
  ],
});
