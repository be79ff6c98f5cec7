// One benchmark measurement in a fresh Node process (sessions sharing a
// process disturb each other's timings). Started by bench/run.mjs with one
// JSON argument:
//   {kind: 'ours' | 'ort', model, inputShapes, loadOptions, warmup, warmupMs, runs, seed, threads?, coreDir?,
//    forceRelaxed?}   (forceRelaxed: run the relaxed build although the probe refused it: timing only)
//   {kind: 'kernels', dotPeakWasm, coreDir, reps}   (coreDir: the build.sh --bench variant)
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

/**
 * Warm-up: at least `warmup` runs and at least `warmupMs` of running, so V8
 * has moved the hot wasm functions from its baseline tier to the optimizing
 * one (that takes hundreds of runs of a 0.1 ms model on a busy machine) for
 * both runtimes alike.
 */
async function timeRuns(runOnce, warmup, runs, warmupMs = 0) {
  const warmStart = performance.now();
  for (let i = 0; i < warmup || performance.now() - warmStart < warmupMs; i++) await runOnce();
  const times = [];
  const cpuTimes = [];
  for (let i = 0; i < runs; i++) {
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    await runOnce();
    times.push(performance.now() - t0);
    const c = process.cpuUsage(c0);
    cpuTimes.push((c.user + c.system) / 1e3);
  }
  return { times, cpuTimes };
}

/** Our JS API, on the core in spec.coreDir when given (else the shipped build). */
async function loadWasmq(spec) {
  const wasmq = await import(pathToFileURL(join(ROOT, 'src/js/index.mjs')).href);
  if (spec.forceRelaxed) {
    const { setProbeForTest } = await import(pathToFileURL(join(ROOT, 'src/js/relaxed_probe.mjs')).href);
    setProbeForTest({ ok: true, reason: 'forced by the benchmark (timing only)', answers: [] });
  }
  if (spec.coreDir) {
    wasmq.configure({
      glueUrl: pathToFileURL(join(spec.coreDir, 'wasmq.mjs')),
      wasmUrl: pathToFileURL(join(spec.coreDir, 'wasmq.wasm')),
    });
  }
  return wasmq;
}

async function benchOurs(spec) {
  const wasmq = await loadWasmq(spec);
  const t0 = performance.now();
  const model = await wasmq.load(spec.model, { ...spec.loadOptions, inputShapes: spec.inputShapes, threads: spec.threads ?? 1 });
  const loadMs = performance.now() - t0;
  const feeds = {};
  model.inputs.forEach((info, i) => {
    const dims = dimsFor(info.name, info.shape, spec.inputShapes);
    feeds[info.name] = { data: randomInput(info.dtype, dims, spec.seed + 7919 * i), dims };
  });
  let last;
  const { times, cpuTimes } = await timeRuns(async () => (last = await model.run(feeds)), spec.warmup, spec.runs, spec.warmupMs);
  const first = last[model.outputs[0].name];
  const perNode = await profileNodes(model, feeds, Math.min(spec.runs, 50));
  const result = {
    loadMs,
    ...summarize(times),
    times,
    cpuTimes,
    perNode,
    info: model.info,
    output: { name: model.outputs[0].name, dims: first.dims, sample: sample(first.data) },
    memory: { ...model.memory },
    nodes: nodeKinds(model),
  };
  model.dispose();
  return result;
}

/**
 * Where a run's time goes, from runs timed per node after the measured ones:
 * per run, the kernels, the executor's fixed cost around them (inputs,
 * shapes, placement) and what lies outside the nodes (JS staging, copies).
 */
async function profileNodes(model, feeds, runs) {
  if (typeof model.profile !== 'function') return null;
  model.profile(true);
  const t0 = performance.now();
  for (let i = 0; i < runs; i++) await model.run(feeds);
  const runMs = (performance.now() - t0) / runs;
  const times = model.nodeTimes();
  model.profile(false);
  const nodeMs = times.reduce((s, t) => s + t.ms, 0) / runs;
  const kernelMs = times.reduce((s, t) => s + t.kernelMs, 0) / runs;
  return { nodes: times.length, runMs, nodeMs, kernelMs };
}

/** How many nodes run as int8 ops, float ops and Q/DQ conversions after lowering. */
function nodeKinds(model) {
  if (typeof model.describeLowered !== 'function') return null;
  const counts = { int8: 0, float: 0, qdq: 0 };
  for (const m of model.describeLowered().matchAll(/^\s*\[(int8|float|q\/dq)\s*\]/gm)) {
    counts[m[1] === 'q/dq' ? 'qdq' : m[1]]++;
  }
  return counts;
}

