#!/usr/bin/env node
// wasmq command line (wasm build). The native CLI (src/core/cli) implements
// the same commands with the same output, so the two can be diffed.
//
//   wasmq info | run | inspect | check | quantize | render ...   (HELP below;
//   `wasmq COMMAND --help` prints one command's usage)
//   wasmq run MODEL ... --stream --chunk N [--state OUT=IN]...: cli_stream.mjs
//
// `run` prints one line per output:
//   NAME DTYPE [d0,d1,...] [v0 v1 v2 v3 v4 v5 ...] argmax=K
// (values as C's %.6g, at most 6 then " ..."; argmax is the first maximum
// over the flattened output, omitted for empty outputs) and, with --out,
// writes DIR/NAME.npy per output ('/', '\' and ':' in NAME become '_').
// Inputs not given are random:0. Exit codes: 0 ok, 1 model failed to load or
// run, 2 usage error (bad option, missing/unreadable file, bad .npy, unknown
// input name). Errors are one line on stderr:
//   wasmq: WHAT: MESSAGE (node 'NODE') [WQ_ERR_...]

import { readFile, writeFile, mkdir, readdir, open, rename, unlink, stat, access } from 'node:fs/promises';
import { constants } from 'node:fs';
import path from 'node:path';
import { readLocalFile, maxFileBytesFromEnv } from '#platform';
import { load, WasmqError, quantizeDynamic } from './index.mjs';
import { quantizeSince } from './quantize.mjs';
import { checkCase } from './internal.mjs';
import { parseNpy, encodeNpy } from './npy.mjs';
import { randomArray } from './random.mjs';
import { safeFileName, openCalibration, CalibError } from './calib.mjs';
import { numel } from './dtypes.mjs';
import { toDrawable, nodeData, parseNodeData } from './graph/data.mjs';
import { layoutDrawable, renderSvg } from './graph/render.mjs';
import { renderReport } from './graph/report.mjs';
import { step, stepUpdate, stepEnd } from './progress.mjs';
import { runStream } from './cli_stream.mjs';

// Each command's usage: `wasmq COMMAND --help` (stdout, exit 0) and after a
// usage error (stderr, exit 2). The same text as the native CLI's HELP
// (src/core/cli/main.c), plus render, which only this CLI has.
const HELP = {
  info: `  wasmq info MODEL [--lowered] [--partition int|int+fp|fp]
      inputs, outputs, opsets, ops, parameters, arena; --lowered: each node
      after int8 lowering (int8 op and qparams, or why it stayed float)`,
  run: `  wasmq run MODEL [--input NAME=FILE.npy | --input NAME=random:SEED]...
                  [--shape NAME=1x3x224x224]... [--out DIR] [--threads N]
                  [--repeats N] [--max-memory BYTES] [--max-time S] [--partition MODE]
      one line per output; its time on stderr (wall clock of run: one run,
      or with --repeats N the median of N runs after one warm-up run);
      --out DIR writes DIR/OUTPUT.npy; --max-memory: fail (out of memory)
      rather than hold more than BYTES of weights, outputs and arena;
      --max-time: stop a run past S seconds (checked between nodes
      and, with threads, between blocks of long float GEMMs)
  wasmq run MODEL --stream --chunk N [--state OUT=IN]... --input NAME=LONG.npy ...
      the inputs cut into chunks of N along their last dim, run in turn, each
      --state output fed to its input for the next chunk (starting from zeros,
      or from --input IN=FILE.npy); a line per chunk and output, --out DIR
      writes each output stacked over the chunks ([chunks, ...])`,
  inspect: `  wasmq inspect MODEL [--json] [--shape NAME=1x3x224x224]... [--partition MODE]
      the decision records as JSON (docs/graph-json.md)`,
  check: `  wasmq check CASE_DIR
      run one ONNX backend-test case folder (model.onnx, test_data_set_*)`,
  quantize: `  wasmq quantize MODEL -o OUT.onnx --calib DIR|random:N:LO..HI [--config FILE]
                 [--report FILE.json] [--keep-float N] [--target-snr DB]
                 [--target-cosine C] [--max-time S] [--timeout S]
      float ONNX in, QDQ int8 ONNX out (docs/quantize.md)
  wasmq quantize MODEL -o OUT.onnx --mode dynamic [--per-tensor] [--uint8-weights]
      onnxruntime's dynamic int8 form (no calibration)`,
  render: `  wasmq render MODEL -o graph.svg|report.html|graph.json
                  [--overlay region|time|error] [--node-data FILE.json]
                  [--emit-node-data FILE.json] [--repeats N] [--json]
                  [--shape NAME=1x3x224x224]...
      draw the partition, layouts and qparams (no browser)`,
};

const USAGE = `usage:
${Object.values(HELP).join('\n')}
  run/info/inspect: --partition int|int+fp|fp (default int+fp),
                    --no-lower (= fp), --strict-int8 (= int),
                    --kernels auto|simd128|relaxed (int8 kernels; relaxed
                    fails where the engine cannot run it)
  wasmq --version
  wasmq COMMAND --help   one command's usage`;

