// Helpers for calling the wasm exports (wqx_*): copying bytes, strings and
// int32 arrays into wasm memory, reading strings and errors back.

import { WasmqError } from './errors.mjs';
import { dtypeNameOfCode, bytesOfView, typedArrayByteLength } from './dtypes.mjs';

// Memory can grow on any allocation, which replaces the buffer: always take
// fresh views through these helpers right before use. On the threaded core an
// allocation in a pool worker grows the shared memory without refreshing this
// thread's HEAPU8/HEAP32 (the glue only does that for growth on its own
// thread), so the views are checked against the memory's current buffer.
export function heapU8(core) {
  const buffer = currentBuffer(core);
  return core.HEAPU8.buffer === buffer ? core.HEAPU8 : new Uint8Array(buffer);
}

export function heap32(core) {
  const buffer = currentBuffer(core);
  return core.HEAP32.buffer === buffer ? core.HEAP32 : new Int32Array(buffer);
}

function currentBuffer(core) {
  return core.wasmMemory?.buffer ?? core.HEAPU8.buffer;
}

/**
 * Copies the bytes of a TypedArray/DataView into fresh wasm memory; returns
 * the pointer. The size allocated is the one copied, both read from the
 * view's internal slots (never from a getter that could lie).
 */
export function allocBytes(core, bytes) {
  const view = bytesOfView(bytes, 'data');
  const n = typedArrayByteLength(view);
  const ptr = core._wqx_malloc(n);
  if (!ptr) throw new WasmqError(`out of wasm memory allocating ${n} bytes`, { code: 'WQ_ERR_OUT_OF_MEMORY' });
  heapU8(core).set(view, ptr);
  return ptr;
}

export function allocInt32(core, values) {
  const arr = Int32Array.from(values);
  return allocBytes(core, new Uint8Array(arr.buffer));
}

/**
 * Input-shape overrides ([[name, dims], ...]) as wqx_load and
 * wqx_quantizer_new take them: pointers to the names, the ranks and all
 * dims one after the other. Every block allocated is pushed on `allocations`
 * (the caller frees them).
 */
export function allocShapes(core, entries, allocations) {
  const keep = (p) => {
    allocations.push(p);
    return p;
  };
  const namesPtr = keep(allocInt32(core, entries.map(([name]) => keep(allocString(core, name)))));
  const ranksPtr = keep(allocInt32(core, entries.map(([, dims]) => dims.length)));
  const dimsPtr = keep(allocInt32(core, entries.flatMap(([, dims]) => dims)));
  return { count: entries.length, namesPtr, ranksPtr, dimsPtr };
}

export function allocString(core, s) {
  const n = core.lengthBytesUTF8(s) + 1;
  const ptr = core._wqx_malloc(n);
  if (!ptr) throw new WasmqError('out of wasm memory', { code: 'WQ_ERR_OUT_OF_MEMORY' });
  core.stringToUTF8(s, ptr, n);
  return ptr;
}

export function readString(core, ptr) {
  return ptr ? core.UTF8ToString(ptr) : '';
}

/** The failure the core recorded in ctx; never a WasmqError with code WQ_OK (a call that failed without saying why is WQ_ERR_INTERNAL). */
export function errorFromCtx(core, ctx) {
  let code = ctx ? readString(core, core._wqx_error_name(ctx)) : '';
  const node = ctx ? readString(core, core._wqx_error_node(ctx)) : '';
  let message = ctx ? readString(core, core._wqx_error_message(ctx)) : '';
  if (!code || code === 'WQ_OK') {
    code = 'WQ_ERR_INTERNAL';
    message ||= 'a call into the wasm core failed without recording why';
  }
  return new WasmqError(message || code, { code, node });
}

/** {name, dtype, shape} of a model input or output (kind 'input' | 'output'). */
export function readTensorInfo(core, model, kind, i) {
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
