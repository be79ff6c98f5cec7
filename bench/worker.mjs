// One benchmark measurement in a fresh Node process (sessions sharing a
// process disturb each other's timings). Started by bench/run.mjs with one
// JSON argument:
//   {kind: 'ours' | 'ort', model, inputShapes, loadOptions, warmup, runs, seed}
//   {kind: 'kernels', dotPeakWasm, reps}
// and prints its result as the last stdout line: "BENCH_RESULT <json>".
// Failures are results too ({error}), so the orchestrator keeps going.

import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

import { randomInput, sample, summarize } from './common.mjs';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

function report(result) {
  process.stdout.write(`BENCH_RESULT ${JSON.stringify(result)}\n`);
}

/** Concrete dims for an input: the configured shape, else the declared one. */
function dimsFor(name, declared, inputShapes) {
  if (inputShapes[name]) return inputShapes[name];
  if (!declared || !declared.every((d) => typeof d === 'number' && d >= 0)) {
    throw new Error(`input '${name}' has shape [${(declared ?? ['?']).join(',')}] and no shape is configured`);
  }
  return declared;
}

async function timeRuns(runOnce, warmup, runs) {
  for (let i = 0; i < warmup; i++) await runOnce();
  const times = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    await runOnce();
    times.push(performance.now() - t0);
  }
  return times;
}

async function benchOurs(spec) {
  const wasmq = await import(pathToFileURL(join(ROOT, 'src/js/index.mjs')).href);
  const t0 = performance.now();
  const model = await wasmq.load(spec.model, { ...spec.loadOptions, inputShapes: spec.inputShapes });
  const loadMs = performance.now() - t0;
  const feeds = {};
  model.inputs.forEach((info, i) => {
    const dims = dimsFor(info.name, info.shape, spec.inputShapes);
    feeds[info.name] = { data: randomInput(info.dtype, dims, spec.seed + 7919 * i), dims };
  });
  let last;
  const times = await timeRuns(async () => (last = await model.run(feeds)), spec.warmup, spec.runs);
  const first = last[model.outputs[0].name];
  const result = {
    loadMs,
    ...summarize(times),
    output: { name: model.outputs[0].name, dims: first.dims, sample: sample(first.data) },
    memory: { ...model.memory },
    describe: model.describe(),
  };
  model.dispose();
  return result;
}

async function benchOrt(spec) {
  const ort = await import('onnxruntime-web');
  ort.env.wasm.numThreads = 1; // SIMD is the only build onnxruntime-web 1.30 ships
  ort.env.logLevel = 'error';
  const t0 = performance.now();
  const session = await ort.InferenceSession.create(spec.model, {
    executionProviders: ['wasm'],
    graphOptimizationLevel: 'all',
  });
  const loadMs = performance.now() - t0;
  const feeds = {};
  session.inputMetadata.forEach((info, i) => {
    const dims = dimsFor(info.name, info.shape, spec.inputShapes);
    feeds[info.name] = new ort.Tensor(info.type, randomInput(info.type, dims, spec.seed + 7919 * i), dims);
  });
  let last;
  const times = await timeRuns(async () => (last = await session.run(feeds)), spec.warmup, spec.runs);
  const first = last[session.outputNames[0]];
  const result = {
    loadMs,
    ...summarize(times),
    output: { name: session.outputNames[0], dims: [...first.dims], sample: sample(first.data) },
    version: ort.env.versions?.web,
  };
  await session.release();
  return result;
}

/** Best of `reps` timings of fn(iters) with iters sized to ~target seconds. */
function bestSeconds(fn, reps, targetSeconds, itersStart = 1) {
  let iters = itersStart;
  for (;;) {
    const t0 = performance.now();
    const measured = fn(iters);
    const seconds = measured ?? (performance.now() - t0) / 1e3;
    if (seconds < 0) throw new Error('the kernel could not run');
    if (seconds >= targetSeconds / 4 || iters > 2 ** 30) break;
    iters = Math.ceil(iters * Math.min(64, (targetSeconds / Math.max(seconds, 1e-6)) * 1.1));
  }
  let best = Infinity;
  const all = [];
  for (let r = 0; r < reps; r++) {
    const t0 = performance.now();
    const measured = fn(iters);
    const seconds = measured ?? (performance.now() - t0) / 1e3;
    all.push(seconds);
    best = Math.min(best, seconds);
  }
  const sorted = all.sort((a, b) => a - b);
  return { iters, best, median: sorted[sorted.length >> 1] };
}