async function benchOrt(spec) {
  const ort = await import('onnxruntime-web');
  ort.env.wasm.numThreads = spec.threads ?? 1; // its one build: SIMD, threads when numThreads > 1
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
  const { times, cpuTimes } = await timeRuns(async () => (last = await session.run(feeds)), spec.warmup, spec.runs, spec.warmupMs);
  const first = last[session.outputNames[0]];
  const result = {
    loadMs,
    ...summarize(times),
    times,
    cpuTimes,
    output: { name: session.outputNames[0], dims: [...first.dims], sample: sample(first.data) },
    version: ort.env.versions?.web,
  };
  await session.release();
  return result;
}

/** Iterations that make fn(iters) take about targetSeconds. */
function calibrate(fn, targetSeconds, itersStart = 1) {
  let iters = itersStart;
  for (;;) {
    const seconds = timeCall(fn, iters);
    if (seconds >= targetSeconds / 2 || iters > 2 ** 30) return iters;
    iters = Math.ceil(iters * Math.min(64, (targetSeconds / Math.max(seconds, 1e-6)) * 1.05));
  }
}

/**
 * CPU seconds of fn(iters): this process's user + system time around the
 * call, not wall time, so the minutes the OS gives to other processes on a
 * shared machine do not count against a kernel (the peak loops and the
 * kernels are measured the same way; all run on this one thread). A kernel
 * entry that reports a negative time could not run.
 */
function timeCall(fn, iters) {
  const before = process.cpuUsage();
  const reported = fn(iters);
  const used = process.cpuUsage(before);
  if (reported !== undefined && !(reported >= 0)) throw new Error('the kernel could not run');
  return (used.user + used.system) / 1e6;
}

/**
 * The peak loops and the GEMM kernels, measured in interleaved rounds so a
 * busy moment on a shared machine hits all of them alike; each item keeps
 * its best round (what the code can do) and its median.
 */
