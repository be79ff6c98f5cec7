// Post-training quantization in the wasm core (src/core/quant/quantizer.h):
//
//   const q = await quantize(modelBytes, { config, onProgress });
//   for (const feeds of calibration) await q.observe(feeds);
//   const { onnx, report, summary } = await q.finish();
//   q.dispose();
//   const model = await load(onnx);   // the QDQ model, lowered onto int8 kernels
//
// The quantizer lives in its own build of the core (wasm_build/out/
// wasmq-quant.{mjs,wasm}), instantiated on the first quantize() only: load()
// never downloads it.

import { WasmqError, readOptions, wasmqErrors, callerError } from './errors.mjs';
import { getQuantCore, guardCore, coreRetiredReason } from './core.mjs';
import { allocBytes, allocInt32, heapU8, allocShapes, readString, errorFromCtx, readTensorInfo } from './bridge.mjs';
import { typedArrayByteLength } from './dtypes.mjs';
import { readModelSource, readShapes, maxModelBytesOption } from './source.mjs';
import { feedInfoOf, validateFeeds } from './feeds.mjs';

/** The config as the JSON text the core parses ('' for the defaults). */
function configText(config) {
  if (config === undefined || config === null) return '';
  if (typeof config === 'string') return config;
  if (typeof config === 'object' && !Array.isArray(config)) {
    try {
      return JSON.stringify(config);
    } catch (e) {
      throw new WasmqError(`quantize: config cannot be written as JSON: ${e.message}`);
    }
  }
  throw new WasmqError(`quantize: config must be an object or a JSON string, got ${Array.isArray(config) ? 'an array' : typeof config}`);
}

/**
 * The config text with options.maxMemoryBytes as its maxMemoryBytes key
 * (the float model's memory limit while calibrating, as load() applies it).
 */
function withMemoryLimit(text, maxMemoryBytes) {
  if (maxMemoryBytes === undefined) return text;
  if (!(Number.isSafeInteger(maxMemoryBytes) && maxMemoryBytes >= 0)) {
    throw new WasmqError(`quantize: maxMemoryBytes must be an integer >= 0 (got ${String(maxMemoryBytes)})`);
  }
  let config = {};
  try {
    if (text) config = JSON.parse(text);
  } catch {
    return text; // not JSON: the core names what is wrong with it
  }
  if (config === null || typeof config !== 'object' || Array.isArray(config)) return text;
  return JSON.stringify({ ...config, maxMemoryBytes });
}

/** keepFloat / targetSnrDb / targetCosine / maxTime options: undefined, or their checked values. */
function checkKeepFloat({ keepFloat, targetSnrDb, targetCosine, maxTime }) {
  if (targetCosine !== undefined && !(typeof targetCosine === 'number' && targetCosine >= 0 && targetCosine < 1)) {
    throw new WasmqError(`quantize: targetCosine must be a number in [0, 1) (got ${targetCosine})`);
  }
  if (maxTime !== undefined && !(typeof maxTime === 'number' && maxTime >= 0 && maxTime <= 1e6)) {
    throw new WasmqError(`quantize: maxTime must be a number of seconds in [0, 1e6] (got ${maxTime})`);
  }
  if (keepFloat !== undefined && !(Number.isInteger(keepFloat) && keepFloat >= 0 && keepFloat <= 100000)) {
    throw new WasmqError(`quantize: keepFloat must be an integer from 0 to 100000 (got ${keepFloat})`);
  }
  if (targetSnrDb !== undefined && !(typeof targetSnrDb === 'number' && targetSnrDb >= 0 && targetSnrDb < 200)) {
    throw new WasmqError(`quantize: targetSnrDb must be a number of dB in [0, 200) (got ${targetSnrDb})`);
  }
}

function checkTotal(total) {
  if (total !== undefined && !(Number.isSafeInteger(total) && total >= 0)) {
    throw new WasmqError(`quantize: total must be an integer >= 0 (got ${total})`);
  }
}

