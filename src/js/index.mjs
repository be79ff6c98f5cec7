// wasmq: run ONNX models with the wasm build of the C core.
//
//   import { load } from 'wasmq';
//   const model = await load('model.onnx', { inputShapes: { x: [1, 3, 224, 224] } });
//   const out = await model.run({ x: { data: new Float32Array(...), dims: [1, 3, 224, 224] } });
//   model.dispose();
//
// The core is instantiated once, lazily, on first use. The loader reads the
// .wasm bytes itself (fs in Node, fetch in the browser) and hands them to the
// Emscripten factory, so no environment detection happens inside the glue.
// Layout (same in the repository and in the published package):
//   src/js/index.mjs  ->  ../../wasm_build/out/wasmq.{mjs,wasm}

import { IS_NODE, readLocalFile, cpuCount, workerClass } from '#platform';
import { buildGraphRecords } from './graph/records.mjs';
import { DTYPES, dtypeFromCode, dtypeNameOfCode, arrayMatchesDtype, arrayKind, numel } from './dtypes.mjs';

const DEFAULT_GLUE_URL = new URL('../../wasm_build/out/wasmq.mjs', import.meta.url);
const DEFAULT_WASM_URL = new URL('../../wasm_build/out/wasmq.wasm', import.meta.url);
// The threaded variant (build.sh --threads): wasmq.mjs, wasmq.wasm, wasmq.worker.js.
const DEFAULT_THREADED_DIR = new URL('../../wasm_build/out/mt/', import.meta.url);


/**
 * Error thrown for every failure. `code` is the C status name
 * ("WQ_ERR_SHAPE"...; "WQ_ERR_DISPOSED" for use after dispose), `node` the
 * node at fault ("" if none), `reason` the message without the node suffix.
 */
export class WasmqError extends Error {
  constructor(reason, { code = 'WQ_ERR_INVALID_ARG', node = '' } = {}) {
    super(node ? `${reason} (node '${node}')` : reason);
    this.name = 'WasmqError';
    this.code = code;
    this.node = node;
    this.reason = reason;
  }
}

// --- core instantiation ----------------------------------------------------

let corePromise = null;
let threadedCorePromise = null;
let coreOptions = {};

/**
 * Optional: where to find the build (defaults next to the package) or the
 * .wasm bytes themselves, the threaded build's folder, and the thread count
 * load() uses when its options give none (default 1). Must be called before
 * the first load().
 */
export function configure({ glueUrl, wasmUrl, wasmBinary, threadedDir, threads } = {}) {
  if (corePromise || threadedCorePromise) throw new WasmqError('configure() must be called before the core is instantiated');
  if (threads !== undefined && !(Number.isInteger(threads) && threads >= 1)) {
    throw new WasmqError(`configure: threads must be an integer >= 1 (got ${threads})`);
  }
  coreOptions = { glueUrl, wasmUrl, wasmBinary, threadedDir, threads };
}

/**
 * Whether the threaded build can run here: shared wasm memory needs
 * SharedArrayBuffer, which Node always has and a browser only gives an
 * isolated page (crossOriginIsolated: COOP/COEP headers).
 */
export function threadsSupported() {
  if (typeof SharedArrayBuffer === 'undefined' || typeof Atomics === 'undefined') return false;
  return IS_NODE || globalThis.crossOriginIsolated === true;
}

