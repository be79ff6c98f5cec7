#!/usr/bin/env node
// The quantizer's accuracy table (issue #9 item 8): every float model in
// ../shared/models quantized in wasm by the npm quantize() with calibration
// data disjoint from the evaluation inputs, then per model:
//   cosine, SNR   of the int8 model's outputs (our lowered int8 run of the
//                 QDQ file) against the float model's, pooled over the
//                 evaluation inputs
//   top-1         classifiers: how many evaluation inputs keep the float argmax
//                 (and how many calibration inputs)
//   ORT           elements where our int8 run and onnxruntime-node's run of
//                 the same QDQ file agree within one output quantization step
//                 (a float output, e.g. a final Softmax: the largest difference)
//   int8 nodes    compute nodes that run int8 after lowering (model.graph())
//   float/int8 ms median CPU time of one run in wasm (single thread; float
//                 and int8 runs interleaved)
//
//   npm run accuracy [-- --runs N] [--md FILE]   (default 9 timed runs)
//
// A report, not a test: it prints the table (markdown) and, with --md,
// writes it into FILE between the markers <!-- accuracy:begin --> and
// <!-- accuracy:end -->.

import { readFileSync, writeFileSync, existsSync } from 'node:fs';
import { loadavg, cpus } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { load, quantize } from '../src/js/index.mjs';
import { gap } from '../src/js/compare.mjs';
import { randomArray } from '../src/js/random.mjs';
import { resolveImageSpec, imageToTensor } from '../src/js/images.mjs';
import { photoCrops, digitSamples } from './photo_samples.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const MODELS = process.env.WQ_SHARED_DIR ? path.join(path.resolve(process.env.WQ_SHARED_DIR), 'models') : path.resolve(ROOT, '../shared/models');

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const i = args.indexOf(name);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : fallback;
};
const RUNS = Number(option('--runs', 9));
const MD_FILE = option('--md', null);
const ONLY = option('--only', null);
// --target C [--max-time S]: every case quantized with that cosine target
// search (how much stays int8, and how long the search takes).
const TARGET = Number(option('--target', 0));
const MAX_TIME = Number(option('--max-time', 0));
// --seed S: the photo, text and digit sets drawn with calibration seed S and
// evaluation seed S + 1 (default 1), to see how much a result depends on the crops.
const SEED = Number(option('--seed', 1));

// --- data ---------------------------------------------------------------------

/** One sample: float32 uniform in [lo, hi) from the package's seeded generator (random:SEED). */
function uniform(name, dims, seed, lo = 0, hi = 1) {
  const n = dims.reduce((a, b) => a * b, 1);
  const data = randomArray('float32', n, seed);
  if (lo !== 0 || hi !== 1) for (let i = 0; i < n; i++) data[i] = lo + (hi - lo) * data[i];
  return { [name]: { data, dims } };
}

const randomSet = (name, dims, seeds, lo, hi) => seeds.map((s) => uniform(name, dims, s, lo, hi));
const seeds = (from, n) => Array.from({ length: n }, (_, k) => from + k);

// Models with symbolic input dims are quantized and loaded with them bound
// (quantize(bytes, {inputShapes}), wasmq quantize --shape).
// Calibration and evaluation inputs never overlap and are natural data in
// the model's own input range: seeded crops of the photographs Debian's
// python3-skimage ships (scripts/photo_samples.mjs: 16 photos, crops at
// other places for evaluation), strips of its scanned text for the OCR
// classifier, and the demo's digits under small seeded rotations, scalings
// and shifts for mnist-8. 48 calibration and 16 evaluation samples each.

/** count crops of kind ('photos' | 'text') as feeds of input `name` [1, C, H, W] by an images spec. */
function cropSet(name, shape, spec, count, seed, kind = 'photos') {
  const info = [{ name, dtype: 'float32', shape }];
  const resolved = resolveImageSpec(spec, info);
  return photoCrops(count, { height: shape[2], width: shape[3], kind, seed }).map(({ image }) => ({ [name]: imageToTensor(image, resolved) }));
}