const helpAsked = (args) => args.some((a) => a === '--help' || a === '-h');

/**
 * --partition MODE / --no-lower / --strict-int8 / --kernels K at args[i] into load
 * options: the number of arguments taken (0 for any other argument).
 */
function applyLoweringOption(args, i, options) {
  const arg = args[i];
  if (arg === '--no-lower') options.lowering = false;
  else if (arg === '--strict-int8') options.strictInt8 = true;
  else if (arg === '--partition') {
    const mode = args[i + 1];
    if (!['int', 'int+fp', 'fp'].includes(mode)) throw usageError(`--partition expects int, int+fp or fp, got ${mode ?? 'nothing'}`);
    options.partition = mode;
    return 2;
  } else if (arg === '--kernels') {
    const kernels = args[i + 1];
    if (!['auto', 'simd128', 'relaxed'].includes(kernels)) throw usageError(`--kernels expects auto, simd128 or relaxed, got ${kernels ?? 'nothing'}`);
    options.kernels = kernels;
    return 2;
  } else return 0;
  return 1;
}

/** A failure that ends the program with `exitCode` after one stderr line. */
class CliError extends Error {
  /** raw: print the message as it is, without the "wasmq: " prefix (a usage text). */
  constructor(message, exitCode, raw = false) {
    super(message);
    this.exitCode = exitCode;
    this.raw = raw;
  }
}

const usageError = (message) => new CliError(message, 2);

/** An option the command does not take: named, with the command's usage. */
const unknownOption = (command, option) => new CliError(`wasmq: ${command}: unknown or incomplete option ${option}\nusage:\n${HELP[command]}`, 2, true);

/**
 * Fails before any work when a file cannot be written at `file`: its folder
 * is missing or not writable, or `file` is a folder.
 */
async function checkOutput(file) {
  const dir = path.dirname(file);
  const st = await stat(file).catch(() => null);
  if (st?.isDirectory()) throw usageError(`cannot write ${file}: ${STRERROR.EISDIR}`);
  const d = await stat(dir).catch(() => null);
  if (!d?.isDirectory()) throw usageError(`cannot write ${file}: ${STRERROR.ENOENT} (no folder ${dir})`);
  try {
    await access(dir, constants.W_OK);
  } catch (e) {
    throw usageError(`cannot write ${file}: ${strerror(e)} (folder ${dir})`);
  }
}

function describeError(what, e) {
  if (e instanceof WasmqError) return `${what}: ${e.message} [${e.code}]`;
  return `${what}: ${e.message}`;
}

async function readInputFile(file) {
  try {
    const bytes = await readLocalFile(file, maxFileBytesFromEnv());
    return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  } catch (e) {
    throw usageError(`cannot read ${file}: ${e.code === 'ENOENT' ? 'No such file or directory' : e.message}`);
  }
}

async function loadModel(file, options) {
  const bytes = await readInputFile(file);
  step(`loading ${file}`);
  try {
    return await load(bytes, options);
  } catch (e) {
    throw new CliError(describeError(file, e), 1);
  } finally {
    stepEnd();
  }
}

// --- %g formatting, as C's printf("%.6g") --------------------------------

/** Formats a number like C's "%.{precision}g" (round-to-nearest; exact ties aside). */
export function formatG(x, precision = 6) {
  if (Number.isNaN(x)) return 'nan';
  if (x === Infinity) return 'inf';
  if (x === -Infinity) return '-inf';
  if (x === 0) return Object.is(x, -0) ? '-0' : '0';
  const stripZeros = (s) => (s.includes('.') ? s.replace(/0+$/, '').replace(/\.$/, '') : s);
  const [mantissa, expText] = x.toExponential(precision - 1).split('e');
  const exp = Number(expText);
  if (exp < -4 || exp >= precision) {
    const sign = exp < 0 ? '-' : '+';
    return `${stripZeros(mantissa)}e${sign}${String(Math.abs(exp)).padStart(2, '0')}`;
  }
  return stripZeros(x.toFixed(precision - 1 - exp));
}

export function formatResultLine(name, { dtype, dims, data }) {
  const n = data.length;
  const values = [];
  let best = 0;
  const at = (i) => Number(data[i]);
  for (let i = 0; i < n && i < 6; i++) values.push(formatG(at(i)));
  for (let i = 1; i < n; i++) if (at(i) > at(best)) best = i;
  let line = `${name} ${dtype} [${dims.join(',')}] [${values.join(' ')}${n > 6 ? ' ...' : ''}]`;
  if (n > 0) line += ` argmax=${best}`;
  return line;
}

// Tensor file names ('/', '\' and ':' become '_') follow the calibration reader's rule.
export { safeFileName };

// --- argument parsing ------------------------------------------------------

function splitAssignment(option, value, expected) {
  const eq = value === undefined ? -1 : value.indexOf('=');
  if (eq <= 0) throw usageError(`${option} expects ${expected}, got ${value === undefined ? 'nothing' : value}`);
  return [value.slice(0, eq), value.slice(eq + 1)];
}

