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
//
// The package's modules: core.mjs finds and instantiates the wasm core,
// bridge.mjs copies data in and out of wasm memory, model.mjs is the loaded
// model, source.mjs reads what load() is given; this file ties them together.

import { WasmqError, readOptions, wasmqErrors } from './errors.mjs';
import { configure, threadsSupported, getCore, getThreadedCore, configuredThreads, guardCore } from './core.mjs';
import { allocBytes, allocShapes, errorFromCtx } from './bridge.mjs';
import { readModelSource, readShapes, maxModelBytesOption } from './source.mjs';
import { Model } from './model.mjs';
import { DTYPES } from './dtypes.mjs';
import { compare } from './compare.mjs';
import { quantize, Quantizer } from './quantize.mjs';
import { quantizeDynamic } from './quantize_dynamic.mjs';
import { probeRelaxed } from './relaxed_probe.mjs';

export { WasmqError, configure, threadsSupported, compare, quantize, Quantizer, quantizeDynamic };

// wqx_load flags (src/core/api/wasm_exports.h).
const LOAD_NO_LOWERING = 1;
const LOAD_STRICT_INT8 = 2;
const LOAD_PARTITION = { 'int+fp': 1 << 2, int: 2 << 2, fp: 3 << 2 };
const KERNELS = ['auto', 'simd128', 'relaxed'];
// The relaxed-SIMD probe passed (wasm_exports.c WQX_LOAD_ENGINE_RELAXED):
// the relaxed core's kernel records may be selected.
const LOAD_ENGINE_RELAXED = 1 << 4;

/**
 * Loads an ONNX model from bytes (Uint8Array/ArrayBuffer), a file path (Node)
 * or a URL (fetch). options.inputShapes binds input dims at load:
 * {inputName: [1, 3, 224, 224]}. options.lowering (default true) lowers QDQ
 * and QLinear graphs onto int8 ops; false runs them op by op with float
 * Q/DQ. options.strictInt8 makes a quantized node that cannot run in int8 a
 * load error naming it. options.partition ('int+fp' default, 'int' strict,
 * 'fp' everything float) supersedes both (docs/graph-json.md).
 * options.kernels: 'auto' (default) runs the relaxed-SIMD build where the
 * engine passed the known-answer probe of the relaxed dot (relaxed_probe.mjs)
 * and that build is there, else SIMD128; 'simd128' forces SIMD128;
 * 'relaxed' fails unless relaxed can run. model.info.kernels says which
 * runs; info.relaxedRefused why relaxed was not used (the probe's answer).
 * options.maxMemoryBytes (0: none) caps the weights, graph outputs, arena and
 * intermediates: a model over it fails to load, a run over it (larger input
 * shapes) fails, both with WQ_ERR_OUT_OF_MEMORY; the model stays usable.
 * options.maxModelBytes (default 2 GiB) caps a model read from a path, URL
 * or Blob; paths must name regular files. Every failure is a WasmqError.
 */
export async function load(source, options = {}) {
  return wasmqErrors('load', () => loadChecked(source, readOptions(options, 'load')));
}

