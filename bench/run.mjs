#!/usr/bin/env node
// wasmq benchmark: our int8 and float paths against onnxruntime-web (wasm,
// SIMD, one thread) on the same ONNX files, plus the int8 GEMM micro-kernel
// against this machine's i32x4.dot_i16x8_s peak, and the .wasm size.
//
//   npm run bench [-- --json FILE] [--models REGEX] [--runs N] [--warmup N]
//                 [--warmup-ms MS] [--rounds N] [--threads N] [--no-build] [--timeout SECONDS]
//                 [--no-relaxed]
//
// Every measurement (one model in one runtime, or the kernel set) runs in a
// fresh Node process. The cells are measured in --rounds interleaved sweeps
// (ours, ORT, ours, ORT, ...; each round a fresh process timing runs/rounds
// runs), so a busy moment of a shared machine hits both runtimes alike; each
// warms up for --warmup runs and at least --warmup-ms (V8 tiers hot wasm up
// late). Inputs are seeded random (never zeros). Each cell shows the median
// over all timed runs and [p10, p90]. A benchmark, not a test: it asserts
// nothing about time; a failure prints in its cell and the run goes on.
// Timings on shared machines are noisy: compare the ratios of one run, not
// absolute times across runs; the load average is printed beside them, and
// a second table gives the same runs in process CPU time (one thread), which
// leaves out the time other processes held the CPU.
// --threads N (N > 1) adds cells of ours on N threads (the threaded build)
// and onnxruntime-web with numThreads N, and a table comparing them.
// Last, bench/relaxed.mjs (skipped by --no-relaxed): ours with SIMD128 and
// with relaxed SIMD beside onnxruntime-web on Node 24, one thread.

import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { basename, dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';

import { summarize, tensorProtoDims } from './common.mjs';

const BENCH_DIR = dirname(fileURLToPath(import.meta.url));
const ROOT = join(BENCH_DIR, '..');
const SHARED = process.env.WQ_SHARED_DIR ?? join(ROOT, '..', 'shared');
const MODELS = join(SHARED, 'models');
// Real third-party int8 models (no float sibling: ours vs ORT-web int8 only).
const MODELS_INT8 = join(SHARED, 'models-int8');
// The shipped build (model timings, size) and the benchmark variant that also
// carries the kernel timing entry points wqx_bench_* (build.sh --bench).
const WASM = join(ROOT, 'wasm_build/out/wasmq.wasm');
const THREADED_WASM = join(ROOT, 'wasm_build/out/mt/wasmq.wasm');
const QUANT_WASM = join(ROOT, 'wasm_build/out/wasmq-quant.wasm');
const BENCH_CORE_DIR = join(ROOT, 'wasm_build/out/bench');
const DOT_PEAK_SRC = join(BENCH_DIR, 'dot_peak.c');
const DOT_PEAK_WASM = join(BENCH_DIR, 'out/dot_peak.wasm');

// Shapes for inputs with symbolic dims (models with a test data set get
// theirs from input_0.pb when not listed here).
const INPUT_SHAPES = {
  'ppocr-mobile-v2-cls': { x: [1, 3, 48, 192] },
  'super-resolution-10': { input: [1, 1, 224, 224] },
  'pytorch-super-resolution-depthtospace': { input: [1, 1, 224, 224] },
  'mobilenetv2-12-int8': { input: [1, 3, 224, 224] },
  // One 96 ms chunk of 16 kHz audio (v3.1's h0/c0 are static).
  'silero-vad-v2-micro': { input: [1, 1536] },
  'silero-vad-v3.1': { input: [1, 1536] },
};

// Options for loading the int8 models (the lowering pass, once it has a
// switch, is enabled here).
const INT8_LOAD_OPTIONS = {};

function parseArgs(argv) {
  const opts = { json: null, models: null, runs: 60, warmup: 10, warmupMs: 1000, rounds: 3, threads: 1, build: true, timeout: 600, relaxed: true };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) throw new Error(`${a} needs a value`);
      return argv[++i];
    };
    if (a === '--json') opts.json = value();
    else if (a === '--models') opts.models = new RegExp(value());
    else if (a === '--runs') opts.runs = Number(value());
    else if (a === '--warmup') opts.warmup = Number(value());
    else if (a === '--warmup-ms') opts.warmupMs = Number(value());
    else if (a === '--rounds') opts.rounds = Number(value());
    else if (a === '--threads') opts.threads = Number(value());
    else if (a === '--timeout') opts.timeout = Number(value());
    else if (a === '--no-build') opts.build = false;
    else if (a === '--no-relaxed') opts.relaxed = false;
    else if (a === '--help' || a === '-h') {
      console.log(readFileSync(fileURLToPath(import.meta.url), 'utf8').split('\n').slice(1).filter((l, i, all) => all.slice(0, i + 1).every((x) => x.startsWith('//'))).join('\n').replace(/^\/\/ ?/gm, ''));
      process.exit(0);
    } else throw new Error(`unknown option ${a} (see --help)`);
  }
  if (!(opts.runs >= 1) || !(opts.warmup >= 0) || !(opts.warmupMs >= 0) || !(opts.rounds >= 1) || !Number.isInteger(opts.threads) || opts.threads < 1) {
    throw new Error('--runs, --rounds and --threads must be >= 1, --warmup and --warmup-ms >= 0');
  }
  return opts;
}

