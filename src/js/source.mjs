// What load() accepts as a model (bytes, a Blob, a path in Node, a URL) and
// the checks on user-given dims shared by load() and run().

import { IS_NODE, readLocalFile } from '#platform';
import { WasmqError } from './errors.mjs';
import { arrayKind } from './dtypes.mjs';
import { readUrlBytes } from './core.mjs';

export function asBytes(source) {
  if (source instanceof Uint8Array) return source;
  if (source instanceof ArrayBuffer) return new Uint8Array(source);
  if (typeof SharedArrayBuffer !== 'undefined' && source instanceof SharedArrayBuffer) return new Uint8Array(source);
  if (ArrayBuffer.isView(source)) return new Uint8Array(source.buffer, source.byteOffset, source.byteLength);
  return null;
}

export async function readModelSource(source) {
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

export function validateDims(dims, what) {
  if (!Array.isArray(dims) || dims.length > 8 || !dims.every((d) => Number.isSafeInteger(d) && d >= 0 && d <= 0x7fffffff)) {
    throw new WasmqError(`${what}: dims must be an array of at most 8 non-negative integers, got ${JSON.stringify(dims)}`, {
      code: 'WQ_ERR_INVALID_ARG',
    });
  }
}