async function instantiateThreadedCore(poolSize) {
  const dir = new URL(coreOptions.threadedDir ?? DEFAULT_THREADED_DIR, import.meta.url);
  const glueUrl = new URL('wasmq.mjs', dir);
  const wasmUrl = new URL('wasmq.wasm', dir);
  let createCore;
  let wasmBinary;
  try {
    ({ default: createCore } = await import(glueUrl.href));
    wasmBinary = await readUrlBytes(wasmUrl);
  } catch (e) {
    throw new WasmqError(`cannot load the threaded wasm core from ${wasmUrl.href} (bash wasm_build/build.sh --threads): ${e.message}`, {
      code: 'WQ_ERR_IO',
    });
  }
  // The pool's workers are all created while the core starts: a Node
  // stand-in for Worker is visible only until then.
  const shim = typeof globalThis.Worker === 'undefined' ? workerClass() : null;
  if (shim) globalThis.Worker = shim;
  try {
    return await createCore({
      wasmBinary,
      mainScriptUrlOrBlob: glueUrl.href, // what each worker imports
      wqPoolSize: poolSize,
      print: (text) => console.log(text),
      // The main thread waits for the pool's chunks of a loop (briefly; the
      // workers never need it meanwhile): the glue's warning about that is noise.
      printErr: (text) => {
        if (!text.startsWith('Blocking on the main thread')) console.error(text);
      },
    });
  } finally {
    if (shim) {
      delete globalThis.Worker;
      // Started (they kept the process alive while loading), idle pool
      // threads must not keep it alive any longer.
      for (const w of shim.created) w.unref();
    }
  }
}

/** Workers the threaded core starts with: one per other core, or as many as first asked for. */
async function threadedPoolSize(requested) {
  return Math.max(1, requested - 1, cpuCount() - 1);
}

/** The threaded core (internal; shared by every model loaded with threads > 1). */
async function getThreadedCore(requested) {
  if (!threadedCorePromise) {
    threadedCorePromise = threadedPoolSize(requested).then(instantiateThreadedCore);
    threadedCorePromise.catch(() => {
      threadedCorePromise = null;
    });
  }
  return threadedCorePromise;
}

async function readUrlBytes(url) {
  if (IS_NODE && url.protocol === 'file:') return readLocalFile(url);
  const response = await fetch(url);
  if (!response.ok) throw new Error(`HTTP ${response.status} ${response.statusText}`);
  return new Uint8Array(await response.arrayBuffer());
}

async function instantiateCore() {
  const glueUrl = new URL(coreOptions.glueUrl ?? DEFAULT_GLUE_URL, import.meta.url);
  const wasmUrl = new URL(coreOptions.wasmUrl ?? DEFAULT_WASM_URL, import.meta.url);
  let createCore;
  let wasmBinary;
  try {
    ({ default: createCore } = await import(glueUrl.href));
    wasmBinary = coreOptions.wasmBinary ?? (await readUrlBytes(wasmUrl));
  } catch (e) {
    throw new WasmqError(
      `cannot load the wasm core from ${wasmUrl.href}: ${e.message}. If your bundler or server moved the file, ` +
        "call configure({ wasmUrl: '<where wasmq.wasm is served>' }) (or configure({ wasmBinary })) before load(); " +
        'in a source checkout, build it with `npm run build:wasm`',
      { code: 'WQ_ERR_IO' },
    );
  }
  return createCore({
    wasmBinary,
    // Route the runtime's own diagnostics somewhere visible but quiet.
    print: (text) => console.log(text),
    printErr: (text) => console.error(text),
  });
}

/** The instantiated Emscripten module (internal; shared by every model). */
export function getCore() {
  if (!corePromise) {
    corePromise = instantiateCore();
    corePromise.catch(() => {
      corePromise = null; // allow a retry after e.g. building the wasm
    });
  }
  return corePromise;
}

/**
 * Drops the shared core so the next call instantiates a fresh one. Used after
 * a wasm trap, which can leave the C heap inconsistent. Models created from
 * the old core keep working with it until disposed.
 */
export function resetCore() {
  corePromise = null;
  threadedCorePromise = null;
}

// --- wasm memory helpers ---------------------------------------------------

// Memory can grow on any allocation, which replaces the buffer: always take
// fresh views through these helpers right before use.
function heapU8(core) {
  return core.HEAPU8;
}

function allocBytes(core, bytes) {
  const ptr = core._wqx_malloc(bytes.byteLength);
  if (!ptr) throw new WasmqError(`out of wasm memory allocating ${bytes.byteLength} bytes`, { code: 'WQ_ERR_OUT_OF_MEMORY' });
  heapU8(core).set(bytes, ptr);
  return ptr;
}