/** A model file as the tables show it: relative to models/ (models-int8/... for the real int8 ones, bench/out/... for the ones quantized here). */
function shown(file) {
  // Models the bench writes itself (bench/out/) are named from the repository.
  if (file.startsWith(join(BENCH_DIR, 'out'))) return relative(ROOT, file);
  return relative(MODELS, file).replace(/^\.\.\//, '');
}

function log(line) {
  process.stderr.write(`${line}\n`);
}

// --- builds -----------------------------------------------------------------

function buildWasm() {
  for (const [args, wasm] of [
    [[], WASM],
    [['--bench'], join(BENCH_CORE_DIR, 'wasmq.wasm')],
    [['--threads'], THREADED_WASM],
    [['--relaxed'], join(ROOT, 'wasm_build/out/wasmq-relaxed.wasm')],
  ]) {
    log(`build: wasm core (bash wasm_build/build.sh${args.map((a) => ` ${a}`).join('')})`);
    const r = spawnSync('bash', [join(ROOT, 'wasm_build/build.sh'), ...args], { cwd: ROOT, encoding: 'utf8' });
    if (r.status !== 0) {
      const tail = `${r.stdout}${r.stderr}`.trim().split('\n').slice(-5).join('\n');
      if (existsSync(wasm)) log(`build: wasm build failed, benchmarking the existing ${relative(ROOT, wasm)}:\n${tail}`);
      else throw new Error(`wasm build failed:\n${tail}`);
    }
  }
}

function buildDotPeak() {
  if (existsSync(DOT_PEAK_WASM) && statSync(DOT_PEAK_WASM).mtimeMs >= statSync(DOT_PEAK_SRC).mtimeMs) return null;
  mkdirSync(dirname(DOT_PEAK_WASM), { recursive: true });
  log('build: dot_i16x8 peak loop (emcc bench/dot_peak.c)');
  const r = spawnSync(
    process.env.EMCC ?? 'emcc',
    ['-O3', '-msimd128', '--no-entry', '-sSTANDALONE_WASM', DOT_PEAK_SRC, '-o', DOT_PEAK_WASM],
    { encoding: 'utf8', env: { ...process.env, NODE_PATH: process.env.NODE_PATH ?? '/usr/share/nodejs' } },
  );
  if (r.status !== 0) return `emcc failed: ${(r.stderr || r.error?.message || '').trim().split('\n').slice(-3).join(' ')}`;
  return null;
}

// --- what to measure --------------------------------------------------------

const INT8_SUFFIXES = ['_qdq', '_qdq_pertensor', '_qlinear'];

/**
 * Rows: {name, float: file|null, int8: file|null, inputShapes}. Synthetic
 * models pair NAME_f32 with each int8 form NAME_qdq, NAME_qdq_pertensor,
 * NAME_qlinear; a real model pairs with a sibling folder NAME-*int8* or
 * NAME-*qdq* when one exists.
 */
function discoverRows() {
  const rows = [];
  const synthetic = join(MODELS, 'synthetic');
  if (existsSync(synthetic)) {
    const files = readdirSync(synthetic).filter((f) => f.endsWith('.onnx')).sort();
    const bases = [...new Set(files.filter((f) => f.endsWith('_f32.onnx')).map((f) => f.slice(0, -'_f32.onnx'.length)))];
    for (const base of bases) {
      const float = join(synthetic, `${base}_f32.onnx`);
      const int8 = INT8_SUFFIXES.map((s) => `${base}${s}.onnx`).filter((f) => files.includes(f));
      if (int8.length === 0) rows.push({ name: base, float, int8: null, inputShapes: {} });
      for (const f of int8) rows.push({ name: f.slice(0, -'.onnx'.length), float, int8: join(synthetic, f), inputShapes: {} });
    }
    // Int8 files without a float sibling still get a row.
    for (const f of files) {
      if (!f.endsWith('_f32.onnx') && !bases.some((b) => INT8_SUFFIXES.some((s) => f === `${b}${s}.onnx`))) {
        rows.push({ name: f.slice(0, -'.onnx'.length), float: null, int8: join(synthetic, f), inputShapes: {} });
      }
    }
  }
  const dirs = existsSync(MODELS)
    ? readdirSync(MODELS)
        .filter((d) => d !== 'synthetic' && existsSync(join(MODELS, d, 'model.onnx')))
        .sort()
    : [];
  const isQuantizedSibling = (d) => dirs.some((o) => o !== d && d.startsWith(`${o}-`) && /int8|qdq|quant/.test(d.slice(o.length)));
  for (const d of dirs) {
    if (isQuantizedSibling(d)) continue;
    const sibling = dirs.find((o) => o !== d && o.startsWith(`${d}-`) && /int8|qdq|quant/.test(o.slice(d.length)));
    // Voice-activity models have no int8 sibling: quantized here (see quantizeHere).
    const vad = !sibling && d.startsWith('silero-vad');
    rows.push({
      name: d,
      float: join(MODELS, d, 'model.onnx'),
      int8: sibling ? join(MODELS, sibling, 'model.onnx') : vad ? join(BENCH_DIR, 'out', `${d}-int8.onnx`) : null,
      quantizedHere: vad,
      inputShapes: inputShapesFor(d),
    });
  }
  for (const d of existsSync(MODELS_INT8) ? readdirSync(MODELS_INT8).sort() : []) {
    const file = join(MODELS_INT8, d, 'model.onnx');
    if (existsSync(file)) rows.push({ name: d, float: null, int8: file, inputShapes: INPUT_SHAPES[d] ?? {} });
  }
  return rows;
}

/** Configured shapes, else the first test data set's input dims for single-input models. */
function inputShapesFor(dir) {
  if (INPUT_SHAPES[dir]) return INPUT_SHAPES[dir];
  const pb = join(MODELS, dir, 'test_data_set_0', 'input_0.pb');
  if (!existsSync(pb) || existsSync(join(MODELS, dir, 'test_data_set_0', 'input_1.pb'))) return {};
  try {
    const dims = tensorProtoDims(pb);
    const name = inputNameOf(join(MODELS, dir, 'model.onnx'));
    return name ? { [name]: dims } : {};
  } catch {
    return {};
  }
}

/** The first graph input's name, via the native-free route: our own loader. */
let inputNames = null;
function inputNameOf(modelPath) {
  // Filled in by main() (one small worker-free pass through the JS API).
  return inputNames?.get(modelPath) ?? null;
}

/**
 * The Silero VAD rows' int8 models: `wasmq quantize` defaults (the JS
 * quantize()), calibrated on synthesized speech and silence (espeak-ng +
 * sox, tests/node/speech.mjs), written to bench/out/. Without those tools
 * the row keeps its float cells only.
 */
async function quantizeHere(rows) {
  for (const r of rows.filter((x) => x.quantizedHere)) {
    try {
      const { haveSpeechTools, quantizeVad } = await import('../tests/node/speech.mjs');
      if (!haveSpeechTools()) throw new Error('espeak-ng and sox are needed (scripts/setup.sh)');
      log(`quantize: ${r.name} on synthesized speech -> ${relative(ROOT, r.int8)}`);
      const { onnx } = await quantizeVad(r.float, { chunk: r.inputShapes.input[1] });
      mkdirSync(dirname(r.int8), { recursive: true });
      writeFileSync(r.int8, onnx);
    } catch (e) {
      log(`quantize: ${r.name} left float (${e.message})`);
      r.int8 = null;
    }
  }
}

// --- running measurements ---------------------------------------------------

function runWorker(spec, timeoutSeconds) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [join(BENCH_DIR, 'worker.mjs'), JSON.stringify(spec)], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutSeconds * 1000);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const line = stdout.split('\n').reverse().find((l) => l.startsWith('BENCH_RESULT '));
      if (line) resolve(JSON.parse(line.slice('BENCH_RESULT '.length)));
      else if (signal === 'SIGKILL') resolve({ error: `timed out after ${timeoutSeconds} s` });
      else {
        const why = stderr.trim().split('\n').filter(Boolean).slice(-2).join(' ') || `exit code ${code}`;
        resolve({ error: `worker crashed: ${why}` });
      }
    });
  });
}