const digitSet = (count, seed) => digitSamples(count, seed).map(({ data, dims }) => ({ Input3: { data, dims } }));
const SR = [1, 1, 224, 224];
const TEAMS = [1, 4, 96, 160];
const TEAMS_SPEC = { channels: 'BGR', extra: [0] };
const PPOCR = [1, 3, 48, 192];
const PPOCR_SPEC = { mean: 0.5, std: 0.5 };

const CASES = [
  {
    name: 'mnist-8',
    file: 'mnist-8/model.onnx',
    classifier: true,
    calib: () => digitSet(48, SEED),
    calibText: '48 demo digits, rotated/scaled/shifted (seed 1), 0..255',
    eval: () => digitSet(16, SEED + 1),
    evalText: '16 more (seed 2)',
  },
  {
    name: 'super-resolution-10',
    file: 'super-resolution-10/model.onnx',
    shapes: { input: SR },
    calib: () => cropSet('input', SR, { channels: 'GRAY' }, 48, SEED),
    calibText: '48 skimage photo crops, luma in [0,1]',
    eval: () => cropSet('input', SR, { channels: 'GRAY' }, 16, SEED + 1),
    evalText: '16 other crops',
  },
  {
    name: 'pytorch-super-resolution-depthtospace',
    file: 'pytorch-super-resolution-depthtospace/model.onnx',
    shapes: { input: SR },
    calib: () => cropSet('input', SR, { channels: 'GRAY' }, 48, SEED),
    calibText: '48 skimage photo crops, luma in [0,1]',
    eval: () => cropSet('input', SR, { channels: 'GRAY' }, 16, SEED + 1),
    evalText: '16 other crops',
  },
  {
    name: 'teams-segmentation-msra190729',
    file: 'teams-segmentation-msra190729/model.onnx',
    shapes: { bgrm: TEAMS },
    calib: () => cropSet('bgrm', TEAMS, TEAMS_SPEC, 48, SEED),
    calibText: '48 skimage photo crops 96x160, BGR in [0,1], mask channel 0',
    eval: () => cropSet('bgrm', TEAMS, TEAMS_SPEC, 16, SEED + 1),
    evalText: '16 other crops',
  },
  {
    // What the model is for: frames with a person in them.
    name: 'teams-segmentation-msra190729, people',
    file: 'teams-segmentation-msra190729/model.onnx',
    shapes: { bgrm: TEAMS },
    calib: () => cropSet('bgrm', TEAMS, TEAMS_SPEC, 48, SEED, 'people'),
    calibText: '48 crops of skimage\'s astronaut and cameraman and matplotlib\'s Grace Hopper 96x160, BGR in [0,1], mask channel 0',
    eval: () => cropSet('bgrm', TEAMS, TEAMS_SPEC, 16, SEED + 1, 'people'),
    evalText: '16 other crops',
  },
  {
    // The target search: nodes go float until the outputs reach cosine 0.995 on the calibration samples.
    name: 'teams-segmentation-msra190729, targetCosine 0.995',
    file: 'teams-segmentation-msra190729/model.onnx',
    config: { targetCosine: 0.995, maxTime: 300 },
    shapes: { bgrm: TEAMS },
    calib: () => cropSet('bgrm', TEAMS, TEAMS_SPEC, 48, SEED),
    calibText: '48 skimage photo crops 96x160, BGR in [0,1], mask channel 0',
    eval: () => cropSet('bgrm', TEAMS, TEAMS_SPEC, 16, SEED + 1),
    evalText: '16 other crops',
  },
  {
    name: 'ppocr-mobile-v2-cls',
    file: 'ppocr-mobile-v2-cls/model.onnx',
    shapes: { x: PPOCR },
    classifier: true,
    calib: () => cropSet('x', PPOCR, PPOCR_SPEC, 48, SEED, 'text'),
    calibText: '48 strips of skimage text scans 48x192, RGB (x/255-0.5)/0.5',
    eval: () => cropSet('x', PPOCR, PPOCR_SPEC, 16, SEED + 1, 'text'),
    evalText: '16 other strips',
  },
  {
    name: 'openwakeword-hello-deepa-mlp',
    file: 'openwakeword-hello-deepa-mlp/model.onnx',
    calib: () => randomSet('onnx::Flatten_0', [1, 25, 96], seeds(0, 32)),
    calibText: '32 uniform [0,1) 1x25x96 (no natural data: its input is another model\'s speech embeddings)',
    eval: () => randomSet('onnx::Flatten_0', [1, 25, 96], seeds(1000, 32)),
    evalText: '32 more (seeds 1000-1031; one output each)',
  },
  {
    name: 'smallcnn (synthetic)',
    file: 'synthetic/smallcnn_f32.onnx',
    classifier: true,
    calib: () => randomSet('X', [1, 3, 224, 224], seeds(0, 8), -1, 1),
    calibText: '8 uniform [-1,1) 1x3x224x224',
    eval: () => randomSet('X', [1, 3, 224, 224], seeds(1000, 4), -1, 1),
    evalText: '4 more (seeds 1000-1003)',
  },
  {
    name: 'matmul 256x256x256 (synthetic)',
    file: 'synthetic/matmul_256x256x256_f32.onnx',
    calib: () => randomSet('X', [256, 256], seeds(0, 4), -1, 1),
    calibText: '4 uniform [-1,1) 256x256',
    eval: () => randomSet('X', [256, 256], seeds(1000, 2), -1, 1),
    evalText: '2 more (seeds 1000-1001)',
  },
  {
    name: 'matmul 1x1024x1024 (synthetic)',
    file: 'synthetic/matmul_1x1024x1024_f32.onnx',
    calib: () => randomSet('X', [1, 1024], seeds(0, 8), -1, 1),
    calibText: '8 uniform [-1,1) 1x1024',
    eval: () => randomSet('X', [1, 1024], seeds(1000, 4), -1, 1),
    evalText: '4 more (seeds 1000-1003)',
  },
];