function allocInt32(core, values) {
  const arr = Int32Array.from(values);
  return allocBytes(core, new Uint8Array(arr.buffer));
}

function allocString(core, s) {
  const n = core.lengthBytesUTF8(s) + 1;
  const ptr = core._wqx_malloc(n);
  if (!ptr) throw new WasmqError('out of wasm memory', { code: 'WQ_ERR_OUT_OF_MEMORY' });
  core.stringToUTF8(s, ptr, n);
  return ptr;
}

function readString(core, ptr) {
  return ptr ? core.UTF8ToString(ptr) : '';
}

function errorFromCtx(core, ctx) {
  const code = readString(core, core._wqx_error_name(ctx));
  const node = readString(core, core._wqx_error_node(ctx));
  const message = readString(core, core._wqx_error_message(ctx)) || code;
  return new WasmqError(message, { code, node });
}

function asBytes(source) {
  if (source instanceof Uint8Array) return source;
  if (source instanceof ArrayBuffer) return new Uint8Array(source);
  if (typeof SharedArrayBuffer !== 'undefined' && source instanceof SharedArrayBuffer) return new Uint8Array(source);
  if (ArrayBuffer.isView(source)) return new Uint8Array(source.buffer, source.byteOffset, source.byteLength);
  return null;
}

async function readModelSource(source) {
  const bytes = asBytes(source);
  if (bytes) return bytes;
  if (typeof Blob !== 'undefined' && source instanceof Blob) return new Uint8Array(await source.arrayBuffer());
  let url = null;
  if (source instanceof URL) url = source;
  else if (typeof source === 'string') {
    if (/^(https?|file|blob|data):/i.test(source)) url = new URL(source);
    else if (IS_NODE) {
      try {
        return await readLocalFile(source);
      } catch (e) {
        throw new WasmqError(`cannot read model '${source}': ${e.code === 'ENOENT' ? 'no such file' : e.message}`, { code: 'WQ_ERR_IO' });
      }
    } else url = new URL(source, globalThis.location?.href);
  } else {
    throw new WasmqError(`load: expected bytes, a path or a URL, got ${arrayKind(source)}`, { code: 'WQ_ERR_INVALID_ARG' });
  }
  try {
    return await readUrlBytes(url);
  } catch (e) {
    throw new WasmqError(`cannot read model ${url.href}: ${e.message}`, { code: 'WQ_ERR_IO' });
  }
}

function validateDims(dims, what) {
  if (!Array.isArray(dims) || dims.length > 8 || !dims.every((d) => Number.isSafeInteger(d) && d >= 0 && d <= 0x7fffffff)) {
    throw new WasmqError(`${what}: dims must be an array of at most 8 non-negative integers, got ${JSON.stringify(dims)}`, {
      code: 'WQ_ERR_INVALID_ARG',
    });
  }
}

// --- model -----------------------------------------------------------------

function readTensorInfo(core, model, kind, i) {
  const name = readString(core, core[`_wqx_${kind}_name`](model, i));
  const code = core[`_wqx_${kind}_dtype`](model, i);
  const rank = core[`_wqx_${kind}_rank`](model, i);
  let shape = null; // unknown rank
  if (rank >= 0) {
    shape = [];
    for (let d = 0; d < rank; d++) {
      const dim = core[`_wqx_${kind}_dim`](model, i, d);
      if (dim >= 0) shape.push(dim);
      else {
        const param = readString(core, core[`_wqx_${kind}_dim_param`](model, i, d));
        shape.push(param || null);
      }
    }
  }
  return Object.freeze({ name, dtype: dtypeNameOfCode(code), shape: shape && Object.freeze(shape) });
}

// Per-input int32 dims slots in the staging block (WQ_MAX_RANK).
const MAX_RANK = 8;

// Large inputs are staged half a page away from page boundaries. Big
// ArrayBuffers usually start at (or 16 bytes past) a page boundary; when the
// copy's destination sits a few bytes past its source modulo 4096, every
// load waits on a store it only seems to alias ("4K aliasing"): copying
// 256 KB took 95 us instead of 12 with the wasm heap placing the buffer at
// page + 32.
const PAGE = 4096;
const STAGING_PAGE_OFFSET = 2048 + 64;

