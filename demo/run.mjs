// The README's main job: run the embedded mnist-8 model (in wasm, through the
// npm package) on the ten bundled digit images and print its predictions.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { load } from '../src/js/index.mjs';
import { parseNpy } from '../src/js/npy.mjs';

const here = (name) => fileURLToPath(new URL(name, import.meta.url));
const modelPath = process.argv[2] ?? here('mnist-8.onnx');
const digits = parseNpy(readFileSync(here('digits.npy')));
const [count, height, width] = digits.dims;

const model = await load(modelPath);
console.log(`model: ${modelPath}`);
for (const t of model.inputs) console.log(`  input  ${t.name} ${t.dtype} [${t.shape}]`);
for (const t of model.outputs) console.log(`  output ${t.name} ${t.dtype} [${t.shape}]`);

const input = model.inputs[0];
let correct = 0;
const started = performance.now();
for (let digit = 0; digit < count; digit++) {
  const pixels = digits.data.subarray(digit * height * width, (digit + 1) * height * width);
  const outputs = await model.run({
    [input.name]: { data: Float32Array.from(pixels), dims: [1, 1, height, width] },
  });
  const logits = outputs[model.outputs[0].name].data;
  const scores = softmax(logits);
  const best = scores.indexOf(Math.max(...scores));
  correct += best === digit ? 1 : 0;
  console.log(`drawn ${digit} -> predicted ${best} ` +
    `(${(100 * scores[best]).toFixed(1)}%)${best === digit ? '' : '  <- wrong'}`);
}
const ms = performance.now() - started;
console.log(`${correct}/${count} digits recognised, ${(ms / count).toFixed(2)} ms per image (wasm)`);
model.dispose();

function softmax(logits) {
  const max = Math.max(...logits);
  const exps = Array.from(logits, (v) => Math.exp(v - max));
  const sum = exps.reduce((a, b) => a + b, 0);
  return exps.map((v) => v / sum);
}