/**
 * Starts quantizing a float ONNX model (bytes, a path in Node, or a URL).
 * options.inputShapes ({inputName: dims}, as load() takes it) binds
 * symbolic input dims for calibration; the written model keeps them.
 * options.config: the settings of docs/quantize.md, as an object or a JSON
 * string (defaults without it). options.onProgress({done, total}) is called
 * after each observed sample; total is options.total, or the length of the
 * array given to observeAll(), else undefined. options.targetCosine (every
 * output's cosine to float on calibration samples) and options.maxTime
 * (seconds) steer the same search as targetSnrDb; options.onSearch(line)
 * receives one line per search step during finish(). Every config
 * `holdout`-th sample (4th by default) is held apart from calibration and
 * the report's `evaluation` is measured on those; `warnings` says what
 * makes the result doubtful. options.keepFloat (N) and
 * options.targetSnrDb replace the config's keepFloat / targetSnrDb (both:
 * one left out becomes 0, as with the CLI's --keep-float / --target-snr):
 * keep the N most sensitive nodes in float, and/or keep adding nodes to
 * float until the outputs reach that SNR on the calibration samples.
 * options.timeoutMs (0: none) bounds the whole quantization from this call:
 * an observe() or finish() past it stops (between nodes) with code
 * WQ_ERR_TIMEOUT and returns no model, and so does every later call.
 * Fails (WasmqError) for a
 * model that is already quantized, a config the core rejects (the message
 * names the JSON path), or a model that does not load.
 */
export async function quantize(source, options = {}) {
  return quantizeSince(performance.now(), source, options);
}

/** quantize() with options.timeoutMs counted from `started` (performance.now() of an earlier start: the CLI's). */
export async function quantizeSince(started, source, options = {}) {
  return wasmqErrors('quantize', () => quantizeChecked(source, readOptions(options, 'quantize'), started));
}

async function quantizeChecked(source, options, started) {
  const { onProgress, total, onSearch } = options;
  const timeoutMs = options.timeoutMs ?? 0;
  if (!(typeof timeoutMs === 'number' && timeoutMs >= 0 && timeoutMs <= 2 ** 31)) {
    throw new WasmqError(`quantize: timeoutMs must be a number of milliseconds >= 0 (got ${String(timeoutMs)})`);
  }
  if (onProgress !== undefined && typeof onProgress !== 'function') throw new WasmqError('quantize: onProgress must be a function');
  if (onSearch !== undefined && typeof onSearch !== 'function') throw new WasmqError('quantize: onSearch must be a function');
  checkTotal(total);
  checkKeepFloat(options);
  const shapeEntries = readShapes(options.inputShapes ?? {}, 'quantize');
  const config = withMemoryLimit(configText(options.config), options.maxMemoryBytes);
  const bytes = await readModelSource(source, maxModelBytesOption(options, 'quantize'), 'quantize');
  const core = await getQuantCore();
  return guardCore(core, 'quantize', () => {
    const ctx = core._wqx_ctx_new();
    if (!ctx) throw new WasmqError('out of wasm memory', { code: 'WQ_ERR_OUT_OF_MEMORY' });
    const allocations = [];
    try {
      const bytesPtr = allocBytes(core, bytes);
      allocations.push(bytesPtr);
      const configBytes = new TextEncoder().encode(config);
      const configPtr = allocBytes(core, configBytes);
      allocations.push(configPtr);
      const shapes = allocShapes(core, shapeEntries, allocations);
      const handle = core._wqx_quantizer_new(ctx, bytesPtr, bytes.byteLength, configPtr, configBytes.byteLength, shapes.count, shapes.namesPtr, shapes.ranksPtr, shapes.dimsPtr);
      if (!handle) throw errorFromCtx(core, ctx);
      // Counted from the start; the core checks it in every observe and finish.
      if (timeoutMs > 0) core._wqx_quantizer_time_limit(handle, timeoutMs, started);
      if (options.keepFloat !== undefined || options.targetSnrDb !== undefined) {
        core._wqx_quantizer_keep_float(handle, options.keepFloat ?? 0, options.targetSnrDb ?? 0);
      }
      if (options.targetCosine !== undefined || options.maxTime !== undefined) {
        core._wqx_quantizer_search(handle, options.targetCosine ?? 0, options.maxTime ?? 0);
      }
      return new Quantizer(core, ctx, handle, { onProgress, total, onSearch });
    } catch (e) {
      core._wqx_ctx_free(ctx);
      throw e;
    } finally {
      for (const p of allocations) core._wqx_free(p);
    }
  });
}

