// The README's main job, all in wasm through the npm package: run the
// embedded float mnist-8 on the ten bundled digit images, quantize it to int8
// with wasmq's post-training quantizer (calibrated on those ten digits), then
// run the int8 model and compare predictions, speed and size.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { load, quantize } from '../src/js/index.mjs';
import { parseNpy } from '../src/js/npy.mjs';

const here = (name) => fileURLToPath(new URL(name, import.meta.url));
const modelPath = process.argv[2] ?? here('mnist-8.onnx');
const floatBytes = readFileSync(modelPath);
const digits = parseNpy(readFileSync(here('digits.npy')));
const [count, height, width] = digits.dims;
// Timing: the two models take turns (float, int8, float, ...) so machine
// noise hits both alike; each figure is the median of these rounds.
const WARMUP_ROUNDS = 5;
const TIMED_ROUNDS = 41;

const floatModel = await load(floatBytes);
console.log(`model: ${modelPath} (${kb(floatBytes.length)})`);
for (const t of floatModel.inputs) console.log(`  input  ${t.name} ${t.dtype} [${t.shape}]`);
for (const t of floatModel.outputs) console.log(`  output ${t.name} ${t.dtype} [${t.shape}]`);

const inputName = floatModel.inputs[0].name;
const samples = Array.from({ length: count }, (_, digit) => ({
  [inputName]: {
    data: Float32Array.from(digits.data.subarray(digit * height * width, (digit + 1) * height * width)),
    dims: [1, 1, height, width],
  },
}));

console.log('\nfloat32:');
const floatResult = await classify(floatModel);

console.log('\nquantizing to int8 (calibration: the ten digits)...');
const tty = process.stdout.isTTY;
const quantizer = await quantize(floatBytes, {
  onProgress: ({ done, total }) => tty && process.stdout.write(`\r  calibrating ${done}/${total}`),
});
const observed = await quantizer.observeAll(samples);
const { onnx, summary } = await quantizer.finish();
quantizer.dispose();
console.log(`${tty ? '\n' : ''}  calibrated on ${observed} samples`);
console.log(`  ${summary}\n  QDQ model: ${kb(onnx.length)}`);

const int8Model = await load(onnx);
console.log(`  partition: ${int8Model.graph().summary}`);
console.log('\nint8:');
const int8Result = await classify(int8Model);

const [floatMs, int8Ms] = await medianMsPerImage([floatModel, int8Model]);
const same = floatResult.predictions.filter((p, i) => p === int8Result.predictions[i]).length;
console.log(`\nfloat32 ${floatResult.correct}/${count} recognised, ${floatMs.toFixed(3)} ms per image`);
console.log(`int8    ${int8Result.correct}/${count} recognised, ${int8Ms.toFixed(3)} ms per image ` +
  `(${(floatMs / int8Ms).toFixed(2)}x), same prediction as float32 on ${same}/${count}`);
console.log(`(times: wall clock of run(), median of ${TIMED_ROUNDS} rounds over the ${count} images, the models taking turns, ` +
  `after ${WARMUP_ROUNDS} warm-up rounds)`);
floatModel.dispose();
int8Model.dispose();

async function classify(model) {
  const outputName = model.outputs[0].name;
  const predictions = [];
  let correct = 0;
  for (let digit = 0; digit < count; digit++) {
    const scores = softmax((await model.run(samples[digit]))[outputName].data);
    const best = scores.indexOf(Math.max(...scores));
    predictions.push(best);
    correct += best === digit ? 1 : 0;
    console.log(`  drawn ${digit} -> predicted ${best} ` +
      `(${(100 * scores[best]).toFixed(1)}%)${best === digit ? '' : '  <- wrong'}`);
  }
  return { predictions, correct };
}

// Per-image milliseconds of each model: the median of TIMED_ROUNDS rounds,
// the models run in turn within each round.
async function medianMsPerImage(models) {
  const perImage = models.map(() => []);
  for (let round = 0; round < WARMUP_ROUNDS + TIMED_ROUNDS; round++) {
    for (const [m, model] of models.entries()) {
      const started = performance.now();
      for (const feeds of samples) await model.run(feeds);
      if (round >= WARMUP_ROUNDS) perImage[m].push((performance.now() - started) / count);
    }
  }
  return perImage.map((times) => times.sort((a, b) => a - b)[times.length >> 1]);
}

function softmax(logits) {
  const max = Math.max(...logits);
  const exps = Array.from(logits, (v) => Math.exp(v - max));
  const sum = exps.reduce((a, b) => a + b, 0);
  return exps.map((v) => v / sum);
}

function kb(bytes) {
  return `${(bytes / 1024).toFixed(1)} KB`;
}