function parseDimsSpec(text, option, whole) {
  if (text === '') return [];
  const parts = text.split(/[x,]/);
  if (parts.length > 8 || !parts.every((p) => /^\d+$/.test(p))) {
    throw usageError(`${option} expects NAME=D0xD1x..., got ${whole}`);
  }
  return parts.map(Number);
}

function parseRunArgs(args) {
  if (args.length < 1 || args[0].startsWith('--')) throw usageError('run: missing MODEL');
  const parsed = { model: args[0], inputs: new Map(), shapes: new Map(), outDir: null, repeats: 1, loadOptions: {}, stream: false, chunk: 0, states: new Map() };
  for (let i = 1; i < args.length; i++) {
    const option = args[i];
    const value = args[i + 1];
    const taken = applyLoweringOption(args, i, parsed.loadOptions);
    if (taken) {
      i += taken - 1;
      continue;
    }
    if (option === '--input') {
      const [name, spec] = splitAssignment(option, value, 'NAME=FILE.npy or NAME=random:SEED');
      if (spec.startsWith('random:')) {
        const seedText = spec.slice('random:'.length);
        if (!/^\d+$/.test(seedText) || Number(seedText) > 0xffffffff) {
          throw usageError(`--input ${name}: seed must be an integer in 0..4294967295, got '${seedText}'`);
        }
        parsed.inputs.set(name, { seed: Number(seedText) });
      } else if (spec === '') {
        throw usageError(`--input ${name}: missing FILE.npy`);
      } else {
        parsed.inputs.set(name, { file: spec });
      }
      i++;
    } else if (option === '--shape') {
      const [name, dims] = splitAssignment(option, value, 'NAME=D0xD1x...');
      parsed.shapes.set(name, parseDimsSpec(dims, option, value));
      i++;
    } else if (option === '--out') {
      if (value === undefined) throw usageError('--out expects a directory');
      parsed.outDir = value;
      i++;
    } else if (option === '--stream') {
      parsed.stream = true;
    } else if (option === '--chunk') {
      if (!/^\d+$/.test(value ?? '') || Number(value) < 1) throw usageError(`--chunk expects a step count >= 1, got ${value}`);
      parsed.chunk = Number(value);
      i++;
    } else if (option === '--state') {
      const [out, inp] = splitAssignment(option, value, 'OUTPUT=INPUT');
      parsed.states.set(out, inp);
      i++;
    } else if (option === '--threads') {
      if (!/^\d+$/.test(value ?? '') || Number(value) < 1 || Number(value) > 256) {
        throw usageError(`--threads expects an integer in 1..256, got ${value}`);
      }
      parsed.loadOptions.threads = Number(value);
      i++;
    } else if (option === '--repeats') {
      if (!/^\d+$/.test(value ?? '') || Number(value) < 1 || Number(value) > 100000) {
        throw usageError(`--repeats expects an integer in 1..100000, got ${value}`);
      }
      parsed.repeats = Number(value);
      i++;
    } else if (option === '--max-time') {
      const seconds = Number(value);
      if (value === undefined || value.trim() === '' || !(seconds > 0 && seconds <= 1e6)) {
        throw usageError(`--max-time expects seconds in (0, 1e6], got ${value}`);
      }
      parsed.timeoutMs = seconds * 1000;
      i++;
    } else if (option === '--max-memory') {
      if (!/^\d+$/.test(value ?? '') || !Number.isSafeInteger(Number(value)) || Number(value) < 1) {
        throw usageError(`--max-memory expects a byte count >= 1, got ${value}`);
      }
      parsed.loadOptions.maxMemoryBytes = Number(value);
      i++;
    } else {
      throw unknownOption('run', option);
    }
  }
  if ((parsed.chunk || parsed.states.size) && !parsed.stream) throw usageError('--chunk and --state go with --stream');
  if (parsed.stream && !parsed.chunk) throw usageError('--stream needs --chunk N');
  return parsed;
}

// --- commands ----------------------------------------------------------------

/** Seeded random feeds for every input (symbolic dims must be bound at load). */
function randomFeeds(model) {
  const feeds = {};
  for (const info of model.inputs) {
    const symbolic = info.shape?.find((d) => typeof d !== 'number');
    if (symbolic !== undefined || !info.shape) {
      throw usageError(`input ${info.name} has a symbolic dim (${symbolic ?? '?'}): give --shape ${info.name}=...`);
    }
    const dims = info.shape.slice();
    feeds[info.name] = { data: randomArray(info.dtype, numel(dims), 0), dims };
  }
  return feeds;
}