function fmtMs(cell) {
  if (!cell) return '—';
  if (cell.error) return `error: ${cell.error}`;
  const f = (v) => (v >= 100 ? v.toFixed(0) : v >= 10 ? v.toFixed(1) : v.toFixed(2));
  return `${f(cell.median)} [${f(cell.p10)}, ${f(cell.p90)}]`;
}

function ratio(slow, fast) {
  if (!slow || !fast || slow.error || fast.error) return '—';
  return `${(slow.median / fast.median).toFixed(2)}×`;
}

/** max |a - b| / max |b| over the sampled outputs (same model, two runtimes). */
function agreement(ours, ort) {
  if (!ours?.output || !ort?.output) return null;
  const a = ours.output.sample;
  const b = ort.output.sample;
  if (a.length !== b.length || a.length === 0) return null;
  let diff = 0;
  let scale = 0;
  for (let i = 0; i < a.length; i++) {
    diff = Math.max(diff, Math.abs(a[i] - b[i]));
    scale = Math.max(scale, Math.abs(b[i]));
  }
  return scale > 0 ? diff / scale : diff;
}

function truncate(s, n) {
  return s.length <= n ? s : `${s.slice(0, n - 1)}…`;
}

function printTable(header, rows) {
  const widths = header.map((h, c) => Math.max(h.length, ...rows.map((r) => r[c].length)));
  const line = (cells) => cells.map((v, c) => (c === 0 ? v.padEnd(widths[c]) : v.padStart(widths[c]))).join('  ');
  console.log(line(header));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const r of rows) console.log(line(r));
}