/** A quantization in progress (from quantize()). */
export class Quantizer {
  #core;
  #ctx;
  #handle;
  #feedInfo;
  #onProgress;
  #onSearch;
  #total;
  #finished = false; // after finish(), observe() is refused

  constructor(core, ctx, handle, { onProgress, total, onSearch }) {
    this.#core = core;
    this.#ctx = ctx;
    this.#handle = handle;
    this.#onProgress = onProgress;
    this.#onSearch = onSearch;
    this.#total = total;
    const n = core._wqx_quantizer_input_count(handle);
    /** The float model's inputs [{name, dtype, shape}]: what each sample holds. */
    this.inputs = Object.freeze(Array.from({ length: n }, (_, i) => readTensorInfo(core, handle, 'quantizer_input', i)));
    this.#feedInfo = feedInfoOf(this.inputs);
  }

  #live(what) {
    if (!this.#handle) throw new WasmqError(`${what}: the quantizer was disposed`, { code: 'WQ_ERR_DISPOSED' });
    const trapped = coreRetiredReason(this.#core);
    if (trapped) throw new WasmqError(`${what}: the quantizer's wasm core trapped (${trapped}); start again with quantize()`, { code: 'WQ_ERR_DISPOSED' });
  }

  /** Samples observed so far. */
  get samples() {
    this.#live('samples');
    return this.#core._wqx_quantizer_samples(this.#handle);
  }

  #refuseAfterFinish(what) {
    if (this.#finished) {
      throw new WasmqError(`${what}: finish() was already called and the model written from the samples so far; start a new quantize() to calibrate on more`);
    }
  }

