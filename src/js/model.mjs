// The loaded model: feeds staged into wasm memory, runs, results copied out,
// per-node timing, the decision records and memory figures.

import { WasmqError, callerError, readOptions, wasmqErrors } from './errors.mjs';
import { dtypeFromCode, dtypeNameOfCode, numel, typedArrayByteLength } from './dtypes.mjs';
import { heapU8, heap32, readString, errorFromCtx, readTensorInfo } from './bridge.mjs';
import { feedInfoOf, validateFeeds } from './feeds.mjs';
import { guardCore, coreRetiredReason } from './core.mjs';
import { ModelStream } from './stream.mjs';

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

export class Model {
  #core;
  #ctx;
  #handle;
  #feedInfo; // feedInfoOf(this.inputs)
  // Wasm memory the inputs are staged in, kept across runs (the core reads
  // inputs during a run and keeps nothing): per input a data buffer and its
  // capacity, and one block of MAX_RANK int32 dims per input.
  #stagingPtrs = [];
  #stagingBytes = [];
  #dimsPtr = 0;
  #timeoutMs = 0; // the core's time limit for this model's runs (0: none)
  #streams = new Set(); // open streams: their state buffers go with the model

  constructor(core, ctx, handle, info) {
    this.#core = core;
    this.#ctx = ctx;
    this.#handle = handle;
    /** Which build runs the model, with which int8 kernels and on how many threads: {build, kernels, relaxedRefused?, threads, requestedThreads, fallback?}. */
    this.info = Object.freeze(info);
    const count = (kind) => core[`_wqx_${kind}_count`](handle);
    this.inputs = Object.freeze(Array.from({ length: count('input') }, (_, i) => readTensorInfo(core, handle, 'input', i)));
    this.outputs = Object.freeze(Array.from({ length: count('output') }, (_, i) => readTensorInfo(core, handle, 'output', i)));
    this.#feedInfo = feedInfoOf(this.inputs);
  }