async function loadChecked(source, options) {
  const inputShapes = options.inputShapes ?? {};
  if (options.partition !== undefined && !Object.hasOwn(LOAD_PARTITION, options.partition)) {
    throw new WasmqError(`load: partition must be 'int', 'int+fp' or 'fp' (got ${typeof options.partition === 'string' ? `'${options.partition}'` : String(options.partition)})`);
  }
  const flags = (options.lowering === false ? LOAD_NO_LOWERING : 0) |
    (options.strictInt8 ? LOAD_STRICT_INT8 : 0) | (LOAD_PARTITION[options.partition] ?? 0);
  if (inputShapes === null || typeof inputShapes !== 'object') {
    throw new WasmqError('load: inputShapes must be an object {inputName: dims}');
  }
  const shapeEntries = readShapes(inputShapes, 'load');
  const maxMemoryBytes = options.maxMemoryBytes ?? 0;
  if (typeof maxMemoryBytes !== 'number' || !Number.isSafeInteger(maxMemoryBytes) || maxMemoryBytes < 0) {
    throw new WasmqError(`load: maxMemoryBytes must be an integer >= 0 (got ${String(maxMemoryBytes)})`);
  }
  const requestedThreads = options.threads ?? configuredThreads() ?? 1;
  if (!Number.isInteger(requestedThreads) || requestedThreads < 1) {
    throw new WasmqError(`load: threads must be an integer >= 1 (got ${String(requestedThreads)})`);
  }
  const kernels = options.kernels ?? 'auto';
  if (!KERNELS.includes(kernels)) {
    throw new WasmqError(`load: kernels must be 'auto', 'simd128' or 'relaxed' (got ${typeof kernels === 'string' ? `'${kernels}'` : String(kernels)})`);
  }
  const probe = kernels === 'simd128' ? null : probeRelaxed();
  if (kernels === 'relaxed' && !probe.ok) {
    throw new WasmqError(`load: kernels 'relaxed' cannot run in this engine: ${probe.reason}`, { code: 'WQ_ERR_UNSUPPORTED' });
  }
  const bytes = await readModelSource(source, maxModelBytesOption(options, 'load'), 'load');
  // The threaded build where shared memory works; else the single-threaded
  // one, saying why. Relaxed SIMD where asked or probed, else SIMD128.
  let relaxed = Boolean(probe?.ok);
  let relaxedRefused = probe && !probe.ok ? probe.reason : undefined;
  let core;
  let fallback;
  if (requestedThreads > 1 && threadsSupported()) {
    try {
      core = await getThreadedCore(requestedThreads, relaxed);
    } catch (e) {
      if (kernels === 'relaxed') throw e;
      if (relaxed) {
        relaxedRefused = e.message;
        relaxed = false;
        core = await getThreadedCore(requestedThreads).catch((e2) => {
          fallback = e2.message;
        });
      } else {
        fallback = e.message;
      }
    }
  } else if (requestedThreads > 1) {
    fallback = 'no SharedArrayBuffer here (a browser page must be crossOriginIsolated: COOP/COEP headers)';
  }
  const threaded = Boolean(core);
  if (!core && relaxed) {
    try {
      core = await getCore(true);
    } catch (e) {
      if (kernels === 'relaxed') throw e;
      relaxedRefused = e.message;
      relaxed = false;
    }
  }
  core ??= await getCore();
  const kernelInfo = { kernels: relaxed ? 'relaxed' : 'simd128' };
  if (relaxedRefused) kernelInfo.relaxedRefused = relaxedRefused;
  // A trap in here retires the core (WQ_ERR_INTERNAL); the next load() gets a fresh one.
  const coreFlags = flags | (relaxed ? LOAD_ENGINE_RELAXED : 0);
  return guardCore(core, 'load', () => loadOnCore(core, bytes, shapeEntries, coreFlags, threaded, requestedThreads, fallback, options, kernelInfo));
}

function loadOnCore(core, bytes, shapeEntries, flags, threaded, requestedThreads, fallback, options, kernelInfo) {
  const ctx = core._wqx_ctx_new();
  if (!ctx) throw new WasmqError('out of wasm memory', { code: 'WQ_ERR_OUT_OF_MEMORY' });
  const allocations = [];
  let handle = 0;
  try {
    const bytesPtr = allocBytes(core, bytes);
    allocations.push(bytesPtr);
    const shapes = allocShapes(core, shapeEntries, allocations);
    handle = core._wqx_load(ctx, bytesPtr, bytes.byteLength, shapes.count, shapes.namesPtr, shapes.ranksPtr, shapes.dimsPtr, flags, options.maxMemoryBytes ?? 0);
    if (!handle) throw errorFromCtx(core, ctx);
    if (threaded && core._wqx_set_threads(ctx, handle, requestedThreads) !== 0) throw errorFromCtx(core, ctx);
    const info = {
      build: threaded ? 'simd-threads' : 'simd',
      threads: threaded ? core._wqx_threads(handle) : 1,
      requestedThreads,
      lowering: options.partition ? options.partition !== 'fp' : options.lowering !== false,
      partition: options.partition ?? (options.lowering === false ? 'fp' : options.strictInt8 ? 'int' : 'int+fp'),
      ...kernelInfo,
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

export { DTYPES };
// Images as calibration samples (and inputs): the config's "images" spec, pure JS; decodeImage in a page.
export { resolveImageSpec, imageToTensor, decodeImage } from './images.mjs';

export default { load, WasmqError, configure, threadsSupported, compare, quantize };