function parseRenderArgs(args) {
  if (args.length < 1 || args[0].startsWith('-')) throw usageError('render: missing MODEL');
  const o = { model: args[0], out: null, overlay: 'region', nodeDataFile: null, emitNodeData: null, repeats: 5, json: false, shapes: {}, loadOptions: {} };
  for (let i = 1; i < args.length; i++) {
    const option = args[i];
    const value = args[i + 1];
    const taken = applyLoweringOption(args, i, o.loadOptions);
    if (taken) {
      i += taken - 1;
      continue;
    }
    if (option === '--json') {
      o.json = true;
      continue;
    }
    if (value === undefined) throw unknownOption('render', option);
    i++;
    if (option === '-o' || option === '--out') o.out = value;
    else if (option === '--overlay') {
      if (!['region', 'time', 'error'].includes(value)) throw usageError(`--overlay expects region, time or error, got ${value}`);
      o.overlay = value;
    } else if (option === '--node-data') o.nodeDataFile = value;
    else if (option === '--emit-node-data') o.emitNodeData = value;
    else if (option === '--repeats') {
      if (!/^\d+$/.test(value) || Number(value) < 1) throw usageError(`--repeats expects an integer >= 1, got ${value}`);
      o.repeats = Number(value);
    } else if (option === '--shape') {
      const [name, dims] = splitAssignment(option, value, 'NAME=D0xD1x...');
      o.shapes[name] = parseDimsSpec(dims, option, value);
    } else throw unknownOption('render', option);
  }
  if (!o.out && !o.json) throw usageError('render: give -o FILE (.svg, .html or .json) or --json');
  if (o.out && !['.svg', '.html', '.htm', '.json'].includes(path.extname(o.out).toLowerCase())) {
    throw usageError(`render: -o must end in .svg, .html or .json, got ${o.out}`);
  }
  return o;
}

/** `wasmq render`: the page's drawing, headless (same data and SVG code). */
async function cmdRender(args) {
  const o = parseRenderArgs(args);
  for (const f of [o.out, o.emitNodeData]) if (f) await checkOutput(f);
  const model = await loadModel(o.model, { inputShapes: o.shapes, ...o.loadOptions });
  try {
    let data = null;
    if (o.nodeDataFile) {
      try {
        data = parseNodeData(await readFile(o.nodeDataFile, 'utf8'));
      } catch (e) {
        throw usageError(`${o.nodeDataFile}: ${e.message}`);
      }
    } else if (o.overlay === 'time') {
      let results;
      try {
        results = await model.run(randomFeeds(model), { profile: true, repeats: o.repeats });
      } catch (e) {
        if (e instanceof CliError) throw e;
        throw new CliError(describeError('run failed', e), 1);
      }
      data = nodeData(new Map(results.profile.map((n) => [n.name, n.ms])), { label: 'ms' });
    } else if (o.overlay === 'error') {
      throw usageError('--overlay error needs --node-data FILE.json (per-node error values, Model Explorer node-data format)');
    }
    const graph = model.graph();
    if (o.emitNodeData) {
      if (!data) throw usageError('--emit-node-data needs --overlay time or --node-data');
      await writeFile(o.emitNodeData, `${JSON.stringify(data, null, 1)}\n`);
    }
    const title = path.basename(o.model);
    if (o.json) process.stdout.write(`${JSON.stringify(graph, null, 1)}\n`);
    if (o.out) {
      const ext = path.extname(o.out).toLowerCase();
      let text;
      if (ext === '.json') text = `${JSON.stringify(graph, null, 1)}\n`;
      else if (ext === '.html' || ext === '.htm') {
        text = renderReport(graph, { overlay: o.overlay, nodeData: data, title: `wasmq: ${title}`, subtitle: `${o.model} · wasmq ${await packageVersion()}` });
      } else if (ext === '.svg') {
        const drawable = toDrawable(graph, { overlay: o.overlay, nodeData: data });
        text = renderSvg(drawable, layoutDrawable(drawable), { title });
      } else throw usageError(`render: -o must end in .svg, .html or .json, got ${o.out}`);
      try {
        await writeFile(o.out, text);
      } catch (e) {
        throw new CliError(`writing ${o.out}: ${e.message}`, 1);
      }
      if (!o.json) console.log(`${o.out}: ${graph.summary}`);
    }
  } finally {
    model.dispose();
  }
}

async function packageVersion() {
  const pkg = JSON.parse(await readFile(new URL('../../package.json', import.meta.url), 'utf8'));
  return pkg.version;
}

async function cmdInfo(args) {
  const options = {};
  let lowered = false;
  const rest = [];
  for (let i = 0; i < args.length; i++) {
    const taken = args[i] === '--lowered' ? ((lowered = true), 1) : applyLoweringOption(args, i, options);
    if (taken) i += taken - 1;
    else if (args[i].startsWith('-')) throw unknownOption('info', args[i]);
    else rest.push(args[i]);
  }
  if (rest.length === 0) throw usageError('info expects exactly one MODEL');
  if (rest.length > 1) throw usageError(`info expects exactly one MODEL, got ${rest[0]} and ${rest[1]}`);
  const model = await loadModel(rest[0], options);
  try {
    process.stdout.write(model.describe());
    if (lowered) process.stdout.write(model.describeLowered());
  } finally {
    model.dispose();
  }
}

