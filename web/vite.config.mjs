// The inspector app. Demo models are read from ../shared (next to the
// repository, as in CI) when the page asks for them: never copied into the
// repository or the build output.
import { defineConfig } from 'vite';
import { createReadStream, existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const SHARED = process.env.WQ_SHARED_DIR ? path.resolve(process.env.WQ_SHARED_DIR) : path.resolve(REPO, '../shared');

// /models/<file> -> shared file, only these (the bundled demos and their sample data).
export const DEMO_FILES = {
  'mnist-8.onnx': 'models/mnist-8/model.onnx',
  'mnist-8-int8.onnx': 'models/mnist-8-dynamic-int8/model.onnx',
  'mnist-8-digits.pb': 'models/mnist-8/test_data_set_0/input_0.pb',
  'super-resolution-10.onnx': 'models/super-resolution-10/model.onnx',
  'super-resolution-input.pb': 'models/super-resolution-10/test_data_set_0/input_0.pb',
  'segmentation.onnx': 'models/teams-segmentation-msra190729/model.onnx',
  'segmentation-input.pb': 'models/teams-segmentation-msra190729/test_data_set_0/input_0.pb',
  'smallcnn-qdq.onnx': 'models/synthetic/smallcnn_qdq.onnx',
  'smallcnn-f32.onnx': 'models/synthetic/smallcnn_f32.onnx',
  'mobilenetv2-12-int8.onnx': 'models-int8/mobilenetv2-12-int8/model.onnx',
  'kws-dscnn-int8.onnx': 'models-int8/mlperftiny-kws-dscnn-int8/model.onnx',
};

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
  server: { fs: { allow: [REPO] }, host: '127.0.0.1' },
  preview: { host: '127.0.0.1' },
  worker: { format: 'es' },
  build: { outDir: path.join(REPO, 'web/dist'), emptyOutDir: true, target: 'es2022', chunkSizeWarningLimit: 1024 },
  plugins: [
    {
      name: 'wasmq-shared-models',
      configureServer(server) {
        server.middlewares.use(serveSharedModels);
      },
      configurePreviewServer(server) {
        server.middlewares.use(serveSharedModels);
      },
    },
  ],
});