async function benchKernels(spec) {
  const result = { dotPeak: null, gemm: [], sgemm: [], notes: [] };
  // The dot_i16x8 peak: our own register-resident loops, separate wasm.
  try {
    const { instance } = await WebAssembly.instantiate(readFileSync(spec.dotPeakWasm), {});
    const variants = [];
    for (const [name, fn] of Object.entries(instance.exports)) {
      const m = /^dot_(peak_(\d+)x(\d+)|chain_(\d+))$/.exec(name);
      if (!m || typeof fn !== 'function') continue;
      const dots = m[2] ? Number(m[2]) * Number(m[3]) : Number(m[4]);
      const t = bestSeconds((iters) => void fn(iters), spec.reps, 0.15, 1000);
      variants.push({ name, gops: (t.iters * dots * 16) / t.best / 1e9, medianGops: (t.iters * dots * 16) / t.median / 1e9 });
    }
    variants.sort((a, b) => b.gops - a.gops);
    result.dotPeak = { gops: variants[0].gops, variant: variants[0].name, variants };
  } catch (e) {
    result.dotPeak = { error: e.message };
  }
  // Our GEMM micro-kernel through the SIMD engineer's exported entry.
  const wasmq = await import(pathToFileURL(join(ROOT, 'src/js/index.mjs')).href);
  const core = await wasmq.getCore();
  const shapes = [
    [256, 256, 256],
    [1, 1024, 1024],
    [3136, 64, 576],
  ];
  for (const [m, n, k] of shapes) {
    const entry = { m, n, k };
    if (typeof core._wqx_bench_qgemm !== 'function') entry.error = 'n/a (no wqx_bench_qgemm in the wasm)';
    else {
      try {
        const t = bestSeconds((iters) => core._wqx_bench_qgemm(m, n, k, iters), spec.reps, 0.15);
        entry.gops = (2 * m * n * k * t.iters) / t.best / 1e9;
        entry.medianGops = (2 * m * n * k * t.iters) / t.median / 1e9;
        entry.ms = (t.best / t.iters) * 1e3;
      } catch (e) {
        entry.error = e.message;
      }
    }
    result.gemm.push(entry);
    if (typeof core._wqx_bench_sgemm === 'function') {
      try {
        const t = bestSeconds((iters) => core._wqx_bench_sgemm(m, n, k, iters), spec.reps, 0.15);
        result.sgemm.push({ m, n, k, gflops: (2 * m * n * k * t.iters) / t.best / 1e9 });
      } catch (e) {
        result.sgemm.push({ m, n, k, error: e.message });
      }
    }
  }
  if (typeof core._wqx_bench_dot_peak === 'function' && typeof core._wqx_bench_dot_peak_ops === 'function') {
    try {
      const t = bestSeconds((iters) => core._wqx_bench_dot_peak(iters), spec.reps, 0.15);
      result.kernelDotPeakGops = core._wqx_bench_dot_peak_ops(t.iters) / t.best / 1e9;
    } catch (e) {
      result.notes.push(`wqx_bench_dot_peak: ${e.message}`);
    }
  }
  return result;
}

const spec = JSON.parse(process.argv[2] ?? '{}');
try {
  const kinds = { ours: benchOurs, ort: benchOrt, kernels: benchKernels };
  if (!kinds[spec.kind]) throw new Error(`unknown measurement kind '${spec.kind}'`);
  report(await kinds[spec.kind](spec));
} catch (e) {
  report({ error: (e && e.message) || String(e), code: e?.code, node: e?.node });
}