  #live() {
    if (!this.#handle) throw new WasmqError('model was disposed', { code: 'WQ_ERR_DISPOSED' });
    const trapped = coreRetiredReason(this.#core);
    if (trapped) {
      throw new WasmqError(`model is unusable: its wasm core trapped (${trapped}) and was discarded; load the model again`, {
        code: 'WQ_ERR_DISPOSED',
      });
    }
  }

  /** Calls into the core; a trap retires the core and throws WQ_ERR_INTERNAL. */
  #call(what, fn) {
    return guardCore(this.#core, what, fn);
  }

  /** Checks feeds against the declared inputs; returns [{info, dtype, dims, data}] in input order. */
  #validateFeeds(feeds) {
    return validateFeeds(this.#feedInfo, feeds, 'run');
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
   * options.timeoutMs (0: none) stops a run that passes it between two
   * nodes with WQ_ERR_TIMEOUT; the model stays usable.
   */
  run(feeds, options = {}) {
    // The plain run is synchronous inside: one promise for the caller, none
    // awaited here (a model that runs in microseconds pays for each).
    let opts;
    try {
      opts = readOptions(options, 'run');
      const timeoutMs = opts.timeoutMs ?? 0;
      if (!(typeof timeoutMs === 'number' && timeoutMs >= 0 && timeoutMs <= 2 ** 31)) {
        throw new WasmqError(`run: timeoutMs must be a number of milliseconds >= 0 (got ${String(timeoutMs)})`);
      }
      if (!opts.capture && !opts.profile) {
        this.#live();
        const staged = this.#validateFeeds(feeds);
        this.#live(); // the feeds' getters may have disposed the model
        return Promise.resolve(this.#call('run', () => this.#runStaged(staged, timeoutMs)));
      }
    } catch (e) {
      return Promise.reject(callerError('run', e));
    }
    return wasmqErrors('run', () =>
      opts.capture ? this.#runCaptured(feeds, opts) : this.#runProfiled(feeds, opts.repeats ?? 1, opts.timeoutMs ?? 0),
    );
  }

  #runStaged(staged, timeoutMs, skip) {
    const core = this.#core;
    if (timeoutMs !== this.#timeoutMs) {
      core._wqx_time_limit(this.#handle, timeoutMs);
      this.#timeoutMs = timeoutMs;
    }
    if (!this.#dimsPtr && staged.length > 0) {
      this.#dimsPtr = core._wqx_malloc(staged.length * MAX_RANK * 4);
      if (!this.#dimsPtr) throw new WasmqError('out of wasm memory', { code: 'WQ_ERR_OUT_OF_MEMORY' });
    }
    for (let i = 0; i < staged.length; i++) {
      const s = staged[i];
      // s.bytes is our own view (feeds.mjs); its length from the internal
      // slot is exactly what set() below copies, and the core refuses dims
      // that need any other count. A carried input (stream state) is
      // already in wasm memory: s.nbytes at s.ptr.
      const bytes = s.carried ? s.nbytes : typedArrayByteLength(s.bytes);
      const dataPtr = s.carried ? s.ptr : this.#stagingFor(i, bytes);
      const dimsPtr = this.#dimsPtr + i * MAX_RANK * 4;
      // Views taken after the allocation: growing memory replaces the buffer.
      heap32(core).set(s.dims, dimsPtr >> 2);
      if (core._wqx_set_input(this.#ctx, this.#handle, i, s.dtype.code, s.dims.length, dimsPtr, dataPtr, bytes) !== 0) {
        throw errorFromCtx(core, this.#ctx);
      }
      // After set_input, which only records the view: a threaded core's
      // workers wake up while the data is copied.
      if (!s.carried) heapU8(core).set(s.bytes, dataPtr);
    }
    if (core._wqx_run(this.#ctx, this.#handle) !== 0) throw errorFromCtx(core, this.#ctx);
    const results = {};
    for (let i = 0; i < this.outputs.length; i++) {
      if (!skip?.has(i)) results[this.outputs[i].name] = this.#copyResult(i);
    }
    return results;
  }

  /**
   * Runs the model chunk after chunk with state outputs fed back as the
   * next run's inputs inside wasm memory (src/js/stream.mjs): bindings
   * {outputName: inputName}, e.g. { hn: 'h0', cn: 'c0' }.
   */
  stream(bindings, options = {}) {
    this.#live();
    const stream = new ModelStream(this, bindings, options, {
      validate: (feeds) => this.#validateFeeds(feeds),
      // staged: validateFeeds' entries, a carried one {info, dtype, dims, carried, bytes, ptr};
      // carry: [[outputIndex, bufferPtr, capacity]] the outputs are copied to
      // after the run; skip: output indices not returned.
      run: (staged, carry, skip) => {
        this.#live();
        return this.#call('stream', () => {
          const results = this.#runStaged(staged, 0, skip);
          const core = this.#core;
          const carried = carry.map(([o, ptr, capacity]) => {
            const src = core._wqx_result_data(this.#handle, o);
            const bytes = core._wqx_result_nbytes(this.#handle, o);
            if (bytes > capacity) throw new WasmqError(`stream: output '${this.outputs[o].name}' grew to ${bytes} bytes`, { code: 'WQ_ERR_SHAPE' });
            const dims = Array.from({ length: core._wqx_result_rank(this.#handle, o) }, (_, d) => core._wqx_result_dim(this.#handle, o, d));
            heapU8(core).copyWithin(ptr, src, src + bytes);
            return { dims, bytes };
          });
          return { results, carried };
        });
      },
      alloc: (bytes) => {
        const ptr = this.#core._wqx_malloc(Math.max(1, bytes));
        if (!ptr) throw new WasmqError('out of wasm memory', { code: 'WQ_ERR_OUT_OF_MEMORY' });
        return ptr;
      },
      free: (ptr) => {
        if (this.#handle && !coreRetiredReason(this.#core)) this.#core._wqx_free(ptr);
      },
      read: (ptr, bytes) => heapU8(this.#core).slice(ptr, ptr + bytes),
      write: (ptr, bytes) => heapU8(this.#core).set(bytes, ptr),
    });
    this.#streams.add(stream);
    return stream;
  }

  // One run keeping every intermediate (the core copies each node's outputs
  // as it goes): the results carry them, dequantized to float32 and in the
  // logical (channels-first) order, as a non-enumerable `captured` property
  // {tensorName: {data, dims, dtype, layout, producer, op, step}} (dtype:
  // as stored; producer/op: the node that wrote it; step: its position in
  // the executed graph).
  async #runCaptured(feeds, options) {
    this.#live();
    const core = this.#core;
    if (core._wqx_capture(this.#ctx, this.#handle, 1) !== 0) throw errorFromCtx(core, this.#ctx);
    let results;
    const captured = {};
    try {
      results = await this.run(feeds, { ...options, capture: false });
      const { tensors, nodes } = this.graph();
      for (const t of tensors) {
        const value = this.#capturedValue(t.id);
        if (!value) continue;
        // Dims are logical ([N, C, H, W]) in every layout; a channels-last tensor's data is [N, H, W, C].
        const dims = value.dims;
        const nhwc = t.layout?.name === 'NHWC' && dims.length === 4;
        const stored = nhwc ? [dims[0], dims[2], dims[3], dims[1]] : dims;
        const data = dequantize(value.data, t.qparams, stored, nhwc);
        captured[t.name] = { data: nhwc ? nhwcToNchw(data, stored) : data, dims, dtype: value.dtype, layout: nhwc ? 'NHWC' : 'plain', producer: nodes[t.producer]?.name ?? '', op: nodes[t.producer]?.op ?? '', step: t.producer };
      }
    } finally {
      if (!this.disposed) this.#core._wqx_capture(this.#ctx, this.#handle, 0);
    }
    Object.defineProperty(results, 'captured', { value: captured, enumerable: false });
    return results;
  }

  #capturedValue(t) {
    const core = this.#core;
    const h = this.#handle;
    const dtype = dtypeFromCode(core._wqx_captured_dtype(h, t));
    const rank = core._wqx_captured_rank(h, t);
    const ptr = core._wqx_captured_data(h, t);
    if (!dtype || rank < 0 || !ptr) return null;
    const dims = Array.from({ length: rank }, (_, d) => core._wqx_captured_dim(h, t, d));
    const count = numel(dims);
    const copy = heapU8(core).slice(ptr, ptr + count * dtype.size);
    return { data: new dtype.array(copy.buffer, 0, count), dims, dtype: dtype.name };
  }

  // Per-node times of `repeats` runs (median per node); the results of the
  // last run carry them as a non-enumerable `profile` property.
  async #runProfiled(feeds, repeats, timeoutMs) {
    if (!Number.isInteger(repeats) || repeats < 1) throw new WasmqError(`run: repeats must be an integer >= 1 (got ${String(repeats)})`);
    this.#live();
    // The feeds are read once for all repeats, and the repeats run without
    // yielding: no caller code can change or detach them in between.
    const staged = this.#validateFeeds(feeds);
    this.#live();
    const samples = [];
    let results;
    try {
      for (let r = 0; r < repeats; r++) {
        this.profile(true);
        results = this.#call('run', () => this.#runStaged(staged, timeoutMs));
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
    return JSON.parse(this.graphJson());
  }

  /**
   * graph() as the core writes it: the exact bytes `wasmq inspect MODEL
   * --json` prints (native and npx), one line ending in a newline.
   */
  graphJson() {
    this.#live();
    return this.#call('graph', () => {
      const core = this.#core;
      const ptr = core._wqx_graph_json(this.#handle);
      if (!ptr) throw new WasmqError('graph failed', { code: 'WQ_ERR_OUT_OF_MEMORY' });
      try {
        return core.UTF8ToString(ptr);
      } finally {
        core._wqx_free(ptr);
      }
    });
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
    return this.#call('describe', () => {
      const core = this.#core;
      const ptr = core._wqx_describe(this.#handle);
      if (!ptr) throw new WasmqError('describe failed', { code: 'WQ_ERR_OUT_OF_MEMORY' });
      try {
        return core.UTF8ToString(ptr);
      } finally {
        core._wqx_free(ptr);
      }
    });
  }

  /**
   * The lowered graph, one entry per node: the int8 op it runs (with the
   * quantization parameters of its tensors) or why it stayed float.
   */
  describeLowered() {
    this.#live();
    return this.#call('describeLowered', () => {
      const core = this.#core;
      const ptr = core._wqx_describe_lowered(this.#handle);
      if (!ptr) throw new WasmqError('describeLowered failed', { code: 'WQ_ERR_OUT_OF_MEMORY' });
      try {
        return core.UTF8ToString(ptr);
      } finally {
        core._wqx_free(ptr);
      }
    });
  }

  /**
   * Arena memory for intermediate tensors, as planned for the latest run (or
   * at load when every shape is static): {planned, arenaBytes,
   * lowerBoundBytes, unsharedBytes, tensors}. Before the first run of a model
   * with symbolic shapes, planned is false and the byte counts are 0.
   */
  get memory() {
    this.#live();
    return this.#call('memory', () => {
      const core = this.#core;
      const h = this.#handle;
      return Object.freeze({
        planned: core._wqx_arena_planned(h) !== 0,
        arenaBytes: core._wqx_arena_bytes(h),
        lowerBoundBytes: core._wqx_arena_lower_bound(h),
        unsharedBytes: core._wqx_arena_unshared_bytes(h),
        tensors: core._wqx_arena_tensor_count(h),
      });
    });
  }

  /**
   * Per-node timing of the runs that follow: profile(true) starts (clearing
   * the counts), profile(false) stops.
   */
  profile(on) {
    this.#live();
    this.#call('profile', () => {
      if (this.#core._wqx_profile(this.#ctx, this.#handle, on ? 1 : 0) !== 0) throw errorFromCtx(this.#core, this.#ctx);
    });
  }

  /**
   * Milliseconds per node of the executed (lowered) graph, summed over the
   * runs since profile(true): [{op, name, ms, kernelMs}]. ms - kernelMs is
   * the executor's fixed cost for the node (inputs, shapes, placement).
   */
  nodeTimes() {
    this.#live();
    return this.#call('nodeTimes', () => {
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
    });
  }

  /** Frees the model's wasm memory; any later use throws WQ_ERR_DISPOSED. Idempotent. */
  dispose() {
    if (!this.#handle) return;
    if (coreRetiredReason(this.#core)) {
      // Its memory went with the trapped core: nothing to free, nothing to call.
      this.#handle = 0;
      this.#ctx = 0;
      this.#stagingPtrs = [];
      this.#dimsPtr = 0;
      return;
    }
    for (const st of this.#streams) st.dispose();
    this.#streams.clear();
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

/** Float32 values of stored codes: (q - zero_point) * scale (per tensor or along qparams.axis). */
function dequantize(data, qparams, dims, nhwc) {
  const out = new Float32Array(data.length);
  if (!qparams) {
    for (let i = 0; i < data.length; i++) out[i] = Number(data[i]);
    return out;
  }
  const { scale, zero_point: zp } = qparams;
  if (scale.length === 1) {
    for (let i = 0; i < data.length; i++) out[i] = (Number(data[i]) - zp[0]) * scale[0];
    return out;
  }
  // Per channel: the axis counts in the stored order (channels last in NHWC).
  const axis = nhwc && qparams.axis === 1 ? 3 : qparams.axis;
  const inner = dims.slice(axis + 1).reduce((a, b) => a * b, 1);
  for (let i = 0; i < data.length; i++) {
    const c = Math.floor(i / inner) % dims[axis];
    out[i] = (Number(data[i]) - zp[c]) * scale[c];
  }
  return out;
}

/** [N, H, W, C] data as [N, C, H, W]. */
function nhwcToNchw(data, [n, h, w, c]) {
  const out = new Float32Array(data.length);
  for (let b = 0; b < n; b++)
    for (let y = 0; y < h; y++)
      for (let x = 0; x < w; x++)
        for (let ch = 0; ch < c; ch++) out[((b * c + ch) * h + y) * w + x] = data[((b * h + y) * w + x) * c + ch];
  return out;
}