/** Whether our load of an int8 model ran wasmq's int8 ops (null: unknown). */
function loweredFrom(cell) {
  if (!cell?.nodes) return null;
  return cell.nodes.int8 > 0;
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  if (opts.build) buildWasm();
  const dotPeakError = buildDotPeak();
  if (!existsSync(WASM)) throw new Error(`${WASM} is missing (npm run build:wasm)`);

  // Input names of the real models that take their shape from test data.
  inputNames = new Map();
  try {
    const wasmq = await import(new URL('../src/js/index.mjs', import.meta.url).href);
    for (const d of existsSync(MODELS) ? readdirSync(MODELS) : []) {
      const p = join(MODELS, d, 'model.onnx');
      if (INPUT_SHAPES[d] || !existsSync(p) || !existsSync(join(MODELS, d, 'test_data_set_0'))) continue;
      try {
        const m = await wasmq.load(p);
        if (m.inputs.length === 1 && m.inputs[0].shape?.some((x) => typeof x !== 'number')) inputNames.set(p, m.inputs[0].name);
        m.dispose();
      } catch {
        // the measurement itself will report the load error
      }
    }
  } catch (e) {
    log(`warning: cannot read input names (${e.message})`);
  }

  let rows = discoverRows();
  if (opts.models) rows = rows.filter((r) => opts.models.test(r.name));
  if (rows.length === 0) throw new Error(`no models found under ${MODELS}`);
  await quantizeHere(rows);

  // Unique (runtime, file) cells: a float model shared by several int8 rows is measured once.
  const cells = new Map();
  const cellKey = (kind, file, threads = 1) => `${kind}${threads > 1 ? `@${threads}` : ''}:${file}`;
  const threadCounts = opts.threads > 1 ? [1, opts.threads] : [1];
  for (const r of rows) {
    for (const threads of threadCounts) {
    for (const [kind, file, int8] of [
      ['ours', r.int8, true],
      ['ours', r.float, false],
      ['ort', r.int8, true],
      ['ort', r.float, false],
    ]) {
      if (!file || cells.has(cellKey(kind, file, threads))) continue;
      cells.set(cellKey(kind, file, threads), {
        kind,
        threads,
        model: file,
        inputShapes: r.inputShapes,
        loadOptions: kind === 'ours' && int8 ? INT8_LOAD_OPTIONS : {},
        warmup: opts.warmup,
        warmupMs: opts.warmupMs,
        runs: Math.max(1, Math.ceil(opts.runs / opts.rounds)),
        seed: 20240611,
      });
    }
    }
  }

  // Rounds of every cell in turn: each cell's runs spread over the whole
  // benchmark, next to the other runtime's runs of the same model.
  const results = new Map();
  const total = cells.size * opts.rounds + 1;
  let done = 0;
  const started = performance.now();
  const loadBefore = loadavg();
  for (let round = 0; round < opts.rounds; round++) {
    for (const [key, spec] of cells) {
      done++;
      const label = `${spec.kind === 'ours' ? 'wasmq   ' : 'ORT-web '} ${shown(spec.model)}${spec.threads > 1 ? ` (${spec.threads} threads)` : ''}`;
      const r = await runWorker(spec, opts.timeout);
      const prev = results.get(key);
      if (!prev || r.error) results.set(key, prev?.error ? prev : r.error || !prev ? r : prev);
      else {
        prev.times.push(...r.times);
        if (prev.cpuTimes && r.cpuTimes) prev.cpuTimes.push(...r.cpuTimes);
      }
      log(`[${done}/${total}] round ${round + 1} ${label}: ${r.error ? `error: ${r.error}` : `${fmtMs(r)} ms`}`);
    }
  }
  for (const r of results.values()) {
    if (r.error || !r.times) continue;
    Object.assign(r, summarize(r.times), { rounds: opts.rounds });
    if (r.cpuTimes?.length) r.cpu = summarize(r.cpuTimes);
  }
  const loadAfter = loadavg();
  done++;
  log(`[${done}/${total}] kernels: dot_i16x8 peak and int8 GEMM GOPS ...`);
  const kernels = dotPeakError
    ? { dotPeak: { error: dotPeakError }, gemm: [], sgemm: [], notes: [] }
    : await runWorker({ kind: 'kernels', dotPeakWasm: DOT_PEAK_WASM, coreDir: BENCH_CORE_DIR, reps: 9 }, opts.timeout);
  if (dotPeakError && !kernels.error) {
    // Still measure the GEMM even without our peak loop.
    const k = await runWorker({ kind: 'kernels', dotPeakWasm: '/nonexistent', coreDir: BENCH_CORE_DIR, reps: 9 }, opts.timeout);
    Object.assign(kernels, { gemm: k.gemm ?? [], conv: k.conv ?? [], sgemm: k.sgemm ?? [], kernelDotPeakGops: k.kernelDotPeakGops });
  }
  log(`done in ${((performance.now() - started) / 1000).toFixed(0)} s\n`);

  // --- report ---
  const get = (kind, file) => (file ? results.get(cellKey(kind, file)) : null);
  let anyUnlowered = false;
  const table = rows.map((r) => {
    const oi = get('ours', r.int8);
    const of = get('ours', r.float);
    const ti = get('ort', r.int8);
    const tf = get('ort', r.float);
    const lowered = loweredFrom(oi);
    const mark = oi && !oi.error && lowered === false ? ' †' : '';
    if (mark) anyUnlowered = true;
    return {
      row: r,
      cells: { oursInt8: oi, oursFloat: of, ortInt8: ti, ortFloat: tf },
      lowered,
      text: [
        r.name,
        truncate(fmtMs(oi), 44) + mark,
        truncate(fmtMs(of), 44),
        truncate(fmtMs(ti), 44),
        truncate(fmtMs(tf), 44),
        ratio(ti, oi),
        ratio(tf, of),
        ratio(tf, oi),
      ],
    };
  });
  const cpu = cpus()[0]?.model ?? 'unknown CPU';
  const ortVersion = [...results.values()].find((r) => r.version)?.version ?? '?';
  console.log(
    `wasmq benchmark — Node ${process.version}, ${cpu}, onnxruntime-web ${ortVersion} (wasm, SIMD, 1 thread); ` +
      `per cell ${opts.rounds} interleaved rounds (fresh process each) of >= ${opts.warmup} warm-ups and >= ${opts.warmupMs} ms warm-up, ` +
      `then ${Math.ceil(opts.runs / opts.rounds)} timed runs`,
  );
  const fmtLoad = (l) => l.map((v) => v.toFixed(2)).join(' ');
  console.log(`load average (1/5/15 min): ${fmtLoad(loadBefore)} before, ${fmtLoad(loadAfter)} after (${cpus().length} CPUs)`);
  console.log('milliseconds per run: median [p10, p90]; speedups are ORT-web median / ours median\n');
  printTable(
    ['model', 'ours int8', 'ours float', 'ORT-web int8', 'ORT-web float', 'int8 vs ORT int8', 'float vs ORT float', 'int8 vs ORT float'],
    table.map((t) => t.text),
  );
  // The same runs in process CPU time (one-thread cells): on a shared
  // machine the wall time also holds the time other processes had the CPU,
  // which hits whichever side happened to be running; CPU time does not.
  const cpuOf = (cell) => (cell && !cell.error && cell.cpu ? cell.cpu : null);
  const cpuRows = table
    .filter((t) => cpuOf(t.cells.oursInt8) || cpuOf(t.cells.oursFloat))
    .map((t) => {
      const c = Object.fromEntries(Object.entries(t.cells).map(([k, v]) => [k, cpuOf(v)]));
      return [t.row.name, fmtMs(c.oursInt8), fmtMs(c.ortInt8), ratio(c.ortInt8, c.oursInt8), fmtMs(c.oursFloat), fmtMs(c.ortFloat), ratio(c.ortFloat, c.oursFloat)];
    });
  if (cpuRows.length) {
    console.log('\nprocess CPU time per run (user + system, ms; the same runs, one thread): median [p10, p90]\n');
    printTable(['model', 'ours int8', 'ORT-web int8', 'int8 vs ORT int8', 'ours float', 'ORT-web float', 'float vs ORT float'], cpuRows);
  }
  if (opts.threads > 1) {
    // Ours on N threads against ours on one and against ORT-web numThreads N.
    const n = opts.threads;
    const threadRows = table.map((t) => {
      const r = t.row;
      const cells = [];
      for (const file of [r.int8, r.float]) {
        const one = get('ours', file);
        const many = file ? results.get(cellKey('ours', file, n)) : null;
        const ortMany = file ? results.get(cellKey('ort', file, n)) : null;
        const used = many?.info && many.info.threads !== n ? ` (${many.info.threads} used)` : '';
        cells.push(truncate(fmtMs(many), 40) + used, truncate(fmtMs(ortMany), 40), ratio(one, many), ratio(ortMany, many));
      }
      return [r.name, ...cells];
    });
    console.log(`\n${n} threads (ours: the threaded build; ORT-web: numThreads ${n}); "1→${n}" is ours on 1 thread / ours on ${n}:\n`);
    printTable(
      ['model', `ours int8 ×${n}`, `ORT int8 ×${n}`, `int8 1→${n}`, `int8 vs ORT ×${n}`, `ours float ×${n}`, `ORT float ×${n}`, `float 1→${n}`, `float vs ORT ×${n}`],
      threadRows,
    );
  }
  const here = table.filter((t) => t.row.quantizedHere && t.row.int8);
  if (here.length) {
    console.log('\nquantized here (wasmq quantize defaults, calibrated on synthesized speech), ours int8 vs ours float and vs ORT-web float, one thread:');
    for (const t of here) console.log(`  ${t.row.name}: ${ratio(t.cells.oursFloat, t.cells.oursInt8)} vs ours float, ${ratio(t.cells.ortFloat, t.cells.oursInt8)} vs ORT-web float`);
  }
  if (anyUnlowered) {
    console.log('\n† ours int8 ran no wasmq int8 op: the quantized graph ran op by op (Q/DQ around float ops, ONNX reference int8 ops).');
  }
  const lowering = table
    .filter((t) => t.cells.oursInt8?.nodes)
    .map((t) => {
      const n = t.cells.oursInt8.nodes;
      return `  ${t.row.name}: ${n.int8} int8, ${n.float} float, ${n.qdq} Q/DQ`;
    });
  if (lowering.length) console.log(`\nours int8, nodes after lowering:\n${lowering.join('\n')}`);

  // Errors in full, and output agreement (sampled) between the runtimes.
  const errors = [];
  const agreements = [];
  for (const t of table) {
    for (const [col, cell] of Object.entries(t.cells)) if (cell?.error) errors.push(`  ${t.row.name} / ${col}: ${cell.error}`);
    const ai = agreement(t.cells.oursInt8, t.cells.ortInt8);
    const af = agreement(t.cells.oursFloat, t.cells.ortFloat);
    if (ai !== null || af !== null) {
      agreements.push(`  ${t.row.name}: int8 ${ai === null ? '—' : ai.toExponential(2)}, float ${af === null ? '—' : af.toExponential(2)}`);
    }
  }
  if (errors.length) console.log(`\nerrors:\n${errors.join('\n')}`);
  if (agreements.length) console.log(`\noutput agreement with ORT-web (max |ours - ORT| / max |ORT| over sampled elements of output 0):\n${agreements.join('\n')}`);

  // Arena figures of our runs.
  const bytes = (n) => (n >= 1048576 ? `${(n / 1048576).toFixed(2)} MB` : n >= 1024 ? `${(n / 1024).toFixed(1)} KB` : `${n} B`);
  const arena = [];
  for (const [key, r] of results) {
    if (!key.startsWith('ours:') || !r.memory?.planned) continue;
    const m = r.memory;
    const factor = m.lowerBoundBytes ? `${(m.arenaBytes / m.lowerBoundBytes).toFixed(3)}×` : '—';
    arena.push(
      `  ${shown(key.slice(5)).padEnd(48)} ${bytes(m.arenaBytes).padStart(9)}, lower bound ` +
        `${bytes(m.lowerBoundBytes).padStart(9)} (${factor}), ${bytes(m.unsharedBytes)} without reuse, ${m.tensors} tensors`,
    );
  }
  if (arena.length) console.log(`\narena (intermediates):\n${arena.join('\n')}`);

  // Fixed cost per node (profiled runs after the timed ones, so slower than the medians).
  const us = (ms) => `${(ms * 1e3).toFixed(1)} µs`;
  const perNode = [];
  for (const [key, r] of results) {
    const p = r.perNode;
    if (!key.startsWith('ours:') || !p?.nodes) continue;
    perNode.push(
      `  ${shown(key.slice(5)).padEnd(48)} ${String(p.nodes).padStart(4)} nodes: kernels ${us(p.kernelMs)}, ` +
        `executor ${us(p.nodeMs - p.kernelMs)} (${us((p.nodeMs - p.kernelMs) / p.nodes)}/node), outside nodes ${us(p.runMs - p.nodeMs)}`,
    );
  }
  if (perNode.length) console.log(`\nours, per run (profiled runs): kernel time, fixed cost per node, JS and staging:\n${perNode.join('\n')}`);

  // Kernels.
  console.log('\nint8 kernels (best of 9 interleaved rounds of process CPU time, GOPS = 2 ops per multiply-add):');
  const peak = kernels.dotPeak?.gops;
  if (kernels.error) console.log(`  error: ${kernels.error}`);
  if (kernels.dotPeak?.error) console.log(`  i32x4.dot_i16x8_s peak: error: ${kernels.dotPeak.error}`);
  else if (peak) {
    const others = kernels.dotPeak.variants.map((v) => `${v.name} ${v.gops.toFixed(1)}`).join(', ');
    console.log(`  i32x4.dot_i16x8_s peak (register-resident loop): ${peak.toFixed(1)} GOPS  (${others})`);
  }
  if (kernels.kernelDotPeakGops) console.log(`  (the kernel library's own dot loop, with L1 loads: ${kernels.kernelDotPeakGops.toFixed(1)} GOPS)`);
  for (const g of kernels.gemm ?? []) {
    const shape = `${g.m}×${g.n}×${g.k}`.padEnd(14);
    if (g.error) console.log(`  qgemm ${shape} ${g.error}`);
    else {
      const frac = peak ? `  = ${((100 * g.gops) / peak).toFixed(0)}% of peak` : '';
      console.log(`  qgemm ${shape} ${g.gops.toFixed(1).padStart(6)} GOPS (${g.ms.toFixed(3)} ms)${frac}`);
    }
  }
  for (const c of kernels.conv ?? []) {
    const shape = `${c.h}×${c.w}×${c.c}→${c.m} k${c.k} s${c.stride}${c.group > 1 ? ` g${c.group}` : ''}`.padEnd(26);
    if (c.error) console.log(`  qconv ${shape} ${c.error}`);
    else {
      const frac = peak ? `  = ${((100 * c.gops) / peak).toFixed(0)}% of peak` : '';
      console.log(`  qconv ${shape} ${c.gops.toFixed(1).padStart(6)} GOPS (${c.ms.toFixed(3)} ms, ${c.label})${frac}`);
    }
  }
  for (const s of kernels.sgemm ?? []) {
    if (!s.error) console.log(`  sgemm ${`${s.m}×${s.n}×${s.k}`.padEnd(14)} ${s.gflops.toFixed(1).padStart(6)} GFLOPS (float fallback)`);
  }
  if (!kernels.gemm?.length && !kernels.error) console.log('  qgemm: n/a');

  // Wasm size.
  const wasmBytes = readFileSync(WASM);
  const wasmSize = { bytes: wasmBytes.length, gzipBytes: gzipSync(wasmBytes, { level: 9 }).length };
  console.log(
    `\n.wasm: ${relative(ROOT, WASM)} ${wasmSize.bytes} bytes (${(wasmSize.bytes / 1024).toFixed(1)} KB; gzip -9 ${(wasmSize.gzipBytes / 1024).toFixed(1)} KB)`,
  );
  if (existsSync(THREADED_WASM)) {
    const mt = readFileSync(THREADED_WASM);
    wasmSize.threaded = { bytes: mt.length, gzipBytes: gzipSync(mt, { level: 9 }).length };
    console.log(
      `  threaded variant: ${relative(ROOT, THREADED_WASM)} ${mt.length} bytes (${(mt.length / 1024).toFixed(1)} KB; gzip -9 ${(wasmSize.threaded.gzipBytes / 1024).toFixed(1)} KB)`,
    );
  }
  for (const [key, file, what] of [
    ['relaxed', join(ROOT, 'wasm_build/out/wasmq-relaxed.wasm'), 'relaxed-SIMD variant'],
    ['relaxedThreaded', join(ROOT, 'wasm_build/out/mt/wasmq-relaxed.wasm'), 'relaxed-SIMD threaded variant'],
  ]) {
    if (!existsSync(file)) continue;
    const w = readFileSync(file);
    wasmSize[key] = { bytes: w.length, gzipBytes: gzipSync(w, { level: 9 }).length };
    console.log(`  ${what}: ${relative(ROOT, file)} ${w.length} bytes (${(w.length / 1024).toFixed(1)} KB; gzip -9 ${(wasmSize[key].gzipBytes / 1024).toFixed(1)} KB)`);
  }
  if (existsSync(QUANT_WASM)) {
    const qw = readFileSync(QUANT_WASM);
    wasmSize.quant = { bytes: qw.length, gzipBytes: gzipSync(qw, { level: 9 }).length };
    console.log(
      `  quant variant (quantize() only): ${relative(ROOT, QUANT_WASM)} ${qw.length} bytes (${(qw.length / 1024).toFixed(1)} KB; gzip -9 ${(wasmSize.quant.gzipBytes / 1024).toFixed(1)} KB)`,
    );
  }

  if (opts.json) {
    const out = {
      date: new Date().toISOString(),
      node: process.version,
      cpu,
      onnxruntimeWeb: ortVersion,
      config: { warmup: opts.warmup, warmupMs: opts.warmupMs, rounds: opts.rounds, runs: opts.runs, seed: 20240611 },
      loadAverage: { before: loadBefore, after: loadAfter },
      rows: table.map((t) => ({
        name: t.row.name,
        float: t.row.float && relative(MODELS, t.row.float),
        int8: t.row.int8 && relative(MODELS, t.row.int8),
        inputShapes: t.row.inputShapes,
        oursInt8Lowered: t.lowered,
        ...Object.fromEntries(
          Object.entries(t.cells).map(([k, c]) => [k, c ? (({ output, times, cpuTimes, ...rest }) => ({ ...rest, outputDims: output?.dims }))(c) : null]),
        ),
        agreementInt8: agreement(t.cells.oursInt8, t.cells.ortInt8),
        agreementFloat: agreement(t.cells.oursFloat, t.cells.ortFloat),
      })),
      kernels,
      wasm: wasmSize,
    };
    writeFileSync(opts.json, `${JSON.stringify(out, null, 2)}\n`);
    log(`wrote ${opts.json}`);
  }
  if (opts.relaxed) {
    spawnSync(process.execPath, [join(BENCH_DIR, 'relaxed.mjs'), '--runs', String(opts.runs), '--rounds', String(opts.rounds),
      '--warmup', String(opts.warmup), '--warmup-ms', String(opts.warmupMs)], { cwd: ROOT, stdio: 'inherit' });
  }
}

main().catch((e) => {
  log(`bench: ${e.message}`);
  process.exit(1);
});