  /**
   * Runs the float model on one calibration sample (feeds as model.run()
   * takes them: {inputName: {data, dims}} or bare TypedArrays for static
   * shapes) and folds every observed tensor into its range. NaN/Inf or a
   * wrong dtype/shape fails naming the input, and the ranges stay as they were.
   */
  async observe(feeds) {
    this.#live('observe');
    this.#refuseAfterFinish('observe');
    const staged = validateFeeds(this.#feedInfo, feeds, 'observe');
    this.#live('observe'); // the feeds' getters may have disposed the quantizer
    const core = this.#core;
    guardCore(core, 'observe', () => {
      const allocations = [];
      try {
        for (let i = 0; i < staged.length; i++) {
          const s = staged[i];
          // allocBytes copies exactly the bytes of s.bytes; the core checks that count against dims.
          const dataPtr = allocBytes(core, s.bytes);
          allocations.push(dataPtr);
          const dimsPtr = allocInt32(core, s.dims.length ? s.dims : [0]);
          allocations.push(dimsPtr);
          const n = typedArrayByteLength(s.bytes);
          if (core._wqx_quantizer_set_input(this.#ctx, this.#handle, i, s.dtype.code, s.dims.length, dimsPtr, dataPtr, n) !== 0) {
            throw errorFromCtx(core, this.#ctx);
          }
        }
        if (core._wqx_quantizer_observe(this.#ctx, this.#handle) !== 0) throw errorFromCtx(core, this.#ctx);
      } finally {
        for (const p of allocations) core._wqx_free(p);
      }
    });
    if (this.#onProgress) {
      try {
        this.#onProgress({ done: this.samples, total: this.#total });
      } catch (e) {
        throw callerError('observe: onProgress threw', e);
      }
    }
  }

  /**
   * Observes every sample of an array or a (sync or async) iterable of
   * feeds; an array sets the progress total to its length (unless
   * quantize() was given one). Resolves to the number of samples observed.
   */
  async observeAll(samples) {
    this.#live('observeAll');
    this.#refuseAfterFinish('observeAll');
    if (samples === null || (typeof samples !== 'object' && typeof samples !== 'function') ||
        (typeof samples[Symbol.iterator] !== 'function' && typeof samples[Symbol.asyncIterator] !== 'function')) {
      throw new WasmqError(`observeAll: expected an array or an iterable of feeds, got ${samples === null ? 'null' : typeof samples}`);
    }
    if (Array.isArray(samples) && this.#total === undefined) this.#total = samples.length;
    let n = 0;
    try {
      for await (const feeds of samples) {
        await this.observe(feeds);
        n++;
      }
    } catch (e) {
      throw callerError(`observeAll: sample ${n}`, e);
    }
    return n;
  }

  /**
   * Adds a warning to the report of every later finish(): something the
   * caller knows about the data that the quantizer cannot see (e.g. that
   * the samples are random).
   */
  note(warning) {
    this.#live('note');
    if (typeof warning !== 'string' || warning === '') throw new WasmqError('note: warning must be a non-empty string');
    const core = this.#core;
    guardCore(core, 'note', () => {
      const ptr = allocBytes(core, new TextEncoder().encode(`${warning}\0`));
      try {
        if (core._wqx_quantizer_note(this.#ctx, this.#handle, ptr) !== 0) throw errorFromCtx(core, this.#ctx);
      } finally {
        core._wqx_free(ptr);
      }
    });
  }

  /**
   * Builds the QDQ model from the ranges observed so far (at least one
   * sample): {onnx: Uint8Array (ONNX bytes), report (the sensitivity report,
   * docs/quantize.md), reportJson (its text as the core wrote it, which is
   * what `wasmq quantize --report` saves), summary (one line)}. Calling it
   * again gives the same bytes; observe() after it is refused (the model
   * was written from the samples so far: a new quantize() calibrates more).
   */
  async finish() {
    this.#live('finish');
    const core = this.#core;
    return guardCore(core, 'finish', () => {
      // The target search reports each step while finish runs (one synchronous call).
      core.wqxQuantProgress = this.#onSearch;
      let status;
      try {
        status = core._wqx_quantizer_finish(this.#ctx, this.#handle);
      } finally {
        core.wqxQuantProgress = undefined;
      }
      if (status !== 0) throw errorFromCtx(core, this.#ctx);
      this.#finished = true;
      const ptr = core._wqx_quantizer_onnx(this.#handle);
      const len = core._wqx_quantizer_onnx_len(this.#handle);
      const onnx = heapU8(core).slice(ptr, ptr + len);
      const reportPtr = core._wqx_quantizer_report_json(this.#handle);
      if (!reportPtr) throw new WasmqError('finish: out of wasm memory writing the report', { code: 'WQ_ERR_OUT_OF_MEMORY' });
      let reportJson;
      try {
        reportJson = core.UTF8ToString(reportPtr);
      } finally {
        core._wqx_free(reportPtr);
      }
      const summary = readString(core, core._wqx_quantizer_summary(this.#handle));
      return { onnx, report: JSON.parse(reportJson), reportJson, summary };
    });
  }

  /** Frees the quantizer's wasm memory; later calls throw WQ_ERR_DISPOSED. Idempotent. */
  dispose() {
    if (!this.#handle) return;
    if (!coreRetiredReason(this.#core)) {
      this.#core._wqx_quantizer_free(this.#handle);
      this.#core._wqx_ctx_free(this.#ctx);
    }
    this.#handle = 0;
    this.#ctx = 0;
  }

  get disposed() {
    return !this.#handle;
  }
}