async function cmdRun(args) {
  const opts = parseRunArgs(args);
  // The output folder is made before the work, so a bad path fails at once.
  if (opts.outDir) {
    try {
      await mkdir(opts.outDir, { recursive: true });
    } catch (e) {
      throw usageError(`cannot create ${opts.outDir}: ${strerror(e)}`);
    }
  }
  // .npy inputs are read first: their dims also bind symbolic dims at load.
  const arrays = new Map();
  const inputShapes = Object.fromEntries(opts.shapes);
  for (const [name, spec] of opts.inputs) {
    if (!spec.file) continue;
    let array;
    try {
      array = parseNpy(await readInputFile(spec.file));
    } catch (e) {
      if (e instanceof CliError) throw e;
      throw usageError(`${spec.file}: ${e.message} [WQ_ERR_PARSE]`);
    }
    arrays.set(name, array);
    // A streamed input is cut into chunks: its dims are not the model's.
    if (!(name in inputShapes) && !opts.stream) inputShapes[name] = array.dims;
  }
  const names = new Set([...opts.inputs.keys(), ...opts.shapes.keys()]);
  const model = await loadModel(opts.model, { inputShapes, ...opts.loadOptions });
  try {
    const declared = model.inputs.map((t) => t.name);
    for (const name of names) {
      if (!declared.includes(name)) throw usageError(`the model has no input named ${name}`);
    }
    if (opts.stream) {
      return await runStream(model, arrays, opts, {
        formatResultLine,
        usageError,
        runError: (what, e) => new CliError(describeError(`run failed at ${what}`, e), 1),
        outputError: (message) => new CliError(message, 1),
      });
    }
    const feeds = {};
    for (const info of model.inputs) {
      const array = arrays.get(info.name);
      if (array) {
        feeds[info.name] = { data: array.data, dims: array.dims };
        continue;
      }
      const seed = opts.inputs.get(info.name)?.seed ?? 0;
      const symbolic = info.shape?.find((d) => typeof d !== 'number');
      if (symbolic !== undefined) {
        throw usageError(`input ${info.name} has a symbolic dim (${symbolic ?? '?'}): give --shape ${info.name}=...`);
      }
      if (!info.shape) throw usageError(`input ${info.name} has no usable declared shape: give --shape`);
      const dims = info.shape.slice();
      feeds[info.name] = { data: randomArray(info.dtype, numel(dims), seed), dims };
    }
    let results;
    // One run, or a warm-up run and `repeats` timed ones (their median).
    const ms = [];
    step(`running ${opts.model}`);
    try {
      for (let r = opts.repeats > 1 ? -1 : 0; r < opts.repeats; r++) {
        if (opts.repeats > 1) stepUpdate(`running ${opts.model}: ${r < 0 ? 'warm-up, 0' : `run ${r + 1}`} of ${opts.repeats}`);
        const t0 = performance.now();
        results = await model.run(feeds, { timeoutMs: opts.timeoutMs ?? 0 });
        if (r >= 0) ms.push(performance.now() - t0);
      }
    } catch (e) {
      throw new CliError(describeError('run failed', e), 1);
    } finally {
      stepEnd();
    }
    ms.sort((a, b) => a - b);
    const median = ms[(ms.length - 1) >> 1];
    console.error(opts.repeats > 1 ? `run: ${median.toFixed(3)} ms (median of ${opts.repeats} runs after a warm-up run, wall clock)` : `run: ${median.toFixed(3)} ms (one run, wall clock)`);
    for (const info of model.outputs) {
      const result = results[info.name];
      console.log(formatResultLine(info.name, result));
      if (opts.outDir) {
        const file = path.join(opts.outDir, `${safeFileName(info.name)}.npy`);
        try {
          await writeFile(file, encodeNpy(result));
        } catch (e) {
          throw new CliError(`writing output: ${e.message}`, 1);
        }
      }
    }
  } finally {
    model.dispose();
  }
}

async function readNumbered(dir, prefix) {
  const files = [];
  for (let n = 0; ; n++) {
    try {
      files.push(await readFile(path.join(dir, `${prefix}_${n}.pb`)));
    } catch {
      return files;
    }
  }
}

/** Runs every test_data_set_* of one ONNX conformance case; one line each. */
async function cmdCheck(args) {
  if (args[0]?.startsWith('-')) throw unknownOption('check', args[0]);
  if (args.length !== 1) throw usageError('check expects exactly one CASE_DIR');
  const dir = args[0];
  const modelBytes = await readInputFile(path.join(dir, 'model.onnx'));
  let sets;
  try {
    sets = (await readdir(dir)).filter((f) => f.startsWith('test_data_set_')).sort();
  } catch (e) {
    throw usageError(`cannot list ${dir}: ${e.message}`);
  }
  if (sets.length === 0) throw usageError(`no test_data_set_* folder in ${dir}`);
  let failed = false;
  for (const set of sets) {
    const inputs = await readNumbered(path.join(dir, set), 'input');
    const outputs = await readNumbered(path.join(dir, set), 'output');
    const { result, reason } = await checkCase(modelBytes, inputs, outputs);
    console.log(reason ? `${result} ${reason}` : result);
    failed ||= result === 'FAIL';
  }
  if (failed) process.exitCode = 1;
}

// --- quantize ----------------------------------------------------------------

// C's strerror text for the errno names Node reports, so messages match the native CLI.
const STRERROR = {
  ENOENT: 'No such file or directory',
  EACCES: 'Permission denied',
  EPERM: 'Operation not permitted',
  EISDIR: 'Is a directory',
  ENOTDIR: 'Not a directory',
  ENOSPC: 'No space left on device',
  EROFS: 'Read-only file system',
  EEXIST: 'File exists',
};
const strerror = (e) => STRERROR[e.code] ?? e.message;