/** Start of the staged bytes in a block from wqx_malloc (PAGE extra bytes when bytes >= PAGE). */
function stagingStart(ptr, bytes) {
  if (bytes < PAGE) return ptr;
  return ptr + ((STAGING_PAGE_OFFSET - (ptr % PAGE) + PAGE) % PAGE);
}

class Model {
  #core;
  #ctx;
  #handle;
  #inputNames; // Set of input names
  #feedInfo; // per input: {info, dtype (undefined if not feedable), staticDims (null if symbolic), count}
  // Wasm memory the inputs are staged in, kept across runs (the core reads
  // inputs during a run and keeps nothing): per input a data buffer and its
  // capacity, and one block of MAX_RANK int32 dims per input.
  #stagingPtrs = [];
  #stagingBytes = [];
  #dimsPtr = 0;

  constructor(core, ctx, handle, info) {
    this.#core = core;
    this.#ctx = ctx;
    this.#handle = handle;
    /** Which build runs the model and on how many threads: {build, threads, requestedThreads, fallback?}. */
    this.info = Object.freeze(info);
    const count = (kind) => core[`_wqx_${kind}_count`](handle);
    this.inputs = Object.freeze(Array.from({ length: count('input') }, (_, i) => readTensorInfo(core, handle, 'input', i)));
    this.outputs = Object.freeze(Array.from({ length: count('output') }, (_, i) => readTensorInfo(core, handle, 'output', i)));
    this.#inputNames = new Set(this.inputs.map((t) => t.name));
    this.#feedInfo = this.inputs.map((info) => {
      const staticDims = info.shape && info.shape.every((d) => typeof d === 'number') ? Object.freeze(info.shape.slice()) : null;
      return { info, dtype: DTYPES[info.dtype], staticDims, count: staticDims ? numel(staticDims) : -1 };
    });
  }

  #live() {
    if (!this.#handle) throw new WasmqError('model was disposed', { code: 'WQ_ERR_DISPOSED' });
  }

  /** Checks feeds against the declared inputs; returns [{info, dtype, dims, data}] in input order. */
  #validateFeeds(feeds) {
    if (feeds === null || typeof feeds !== 'object') {
      throw new WasmqError(`run: feeds must be an object {inputName: {data, dims}}, got ${arrayKind(feeds)}`);
    }
    for (const key of Object.keys(feeds)) {
      if (!this.#inputNames.has(key)) {
        throw new WasmqError(`run: unknown input '${key}' (model inputs: ${[...this.#inputNames].join(', ')})`);
      }
    }
    const bound = new Map(); // symbolic dim name -> value, consistent across inputs
    return this.#feedInfo.map(({ info, dtype, staticDims, count: staticCount }) => {
      let feed = feeds[info.name];
      if (feed === undefined) throw new WasmqError(`run: missing input '${info.name}'`);
      if (ArrayBuffer.isView(feed)) feed = { data: feed }; // bare TypedArray: dims from the declaration
      if (!dtype) {
        throw new WasmqError(`run: input '${info.name}' has dtype ${info.dtype}, which the runtime cannot feed`, { code: 'WQ_ERR_UNSUPPORTED' });
      }
      const { data } = feed;
      if (!arrayMatchesDtype(data, dtype)) {
        throw new WasmqError(`run: input '${info.name}' is ${info.dtype} and needs a ${dtype.array.name}, got ${arrayKind(data)}`, {
          code: 'WQ_ERR_SHAPE',
        });
      }
      let dims = feed.dims;
      let count = staticCount;
      if (dims === undefined) {
        if (!staticDims) {
          throw new WasmqError(`run: input '${info.name}' has shape ${formatShape(info.shape)}; pass dims`);
        }
        dims = staticDims; // the declared shape is valid as it stands
      } else if (!(staticDims && sameDims(dims, staticDims))) {
        count = checkDims(info, dims, bound);
      }
      if (data.length !== count) {
        throw new WasmqError(`run: input '${info.name}' dims [${dims.join(',')}] need ${count} elements, data has ${data.length}`, {
          code: 'WQ_ERR_SHAPE',
        });
      }
      return { info, dtype, dims, data };
    });
  }

  /** Where input i is staged: at least `bytes` long (grown as needed). */
  #stagingFor(i, bytes) {
    if (this.#stagingPtrs[i] && this.#stagingBytes[i] >= bytes) return stagingStart(this.#stagingPtrs[i], this.#stagingBytes[i]);
    const core = this.#core;
    if (this.#stagingPtrs[i]) core._wqx_free(this.#stagingPtrs[i]);
    this.#stagingPtrs[i] = 0;
    this.#stagingBytes[i] = 0;
    const ptr = core._wqx_malloc(bytes >= PAGE ? bytes + PAGE : bytes);
    if (!ptr) throw new WasmqError(`out of wasm memory allocating ${bytes} bytes`, { code: 'WQ_ERR_OUT_OF_MEMORY' });
    this.#stagingPtrs[i] = ptr;
    this.#stagingBytes[i] = bytes;
    return stagingStart(ptr, bytes);
  }

  /**
   * Runs the model. feeds: {name: {data: TypedArray, dims: number[]}} (dims
   * may be omitted for inputs with a fully static shape). Resolves to
   * {name: {data, dims, dtype}} with data copied out of wasm memory.
   */
  async run(feeds, options = {}) {
    if (options.profile) return this.#runProfiled(feeds, options.repeats ?? 1);
    this.#live();
    const staged = this.#validateFeeds(feeds);
    const core = this.#core;
    if (!this.#dimsPtr && staged.length > 0) {
      this.#dimsPtr = core._wqx_malloc(staged.length * MAX_RANK * 4);
      if (!this.#dimsPtr) throw new WasmqError('out of wasm memory', { code: 'WQ_ERR_OUT_OF_MEMORY' });
    }
    for (let i = 0; i < staged.length; i++) {
      const s = staged[i];
      const bytes = s.data.byteLength;
      const dataPtr = this.#stagingFor(i, bytes);
      const dimsPtr = this.#dimsPtr + i * MAX_RANK * 4;
      // Views taken after the allocation: growing memory replaces the buffer.
      core.HEAPU8.set(new Uint8Array(s.data.buffer, s.data.byteOffset, bytes), dataPtr);
      core.HEAP32.set(s.dims, dimsPtr >> 2);
      if (core._wqx_set_input(this.#ctx, this.#handle, i, s.dtype.code, s.dims.length, dimsPtr, dataPtr) !== 0) {
        throw errorFromCtx(core, this.#ctx);
      }
    }
    if (core._wqx_run(this.#ctx, this.#handle) !== 0) throw errorFromCtx(core, this.#ctx);
    const results = {};
    for (let i = 0; i < this.outputs.length; i++) results[this.outputs[i].name] = this.#copyResult(i);
    return results;
  }

  // Per-node times of `repeats` runs (median per node); the results of the
  // last run carry them as a non-enumerable `profile` property.
  async #runProfiled(feeds, repeats) {
    if (!Number.isInteger(repeats) || repeats < 1) throw new WasmqError(`run: repeats must be an integer >= 1 (got ${repeats})`);
    const samples = [];
    let results;
    try {
      for (let r = 0; r < repeats; r++) {
        this.profile(true);
        results = await this.run(feeds);
        samples.push(this.nodeTimes());
      }
    } finally {
      if (!this.disposed) this.profile(false);
    }
    const median = (xs) => {
      const s = xs.slice().sort((a, b) => a - b);
      return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
    };
    const profile = samples[0].map((n, i) => ({
      op: n.op,
      name: n.name,
      ms: median(samples.map((s) => s[i].ms)),
      kernelMs: median(samples.map((s) => s[i].kernelMs)),
    }));
    Object.defineProperty(results, 'profile', { value: profile, enumerable: false });
    return results;
  }

  /**
   * The decision records (docs/graph-json.md): per node the backend, int8
   * region, reason code and kernel; per tensor dtype, dims, layout, full
   * qparams and lifetime; regions, layout transitions, the summary line.
   */
  graph() {
    this.#live();
    const core = this.#core;
    const ptr = core._wqx_graph_json(this.#handle);
    if (!ptr) throw new WasmqError('graph failed', { code: 'WQ_ERR_OUT_OF_MEMORY' });
    let raw;
    try {
      raw = JSON.parse(core.UTF8ToString(ptr));
    } finally {
      core._wqx_free(ptr);
    }
    return buildGraphRecords(raw, { lowered: this.info.lowering !== false, memory: this.memory });
  }

  #copyResult(i) {
    const core = this.#core;
    const h = this.#handle;
    const code = core._wqx_result_dtype(h, i);
    const dtype = dtypeFromCode(code);
    const rank = core._wqx_result_rank(h, i);
    const name = this.outputs[i].name;
    if (!dtype || rank < 0) {
      throw new WasmqError(`run: output '${name}' came back as ${dtypeNameOfCode(code)} rank ${rank}`, { code: 'WQ_ERR_UNSUPPORTED' });
    }
    const dims = new Array(rank);
    for (let d = 0; d < rank; d++) dims[d] = core._wqx_result_dim(h, i, d);
    const count = numel(dims);
    const ptr = core._wqx_result_data(h, i);
    if (!ptr && count > 0) throw new WasmqError(`run: output '${name}' has no data`, { code: 'WQ_ERR_INVALID_MODEL' });
    const copy = heapU8(core).slice(ptr, ptr + count * dtype.size);
    return { data: new dtype.array(copy.buffer, 0, count), dims, dtype: dtype.name };
  }

  /** The core's human-readable summary (inputs, outputs, opsets, ops, parameters). */
  describe() {
    this.#live();
    const core = this.#core;
    const ptr = core._wqx_describe(this.#handle);
    if (!ptr) throw new WasmqError('describe failed', { code: 'WQ_ERR_OUT_OF_MEMORY' });
    try {
      return core.UTF8ToString(ptr);
    } finally {
      core._wqx_free(ptr);
    }
  }

  /**
   * The lowered graph, one entry per node: the int8 op it runs (with the
   * quantization parameters of its tensors) or why it stayed float.
   */
  describeLowered() {
    this.#live();
    const core = this.#core;
    const ptr = core._wqx_describe_lowered(this.#handle);
    if (!ptr) throw new WasmqError('describeLowered failed', { code: 'WQ_ERR_OUT_OF_MEMORY' });
    try {
      return core.UTF8ToString(ptr);
    } finally {
      core._wqx_free(ptr);
    }
  }

  /**
   * Arena memory for intermediate tensors, as planned for the latest run (or
   * at load when every shape is static): {planned, arenaBytes,
   * lowerBoundBytes, unsharedBytes, tensors}. Before the first run of a model
   * with symbolic shapes, planned is false and the byte counts are 0.
   */
  get memory() {
    this.#live();
    const core = this.#core;
    const h = this.#handle;
    return Object.freeze({
      planned: core._wqx_arena_planned(h) !== 0,
      arenaBytes: core._wqx_arena_bytes(h),
      lowerBoundBytes: core._wqx_arena_lower_bound(h),
      unsharedBytes: core._wqx_arena_unshared_bytes(h),
      tensors: core._wqx_arena_tensor_count(h),
    });
  }

  /**
   * Per-node timing of the runs that follow: profile(true) starts (clearing
   * the counts), profile(false) stops.
   */
  profile(on) {
    this.#live();
    if (this.#core._wqx_profile(this.#ctx, this.#handle, on ? 1 : 0) !== 0) throw errorFromCtx(this.#core, this.#ctx);
  }

  /**
   * Milliseconds per node of the executed (lowered) graph, summed over the
   * runs since profile(true): [{op, name, ms, kernelMs}]. ms - kernelMs is
   * the executor's fixed cost for the node (inputs, shapes, placement).
   */
  nodeTimes() {
    this.#live();
    const core = this.#core;
    const h = this.#handle;
    const times = [];
    for (let i = 0, n = core._wqx_node_count(h); i < n; i++) {
      times.push({
        op: readString(core, core._wqx_node_op(h, i)),
        name: readString(core, core._wqx_node_name(h, i)),
        ms: core._wqx_node_ms(h, i, 0),
        kernelMs: core._wqx_node_ms(h, i, 1),
      });
    }
    return times;
  }

  /** Frees the model's wasm memory; any later use throws WQ_ERR_DISPOSED. Idempotent. */
  dispose() {
    if (!this.#handle) return;
    for (const p of this.#stagingPtrs) if (p) this.#core._wqx_free(p);
    if (this.#dimsPtr) this.#core._wqx_free(this.#dimsPtr);
    this.#stagingPtrs = [];
    this.#stagingBytes = [];
    this.#dimsPtr = 0;
    this.#core._wqx_model_free(this.#handle);
    this.#core._wqx_ctx_free(this.#ctx);
    this.#handle = 0;
    this.#ctx = 0;
  }

  get disposed() {
    return !this.#handle;
  }
}

function sameDims(dims, want) {
  if (!Array.isArray(dims) || dims.length !== want.length) return false;
  for (let d = 0; d < want.length; d++) if (dims[d] !== want[d]) return false;
  return true;
}

/**
 * Validates dims given for an input against its declaration (binding
 * symbolic dims consistently through `bound`); returns the element count.
 */
function checkDims(info, dims, bound) {
  validateDims(dims, `run: input '${info.name}'`);
  if (info.shape) {
    const mismatch = () =>
      new WasmqError(`run: input '${info.name}' has dims [${dims.join(',')}], model expects ${formatShape(info.shape)}`, {
        code: 'WQ_ERR_SHAPE',
      });
    if (dims.length !== info.shape.length) throw mismatch();
    info.shape.forEach((want, d) => {
      if (typeof want === 'number' && want !== dims[d]) throw mismatch();
      if (typeof want === 'string') {
        if (bound.has(want) && bound.get(want) !== dims[d]) {
          throw new WasmqError(
            `run: input '${info.name}' dim ${d} ('${want}') is ${dims[d]} but another input bound '${want}' to ${bound.get(want)}`,
            { code: 'WQ_ERR_SHAPE' },
          );
        }
        bound.set(want, dims[d]);
      }
    });
  }
  return numel(dims);
}

function formatShape(shape) {
  if (!shape) return 'of unknown rank';
  return `[${shape.map((d) => (d === null ? '?' : d)).join(',')}]`;
}

// wqx_load flags (src/core/api/wasm_exports.h).
const LOAD_NO_LOWERING = 1;
const LOAD_STRICT_INT8 = 2;

/**
 * Loads an ONNX model from bytes (Uint8Array/ArrayBuffer), a file path (Node)
 * or a URL (fetch). options.inputShapes binds input dims at load:
 * {inputName: [1, 3, 224, 224]}. options.lowering (default true) lowers QDQ
 * and QLinear graphs onto int8 ops; false runs them op by op with float
 * Q/DQ. options.strictInt8 makes a quantized node that cannot run in int8 a
 * load error naming it.
 */
export async function load(source, options = {}) {
  const inputShapes = options.inputShapes ?? {};
  const flags = (options.lowering === false ? LOAD_NO_LOWERING : 0) |
    (options.strictInt8 ? LOAD_STRICT_INT8 : 0);
  if (inputShapes === null || typeof inputShapes !== 'object') {
    throw new WasmqError('load: inputShapes must be an object {inputName: dims}');
  }
  const shapeEntries = Object.entries(inputShapes);
  for (const [name, dims] of shapeEntries) validateDims(dims, `load: inputShapes['${name}']`);
  const requestedThreads = options.threads ?? coreOptions.threads ?? 1;
  if (!Number.isInteger(requestedThreads) || requestedThreads < 1) {
    throw new WasmqError(`load: threads must be an integer >= 1 (got ${requestedThreads})`);
  }
  const bytes = await readModelSource(source);
  // The threaded build where shared memory works; else the single-threaded
  // one, saying why.
  let core;
  let fallback;
  if (requestedThreads > 1 && threadsSupported()) {
    try {
      core = await getThreadedCore(requestedThreads);
    } catch (e) {
      fallback = e.message;
    }
  } else if (requestedThreads > 1) {
    fallback = 'no SharedArrayBuffer here (a browser page must be crossOriginIsolated: COOP/COEP headers)';
  }
  const threaded = Boolean(core);
  core ??= await getCore();

  const ctx = core._wqx_ctx_new();
  if (!ctx) throw new WasmqError('out of wasm memory', { code: 'WQ_ERR_OUT_OF_MEMORY' });
  const allocations = [];
  let handle = 0;
  try {
    const bytesPtr = allocBytes(core, bytes);
    allocations.push(bytesPtr);
    const namePtrs = shapeEntries.map(([name]) => {
      const p = allocString(core, name);
      allocations.push(p);
      return p;
    });
    const namesPtr = allocInt32(core, namePtrs);
    allocations.push(namesPtr);
    const ranksPtr = allocInt32(core, shapeEntries.map(([, dims]) => dims.length));
    allocations.push(ranksPtr);
    const dimsPtr = allocInt32(core, shapeEntries.flatMap(([, dims]) => dims));
    allocations.push(dimsPtr);
    handle = core._wqx_load(ctx, bytesPtr, bytes.byteLength, shapeEntries.length, namesPtr, ranksPtr, dimsPtr, flags);
    if (!handle) throw errorFromCtx(core, ctx);
    if (threaded && core._wqx_set_threads(ctx, handle, requestedThreads) !== 0) throw errorFromCtx(core, ctx);
    const info = {
      build: threaded ? 'simd-threads' : 'simd',
      threads: threaded ? core._wqx_threads(handle) : 1,
      requestedThreads,
      lowering: options.lowering !== false,
    };
    if (fallback) info.fallback = fallback;
    return new Model(core, ctx, handle, info);
  } catch (e) {
    if (handle) core._wqx_model_free(handle);
    core._wqx_ctx_free(ctx);
    throw e;
  } finally {
    for (const p of allocations) core._wqx_free(p);
  }
}

const CASE_RESULTS = ['PASS', 'FAIL', 'SKIP'];

/**
 * Runs one ONNX conformance data set in the core (wq_case_check): model
 * bytes plus serialized TensorProto inputs and expected outputs. Returns
 * {result: 'PASS'|'FAIL'|'SKIP', reason}. Used by the conformance runner.
 */
export async function checkCase(modelBytes, inputs, outputs) {
  const core = await getCore();
  const ctx = core._wqx_ctx_new();
  if (!ctx) throw new WasmqError('out of wasm memory', { code: 'WQ_ERR_OUT_OF_MEMORY' });
  const allocations = [];
  try {
    const put = (b) => {
      const p = allocBytes(core, asBytes(b));
      allocations.push(p);
      return p;
    };
    const putInt32 = (values) => {
      const p = allocInt32(core, values);
      allocations.push(p);
      return p;
    };
    const modelPtr = put(modelBytes);
    const inPtrs = putInt32(inputs.map(put));
    const inLens = putInt32(inputs.map((b) => b.byteLength));
    const outPtrs = putInt32(outputs.map(put));
    const outLens = putInt32(outputs.map((b) => b.byteLength));
    const r = core._wqx_case_check(ctx, modelPtr, modelBytes.byteLength, inPtrs, inLens, inputs.length, outPtrs, outLens, outputs.length);
    return { result: CASE_RESULTS[r] ?? 'FAIL', reason: readString(core, core._wqx_case_report(ctx)) };
  } finally {
    for (const p of allocations) core._wqx_free(p);
    core._wqx_ctx_free(ctx);
  }
}

export { DTYPES };

export default { load, WasmqError, configure, checkCase, threadsSupported };