async function benchKernels(spec) {
  const result = { dotPeak: null, gemm: [], conv: [], sgemm: [], notes: [] };
  const items = []; // {ops(iters), fn, iters, seconds: []}
  const add = (item, startIters = 1) => {
    try {
      item.iters = calibrate(item.fn, 0.08, startIters);
      item.seconds = [];
      items.push(item);
    } catch (e) {
      item.error = e.message;
    }
    return item;
  };
  // The dot_i16x8 peak: our own register-resident loops, separate wasm.
  const peakItems = [];
  try {
    const { instance } = await WebAssembly.instantiate(readFileSync(spec.dotPeakWasm), {});
    for (const [name, fn] of Object.entries(instance.exports)) {
      const m = /^dot_(peak_(\d+)x(\d+)|chain_(\d+))$/.exec(name);
      if (!m || typeof fn !== 'function') continue;
      const dots = m[2] ? Number(m[2]) * Number(m[3]) : Number(m[4]);
      peakItems.push(add({ name, ops: (iters) => iters * dots * 16, fn: (iters) => void fn(iters) }, 1000));
    }
    if (peakItems.length === 0) throw new Error(`no dot_* loops exported by ${spec.dotPeakWasm}`);
  } catch (e) {
    result.dotPeak = { error: e.message };
  }
  // Our GEMM micro-kernel through the kernel library's exported entries,
  // which only the benchmark variant of the core carries.
  await loadWasmq(spec); // configures the package to this spec's core
  const { getCore } = await import(pathToFileURL(join(ROOT, 'src/js/internal.mjs')).href);
  const core = await getCore();
  const shapes = [
    [256, 256, 256],
    [1, 1024, 1024],
    [3136, 64, 576],
  ];
  const gemmItems = [];
  const sgemmItems = [];
  for (const [m, n, k] of shapes) {
    const ops = (iters) => 2 * m * n * k * iters;
    if (typeof core._wqx_bench_qgemm !== 'function') {
      gemmItems.push({ m, n, k, error: 'n/a (no wqx_bench_qgemm in the wasm: bash wasm_build/build.sh --bench)' });
    } else {
      gemmItems.push(add({ m, n, k, ops, fn: (iters) => core._wqx_bench_qgemm(m, n, k, iters) }));
    }
    if (typeof core._wqx_bench_sgemm === 'function') {
      sgemmItems.push(add({ m, n, k, ops, fn: (iters) => core._wqx_bench_sgemm(m, n, k, iters) }));
    }
  }
  // NHWC int8 convolutions at mobilenetv2's shapes (uint8 activations, pads
  // (k - 1) / 2): depthwise 3x3 at stride 1 and 2 (its largest layers and
  // its smallest, 7x7x960), and a small 1x1 conv.
  // Ops count the useful multiply-adds only (2 per MAC).
  const convs = [
    { label: 'depthwise 3×3', h: 112, w: 112, c: 32, m: 32, k: 3, stride: 1, group: 32 },
    { label: 'depthwise 3×3', h: 56, w: 56, c: 144, m: 144, k: 3, stride: 1, group: 144 },
    { label: 'depthwise 3×3', h: 28, w: 28, c: 192, m: 192, k: 3, stride: 2, group: 192 },
    { label: 'depthwise 3×3', h: 112, w: 112, c: 96, m: 96, k: 3, stride: 2, group: 96 },
    { label: 'depthwise 3×3', h: 7, w: 7, c: 960, m: 960, k: 3, stride: 1, group: 960 },
    { label: '1×1', h: 28, w: 28, c: 32, m: 192, k: 1, stride: 1, group: 1 },
  ];
  const convItems = [];
  for (const cv of convs) {
    if (typeof core._wqx_bench_qconv !== 'function') {
      convItems.push({ ...cv, error: 'n/a (no wqx_bench_qconv in the wasm)' });
      continue;
    }
    const oh = Math.floor((cv.h - 1) / cv.stride) + 1;
    const ow = Math.floor((cv.w - 1) / cv.stride) + 1;
    const macs = oh * ow * cv.m * (cv.c / cv.group) * cv.k * cv.k;
    convItems.push(add({ ...cv, ops: (iters) => 2 * macs * iters, fn: (iters) => core._wqx_bench_qconv(cv.h, cv.w, cv.c, cv.m, cv.k, cv.stride, cv.group, iters) }));
  }
  let libPeak = null;
  if (typeof core._wqx_bench_dot_peak === 'function' && typeof core._wqx_bench_dot_peak_ops === 'function') {
    libPeak = add({ ops: (iters) => core._wqx_bench_dot_peak_ops(iters), fn: (iters) => core._wqx_bench_dot_peak(iters) });
  }

  for (let round = 0; round < spec.reps; round++) {
    for (const item of items) {
      try {
        item.seconds.push(timeCall(item.fn, item.iters));
      } catch (e) {
        item.error = e.message;
      }
    }
  }
  const rate = (item) => {
    if (item.error || !item.seconds?.length) return { error: item.error ?? 'not measured' };
    const sorted = [...item.seconds].sort((a, b) => a - b);
    const ops = item.ops(item.iters);
    return {
      best: ops / sorted[0] / 1e9,
      median: ops / sorted[sorted.length >> 1] / 1e9,
      ms: (sorted[0] / item.iters) * 1e3,
    };
  };
  if (!result.dotPeak) {
    const variants = peakItems
      .map((p) => ({ name: p.name, ...rate(p) }))
      .filter((v) => !v.error)
      .map((v) => ({ name: v.name, gops: v.best, medianGops: v.median }))
      .sort((a, b) => b.gops - a.gops);
    result.dotPeak = variants.length ? { gops: variants[0].gops, variant: variants[0].name, variants } : { error: 'no peak loop ran' };
  }
  for (const g of gemmItems) {
    const r = g.error ? { error: g.error } : rate(g);
    result.gemm.push(r.error ? { m: g.m, n: g.n, k: g.k, error: r.error } : { m: g.m, n: g.n, k: g.k, gops: r.best, medianGops: r.median, ms: r.ms });
  }
  for (const c of convItems) {
    const r = c.error ? { error: c.error } : rate(c);
    const { ops, fn, iters, seconds, ...shape } = c;
    result.conv.push(r.error ? { ...shape, error: r.error } : { ...shape, gops: r.best, medianGops: r.median, ms: r.ms });
  }
  for (const g of sgemmItems) {
    const r = rate(g);
    result.sgemm.push(r.error ? { m: g.m, n: g.n, k: g.k, error: r.error } : { m: g.m, n: g.n, k: g.k, gflops: r.best, ms: r.ms });
  }
  if (libPeak) {
    const r = rate(libPeak);
    if (r.error) result.notes.push(`wqx_bench_dot_peak: ${r.error}`);
    else result.kernelDotPeakGops = r.best;
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
// Thread pools (ours, ORT-web's) could keep the process alive: exit once
// the result line is flushed.
process.stdout.write('', () => process.exit(0));