/**
 * Writes bytes to `file` atomically as the native CLI does
 * (wq_cli_write_file_atomic): a temp file beside it, fsync, rename; on any
 * failure the temp file is removed and `file` is untouched.
 */
export async function writeFileAtomic(file, bytes) {
  const temp = `${file}.tmp-${Math.random().toString(36).slice(2, 8).padEnd(6, '0')}`;
  let handle;
  try {
    handle = await open(temp, 'wx');
    await handle.writeFile(bytes);
    await handle.sync();
    await handle.close();
    handle = null;
    await rename(temp, file);
  } catch (e) {
    if (handle) await handle.close().catch(() => {});
    await unlink(temp).catch(() => {});
    throw new CliError(`${file}: cannot write ${file}: ${strerror(e)} [WQ_ERR_IO]`, 2);
  }
}

// Same text as the native quantize_usage() (src/core/cli/cmd_quantize.c).
const QUANTIZE_USAGE = `usage: wasmq quantize MODEL -o OUT.onnx --calib DIR|random:N:LO..HI
                      [--config FILE.json] [--report FILE.json]
                      [--keep-float N] [--target-snr DB] [--target-cosine C]
                      [--max-time S] [--timeout S] [--shape NAME=1x3x224x224]...
  --calib       ONNX test_data_set_* folders or .npy files named by input;
                random:N:LO..HI: N seeded samples uniform in [LO, HI) (a warning:
                ranges then fit random data, not real inputs)
  --keep-float  keep the N most sensitive nodes in float
  --target-snr  keep nodes in float until the outputs reach DB dB SNR
  --target-cosine  ... until every output's cosine to float reaches C
  --max-time    stop the target search after S seconds
  --timeout     give up after S seconds in all (exit 1, nothing written)
  --shape       bind an input's symbolic dims for calibration (kept in OUT)
       wasmq quantize MODEL -o OUT.onnx --mode dynamic [--per-tensor] [--uint8-weights]
  --mode dynamic  onnxruntime's dynamic form, no calibration: MatMul/Gemm weights
                int8 per column (--per-tensor: one scale; --uint8-weights: uint8
                affine), activations quantized at run time`;

const quantizeUsage = (message) => new CliError(message ? `${message}\n${QUANTIZE_USAGE}` : QUANTIZE_USAGE, 2, !message);