// --- measuring ----------------------------------------------------------------

const median = (xs) => {
  const s = xs.slice().sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

function argmax(data) {
  let best = 0;
  for (let i = 1; i < data.length; i++) if (data[i] > data[best]) best = i;
  return best;
}

/** CPU milliseconds (user + system) of this process so far. */
function cpuMs() {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
}

/**
 * Median CPU ms of one run of each model on `feeds`: the machine is shared,
 * so CPU time (as bench/run.mjs) rather than wall time. Each sample times
 * enough runs to last >= 20 ms (the clock counts in microseconds but the
 * scheduler in ticks); the models' samples are interleaved so a change in
 * the machine's load hits both alike. One warm-up run each first.
 */
async function timeRuns(models, feeds) {
  const reps = [];
  for (const m of models) {
    const t0 = performance.now();
    await m.run(feeds);
    reps.push(Math.max(1, Math.ceil(20 / Math.max(performance.now() - t0, 0.01))));
  }
  const ms = models.map(() => []);
  for (let r = 0; r < RUNS; r++) {
    for (const [k, m] of models.entries()) {
      const t0 = cpuMs();
      for (let i = 0; i < reps[k]; i++) await m.run(feeds);
      ms[k].push((cpuMs() - t0) / reps[k]);
    }
  }
  return ms.map(median);
}

/** The scale of the quantized tensor each graph output is dequantized from (by output name), from model.graph(). */
function outputSteps(model) {
  const g = model.graph();
  const steps = {};
  for (const id of g.outputs) {
    const t = g.tensors[id];
    const producer = g.nodes[t.producer];
    const source = producer ? g.tensors[producer.inputs[0]] : null;
    const scale = source?.qparams?.scale;
    steps[t.name] = scale && scale.length === 1 ? scale[0] : null;
  }
  return steps;
}

/** Compute nodes of the lowered graph and how many of them run int8; the ops of the float ones. */
function int8Nodes(model) {
  const compute = model.graph().nodes.filter((n) => n.role === 'compute');
  const int8 = compute.filter((n) => n.backend !== 'float');
  const floatOps = [...new Set(compute.filter((n) => n.backend === 'float').map((n) => n.op))];
  return { int8: int8.length, total: compute.length, floatOps };
}

let ort = null;
async function ortSession(bytes) {
  ort ??= await import('onnxruntime-node');
  // x64quantprecision: onnxruntime's exact int8 path on x64 (as tests/node/quantize.test.mjs).
  return ort.InferenceSession.create(bytes, { logSeverityLevel: 3, extra: { session: { x64quantprecision: '1' } } });
}

async function ortRun(session, feeds) {
  const input = {};
  for (const [name, { data, dims }] of Object.entries(feeds)) input[name] = new ort.Tensor('float32', data, dims);
  const out = await session.run(input);
  return Object.fromEntries(Object.entries(out).map(([k, v]) => [k, v.data]));
}

async function measure(c) {
  const bytes = readFileSync(path.join(MODELS, c.file));
  const calib = c.calib();
  const evalSet = c.eval();
  const t0 = performance.now();
  // Symbolic dims bound to the evaluation shape, in the float model and the quantized one alike.
  const inputShapes = c.shapes ?? {};
  // The script evaluates on its own set: nothing held apart inside the quantizer.
  const search = TARGET > 0 ? { targetCosine: TARGET, maxTime: MAX_TIME } : {};
  const q = await quantize(bytes, { inputShapes, config: { holdout: 0, ...c.config, ...search } });
  let result;
  try {
    await q.observeAll(calib);
    result = await q.finish();
  } finally {
    q.dispose();
  }
  const quantizeMs = performance.now() - t0;
  const floatModel = await load(bytes, { inputShapes });
  const int8Model = await load(result.onnx);
  const session = await ortSession(result.onnx);
  try {
    const steps = outputSteps(int8Model);
    const f = [];
    const q8 = [];
    let top1 = 0;
    let ortAgree = 0;
    let ortTotal = 0;
    let ortFloatMax = 0;
    for (const feeds of evalSet) {
      const fo = await floatModel.run(feeds);
      const qo = await int8Model.run(feeds);
      const oo = await ortRun(session, feeds);
      for (const name of Object.keys(fo)) {
        f.push(fo[name].data);
        q8.push(qo[name].data);
        const step = steps[name];
        const ours = qo[name].data;
        const theirs = oo[name];
        if (step === null) {
          // A float output (e.g. Softmax after the last DequantizeLinear): no step to count in.
          for (let i = 0; i < ours.length; i++) ortFloatMax = Math.max(ortFloatMax, Math.abs(ours[i] - theirs[i]));
          continue;
        }
        for (let i = 0; i < ours.length; i++) if (Math.abs(ours[i] - theirs[i]) <= step * 1.0001) ortAgree++;
        ortTotal += ours.length;
      }
      if (c.classifier) {
        const name = floatModel.outputs[0].name;
        if (argmax(fo[name].data) === argmax(qo[name].data)) top1++;
      }
    }
    const concat = (arrays) => {
      const out = new Float32Array(arrays.reduce((n, a) => n + a.length, 0));
      let at = 0;
      for (const a of arrays) {
        out.set(a, at);
        at += a.length;
      }
      return out;
    };
    const { cosine, snr } = gap(concat(f), concat(q8));
    // Classifiers: the predictions on the calibration inputs too (mnist-8's target: its test sets and the digits).
    let calibTop1 = 0;
    if (c.classifier) {
      const name = floatModel.outputs[0].name;
      for (const feeds of calib) {
        if (argmax((await floatModel.run(feeds))[name].data) === argmax((await int8Model.run(feeds))[name].data)) calibTop1++;
      }
    }
    const nodes = int8Nodes(int8Model);
    const [floatMs, int8Ms] = await timeRuns([floatModel, int8Model], evalSet[0]);
    return {
      name: c.name,
      calibText: c.calibText,
      evalText: c.evalText,
      cosine,
      snr,
      top1: c.classifier ? `${top1}/${evalSet.length} (calibration: ${calibTop1}/${calib.length})` : '—',
      ort: ortTotal ? ortAgree / ortTotal : null,
      ortFloatMax,
      nodes,
      floatMs,
      int8Ms,
      quantizeMs,
      summary: result.summary,
    };
  } finally {
    floatModel.dispose();
    int8Model.dispose();
    await session.release?.();
  }
}

// --- table ----------------------------------------------------------------------

function fmtPct(x) {
  return x === 1 ? '100%' : `${(100 * Math.floor(x * 10000) / 10000).toFixed(2)}%`;
}

/** Share of elements within one output step; for float outputs the largest difference. */
function ortText(r) {
  const parts = [];
  if (r.ort !== null) parts.push(fmtPct(r.ort));
  if (r.ortFloatMax > 0 || r.ort === null) parts.push(`max abs diff ${r.ortFloatMax.toPrecision(2)} (float output)`);
  return parts.join('; ');
}

function table(rows) {
  const lines = [
    '| model | calibration | evaluation | cosine | SNR dB | top-1 kept | ORT agrees | int8 compute nodes | float ms | int8 ms | speed-up |',
    '|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const r of rows) {
    if (r.error) {
      lines.push(`| ${r.name} | ${r.calibText} | ${r.evalText} | failed: ${r.error.replace(/\|/g, '\\|')} ||||||||`);
      continue;
    }
    const nodes = `${r.nodes.int8}/${r.nodes.total}${r.nodes.floatOps.length ? ` (float: ${r.nodes.floatOps.join(', ')})` : ''}`;
    lines.push(
      `| ${r.name} | ${r.calibText} | ${r.evalText} | ${r.cosine.toFixed(5)} | ${Number.isFinite(r.snr) ? r.snr.toFixed(1) : 'inf'} | ${r.top1} | ${ortText(r)} | ${nodes} | ${r.floatMs.toFixed(2)} | ${r.int8Ms.toFixed(2)} | ${(r.floatMs / r.int8Ms).toFixed(2)}x |`,
    );
  }
  return lines.join('\n');
}

const rows = [];
const loadBefore = loadavg()[0];
for (const c of CASES) {
  // --only A,B: the cases named A or B exactly, or else those whose name contains one.
  const picks = ONLY?.split(',') ?? [];
  if (ONLY && !picks.some((p) => (CASES.some((k) => k.name === p) ? c.name === p : c.name.includes(p)))) continue;
  process.stderr.write(`${c.name} ...`);
  try {
    const r = await measure(c);
    rows.push(r);
    process.stderr.write(` cosine ${r.cosine.toFixed(5)}, quantized in ${(r.quantizeMs / 1000).toFixed(1)} s: ${r.summary}\n`);
  } catch (e) {
    rows.push({ name: c.name, calibText: c.calibText, evalText: c.evalText, error: `${e.code ? `[${e.code}] ` : ''}${e.message}` });
    process.stderr.write(` failed: ${e.message}\n`);
  }
}
const loadAfter = loadavg()[0];
const machine = `${cpus().length} cores (${cpus()[0]?.model ?? '?'}), load average ${loadBefore.toFixed(2)} before / ${loadAfter.toFixed(2)} after, node ${process.version}, ${new Date().toISOString().slice(0, 16)}Z`;
const text = `${table(rows)}\n\nms: median CPU time of one run over ${RUNS} samples of >= 20 ms each (after one warm-up; float and int8 samples interleaved), single thread, wasm SIMD build; ${machine}.\n`;
console.log(text);

if (MD_FILE) {
  const file = path.resolve(MD_FILE);
  const begin = '<!-- accuracy:begin -->';
  const end = '<!-- accuracy:end -->';
  const doc = existsSync(file) ? readFileSync(file, 'utf8') : '';
  const block = `${begin}\n${text}${end}`;
  const i = doc.indexOf(begin);
  const j = doc.indexOf(end);
  writeFileSync(file, i >= 0 && j > i ? doc.slice(0, i) + block + doc.slice(j + end.length) : `${doc}\n${block}\n`);
  console.error(`wrote the table into ${path.relative(process.cwd(), file)}`);
}
process.exitCode = rows.some((r) => r.error) ? 1 : 0;
