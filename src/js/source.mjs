// What load() accepts as a model (bytes, a Blob, a path in Node, a URL) and
// the checks on user-given dims shared by load() and run().

import { IS_NODE, readLocalFile } from '#platform';
import { WasmqError, callerError } from './errors.mjs';
import { arrayKind, bytesOfView } from './dtypes.mjs';
import { readUrlBytes } from './core.mjs';
import { snapshotDims } from './feeds.mjs';

/** Default cap on a model read from a path, URL or Blob (options.maxModelBytes). */
export const DEFAULT_MAX_MODEL_BYTES = 2 ** 31;

/**
 * The bytes of a Uint8Array, any other TypedArray or DataView, ArrayBuffer
 * or SharedArrayBuffer, as a fresh Uint8Array over exactly the bytes it
 * holds (read from internal slots: a lying byteLength changes nothing);
 * null for anything else.
 */
export function asBytes(source, what = 'load') {
  if (ArrayBuffer.isView(source)) return bytesOfView(source, `${what}: the model bytes`);
  if (source instanceof ArrayBuffer) return new Uint8Array(source);
  if (typeof SharedArrayBuffer !== 'undefined' && source instanceof SharedArrayBuffer) return new Uint8Array(source);
  return null;
}

/** maxModelBytes from load()/quantize() options: the default, or a checked integer >= 1. */
export function maxModelBytesOption(options, what) {
  const max = options.maxModelBytes ?? DEFAULT_MAX_MODEL_BYTES;
  if (!(Number.isSafeInteger(max) && max >= 1)) {
    throw new WasmqError(`${what}: maxModelBytes must be an integer >= 1 (got ${String(max)})`);
  }
  return max;
}

/**
 * The model's bytes from what load()/quantize() were given. Paths (Node)
 * must name regular files; files, Blobs and URL bodies over maxBytes fail
 * (WQ_ERR_IO) before they are read whole.
 */
export async function readModelSource(source, maxBytes = DEFAULT_MAX_MODEL_BYTES, what = 'load') {
  const bytes = asBytes(source, what);
  if (bytes) return bytes;
  const tooBig = (size, name) =>
    new WasmqError(`cannot read model ${name}: it is ${size} bytes, more than maxModelBytes (${maxBytes})`, { code: 'WQ_ERR_IO' });
  if (typeof Blob !== 'undefined' && source instanceof Blob) {
    if (source.size > maxBytes) throw tooBig(source.size, 'from a Blob');
    try {
      return new Uint8Array(await source.arrayBuffer());
    } catch (e) {
      throw new WasmqError(`cannot read model from a Blob: ${e.message}`, { code: 'WQ_ERR_IO' });
    }
  }
  let url = null;
  if (source instanceof URL) url = source;
  else if (typeof source === 'string') {
    if (/^(https?|file|blob|data):/i.test(source)) {
      try {
        url = new URL(source);
      } catch (e) {
        throw new WasmqError(`${what}: '${source}' is not a valid URL: ${e.message}`);
      }
    } else if (IS_NODE) {
      try {
        return await readLocalFile(source, maxBytes);
      } catch (e) {
        throw new WasmqError(`cannot read model '${source}': ${e.code === 'ENOENT' ? 'no such file' : e.message}`, { code: 'WQ_ERR_IO' });
      }
    } else url = new URL(source, globalThis.location?.href);
  } else {
    throw new WasmqError(`${what}: expected bytes, a path or a URL, got ${arrayKind(source)}`, { code: 'WQ_ERR_INVALID_ARG' });
  }
  try {
    return await readUrlBytes(url, maxBytes);
  } catch (e) {
    throw new WasmqError(`cannot read model ${url.href}: ${e.message}`, { code: 'WQ_ERR_IO' });
  }
}

export function validateDims(dims, what) {
  if (!Array.isArray(dims) || dims.length > 8 || !dims.every((d) => Number.isSafeInteger(d) && d >= 0 && d <= 0x7fffffff)) {
    throw new WasmqError(`${what}: dims must be an array of at most 8 non-negative integers, got ${printable(dims)}`, {
      code: 'WQ_ERR_INVALID_ARG',
    });
  }
}

/** JSON of a caller's value for a message, whatever it holds (BigInts, cycles, throwing getters). */
function printable(x) {
  try {
    return JSON.stringify(x, (_, v) => (typeof v === 'bigint' ? `${v}n` : v)) ?? String(x);
  } catch {
    return arrayKind(x);
  }
}

/**
 * inputShapes ({inputName: dims}) as checked [[name, dims]] entries, each
 * dims a frozen copy (the caller's getters run once, here).
 */
export function readShapes(inputShapes, what) {
  if (inputShapes === null || typeof inputShapes !== 'object') {
    throw new WasmqError(`${what}: inputShapes must be an object {inputName: dims}`);
  }
  let entries;
  try {
    entries = Object.entries(inputShapes).map(([name, dims]) => [name, snapshotDims(dims, `${what}: inputShapes['${name}']`)]);
  } catch (e) {
    throw callerError(`${what}: reading inputShapes threw`, e);
  }
  for (const [name, dims] of entries) validateDims(dims, `${what}: inputShapes['${name}']`);
  return entries;
}