/** As the native parse_args: the last of a repeated option wins; '-o' or '--out'. */
function parseQuantizeArgs(args) {
  if (helpAsked(args)) throw Object.assign(new CliError(QUANTIZE_USAGE, 0, true), { toStdout: true });
  const a = { model: null, out: null, calib: null, config: null, report: null, keepFloat: 0, targetSnr: 0, targetCosine: 0, maxTime: 0, timeout: 0, shapes: {}, dynamic: false, perTensor: false, uint8Weights: false };
  const valued = { '-o': 'out', '--out': 'out', '--calib': 'calib', '--config': 'config', '--report': 'report' };
  for (let i = 0; i < args.length; i++) {
    const arg = args[i];
    const val = i + 1 < args.length ? args[i + 1] : undefined;
    if (valued[arg] && val !== undefined) {
      a[valued[arg]] = val;
      i++;
    } else if (arg === '--mode' && val !== undefined) {
      if (val !== 'dynamic' && val !== 'static') throw new CliError(`--mode takes static or dynamic, got '${val}'`, 2);
      a.dynamic = val === 'dynamic';
      i++;
    } else if (arg === '--per-tensor' || arg === '--uint8-weights') {
      a[arg === '--per-tensor' ? 'perTensor' : 'uint8Weights'] = true;
    } else if (arg === '--keep-float' && val !== undefined) {
      // As strtol: optional blanks and sign, then digits to the end.
      const n = /^\s*[+-]?\d+$/.test(val) ? Number(val) : NaN;
      if (!(n >= 0 && n <= 100000)) throw new CliError(`--keep-float takes a count >= 0, got '${val}'`, 2);
      a.keepFloat = n;
      i++;
    } else if (arg === '--target-snr' && val !== undefined) {
      const db = /^\s*[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(val) ? Number(val) : NaN;
      if (!(db > 0 && db < 200)) throw new CliError(`--target-snr takes dB in (0, 200), got '${val}'`, 2);
      a.targetSnr = db;
      i++;
    } else if (arg === '--target-cosine' && val !== undefined) {
      const c = /^\s*[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(val) ? Number(val) : NaN;
      if (!(c > 0 && c < 1)) throw new CliError(`--target-cosine takes a cosine in (0, 1), got '${val}'`, 2);
      a.targetCosine = c;
      i++;
    } else if (arg === '--max-time' && val !== undefined) {
      const t = /^\s*[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(val) ? Number(val) : NaN;
      if (!(t > 0 && t <= 1e6)) throw new CliError(`--max-time takes seconds in (0, 1e6], got '${val}'`, 2);
      a.maxTime = t;
      i++;
    } else if (arg === '--timeout' && val !== undefined) {
      const t = /^\s*[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(val) ? Number(val) : NaN;
      if (!(t > 0 && t <= 1e6)) throw new CliError(`--timeout takes seconds in (0, 1e6], got '${val}'`, 2);
      a.timeout = t;
      i++;
    } else if (arg === '--shape' && val !== undefined) {
      const [name, dims] = splitAssignment(arg, val, 'NAME=D0xD1x...');
      a.shapes[name] = parseDimsSpec(dims, arg, val);
      i++;
    } else if (arg.startsWith('-') || a.model !== null) {
      throw quantizeUsage(`quantize: unexpected argument '${arg}'`);
    } else {
      a.model = arg;
    }
  }
  if (a.model === null || a.out === null) throw quantizeUsage();
  if ((a.perTensor || a.uint8Weights) && !a.dynamic) throw new CliError('--per-tensor and --uint8-weights go with --mode dynamic', 2);
  if (a.dynamic && (a.calib !== null || a.config !== null || a.report !== null || Object.keys(a.shapes).length || a.keepFloat || a.targetSnr > 0 || a.targetCosine > 0 || a.maxTime > 0)) {
    throw new CliError('--mode dynamic takes no calibration, config, report, shapes or float-keeping options', 2);
  }
  if (a.calib === null && !a.dynamic) {
    throw quantizeUsage("quantize needs --calib: a folder of real samples (DIR), or random:N:LO..HI with the range the model's inputs take");
  }
  return a;
}

/** The native progress line, "calibrating D/T [###   ]" redrawn in place; on a terminal only. */
function showProgress(tty, done, total) {
  if (!tty || total <= 0) return;
  const width = 30;
  const filled = Math.floor((done * width) / total);
  process.stderr.write(`\rcalibrating ${done}/${total} [${'#'.repeat(filled)}${' '.repeat(width - filled)}]${done === total ? '\n' : ''}`);
}

const calibFailure = (spec, e) => new CliError(`${spec}: ${e.message} [${e.code}]`, 2);

/** The config's "images" spec (undefined without one; a config the core rejects fails there). */
function imagesSpec(configText) {
  if (configText === undefined) return undefined;
  try {
    return JSON.parse(configText)?.images;
  } catch {
    return undefined;
  }
}

async function cmdQuantize(args) {
  const started = performance.now();
  const a = parseQuantizeArgs(args);
  // Where the results go is checked before the work.
  await checkOutput(a.out);
  if (a.dynamic) {
    let r;
    try {
      r = await quantizeDynamic(await readInputFile(a.model), { perTensor: a.perTensor, uint8Weights: a.uint8Weights });
    } catch (e) {
      if (!(e instanceof WasmqError)) throw e;
      throw new CliError(describeError(a.model, e), e.code === 'WQ_ERR_INVALID_ARG' ? 2 : 1);
    }
    await writeFileAtomic(a.out, r.onnx);
    process.stdout.write(`wrote ${a.out} (${r.onnx.byteLength} bytes): ${r.summary}\n`);
    return;
  }
  if (a.report !== null) await checkOutput(a.report);
  const bytes = await readInputFile(a.model);
  const config = a.config !== null ? (await readInputFile(a.config)).toString('utf8') : undefined;
  const options = { config, inputShapes: a.shapes };
  if (a.keepFloat || a.targetSnr > 0) Object.assign(options, { keepFloat: a.keepFloat, targetSnrDb: a.targetSnr });
  if (a.targetCosine > 0 || a.maxTime > 0) Object.assign(options, { targetCosine: a.targetCosine, maxTime: a.maxTime });
  // --timeout counts from the start, as the native CLI's.
  if (a.timeout > 0) options.timeoutMs = a.timeout * 1e3;
  // Search steps: one line each, terminal or not (a long search is never silent).
  options.onSearch = (line) => process.stderr.write(`wasmq: ${line}\n`);
  let q;
  step(`loading ${a.model}`);
  try {
    q = await quantizeSince(started, bytes, options);
  } catch (e) {
    stepEnd();
    if (!(e instanceof WasmqError)) throw e;
    // A config error without a node is the config file's; invalid arguments exit 2.
    const what = a.config !== null && e.code === 'WQ_ERR_INVALID_ARG' && !e.node ? a.config : a.model;
    throw new CliError(describeError(what, e), e.code === 'WQ_ERR_INVALID_ARG' ? 2 : 1);
  }
  stepEnd();
  try {
    let calib;
    try {
      calib = await openCalibration(a.calib, q.inputs, { images: imagesSpec(config) });
    } catch (e) {
      if (e instanceof CalibError) throw calibFailure(a.calib, e);
      throw e;
    }
    if (calib.guessed) {
      q.note(`images preprocessed by the default spec (${calib.spec.channels}, pixels / 255, ${calib.spec.resize}): if the model was trained on another range or channel order, set "images" in the config`);
    }
    if (calib.range) {
      const [lo, hi] = calib.range;
      q.note(`calibrated on random data (uniform [${lo}, ${hi})), not on real inputs: the ranges fit that distribution; give --calib DIR with real samples for accuracy`);
    }
    const tty = Boolean(process.stderr.isTTY);
    let done = 0;
    // A terminal has the redrawn bar; elsewhere a line every 2 s from 2 s on.
    if (!tty) step(`calibrating 0/${calib.count}`);
    const samples = calib[Symbol.asyncIterator]();
    for (;;) {
      let next;
      try {
        next = await samples.next();
      } catch (e) {
        if (tty) process.stderr.write('\n');
        if (e instanceof CalibError) throw calibFailure(a.calib, e);
        throw e;
      }
      if (next.done) break;
      try {
        await q.observe(next.value.feeds);
      } catch (e) {
        if (tty) process.stderr.write('\n');
        const sym = e.code !== 'WQ_ERR_TIMEOUT' && q.inputs.find((info) => info.shape && info.shape.some((d) => typeof d !== 'number'));
        const hint = sym ? `\nwasmq: input '${sym.name}' has symbolic dims: if the sample's sizes are not what the model expects, bind them with --shape ${sym.name}=D0xD1x...` : '';
        throw new CliError(describeError(`calibration sample ${next.value.name}`, e) + hint, 1);
      }
      showProgress(tty, ++done, calib.count);
      if (!tty) stepUpdate(`calibrating ${done}/${calib.count}`);
    }
    let result;
    step(`quantizing ${a.model} (ranges, int8 weights, the ONNX file)`);
    try {
      result = await q.finish();
    } catch (e) {
      throw new CliError(describeError(a.model, e), 1);
    } finally {
      stepEnd();
    }
    if (a.report !== null) await writeFileAtomic(a.report, new TextEncoder().encode(result.reportJson));
    await writeFileAtomic(a.out, result.onnx);
    for (const w of result.report.warnings ?? []) process.stderr.write(`wasmq: warning: ${w}\n`);
    console.log(`wrote ${a.out} (${result.onnx.length} bytes): ${result.summary}`);
  } finally {
    stepEnd();
    q.dispose();
  }
}

/** `wasmq inspect MODEL [--json]`: the core's decision records, the same bytes as the native CLI. */
async function cmdInspect(args) {
  if (args.length < 1 || args[0].startsWith('-')) throw usageError('inspect: missing MODEL');
  const options = {};
  const shapes = {};
  for (let i = 1; i < args.length; i++) {
    const taken = applyLoweringOption(args, i, options);
    if (taken) {
      i += taken - 1;
    } else if (args[i] === '--shape') {
      const [name, dims] = splitAssignment('--shape', args[i + 1], 'NAME=D0xD1x...');
      shapes[name] = parseDimsSpec(dims, '--shape', args[i + 1]);
      i++;
    } else if (args[i] !== '--json') {
      throw unknownOption('inspect', args[i]);
    }
  }
  if (Object.keys(shapes).length) options.inputShapes = shapes;
  const model = await loadModel(args[0], options);
  try {
    process.stdout.write(model.graphJson());
  } finally {
    model.dispose();
  }
}

export async function main(argv) {
  const [command, ...args] = argv;
  try {
    if (command === undefined) {
      console.error(USAGE);
      return 2;
    }
    if (command === '--help' || command === '-h' || command === 'help') {
      console.log(USAGE);
      return 0;
    }
    if (command === '--version' || command === '-v') {
      console.log(await packageVersion());
      return 0;
    }
    if (HELP[command] && helpAsked(args) && command !== 'quantize') {
      console.log(`usage:\n${HELP[command]}`);
      return 0;
    }
    if (command === 'info') await cmdInfo(args);
    else if (command === 'render') await cmdRender(args);
    else if (command === 'inspect') await cmdInspect(args);
    else if (command === 'run') await cmdRun(args);
    else if (command === 'check') await cmdCheck(args);
    else if (command === 'quantize') await cmdQuantize(args);
    else throw usageError(`unknown command ${command}`);
    return process.exitCode ?? 0;
  } catch (e) {
    if (e instanceof CliError) {
      if (e.toStdout) {
        console.log(e.message);
        return e.exitCode;
      }
      console.error(e.raw ? e.message : `wasmq: ${e.message}`);
      if (e.exitCode === 2 && /^(unknown command|unknown or incomplete option)/.test(e.message)) {
        console.error(USAGE);
      }
      return e.exitCode;
    }
    // Anything else is a bug or a wasm trap: still one line, no stack trace.
    console.error(`wasmq: internal error: ${e?.message ?? e}`);
    return 1;
  }
}

// Run when executed directly, also through npm's bin symlink (realpath).
async function isEntryPoint() {
  if (!process.argv[1]) return false;
  const { realpath } = await import('node:fs/promises');
  const { pathToFileURL } = await import('node:url');
  try {
    return import.meta.url === pathToFileURL(await realpath(process.argv[1])).href;
  } catch {
    return false;
  }
}

if (await isEntryPoint()) {
  // `wasmq info M | head -1` closes the pipe early: not an error.
  process.stdout.on('error', (e) => {
    if (e.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw e;
  });
  process.exitCode = await main(process.argv.slice(2));
}
