// Checking feeds ({inputName: {data, dims}}) against a model's declared
// inputs before they are staged in wasm memory: shared by model.run() and
// the quantizer's observe().
//
// Feeds come from the caller and are not trusted: every getter, Proxy trap
// or iterator of theirs runs once, in a first pass; what they gave is then
// checked from internal slots only (the TypedArray's real kind and byte
// length, a copy of the dims), so nothing the caller runs can change the
// answer between the check and the copy. The core checks the byte count it
// is handed again (wqx_set_input) before it reads a byte.

import { WasmqError } from './errors.mjs';
import { DTYPES, kindMatchesDtype, typedArrayKind, typedArrayLength, typedArrayByteLength, bytesOfView, arrayKind, numel } from './dtypes.mjs';
import { validateDims } from './source.mjs';

const MAX_RANK = 8;

/**
 * Per declared input ({name, dtype, shape}): {info, dtype (undefined if the
 * runtime cannot feed it), staticDims (null if any dim is symbolic), count}.
 */
export function feedInfoOf(inputs) {
  return inputs.map((info) => {
    const staticDims = info.shape && info.shape.every((d) => typeof d === 'number') ? Object.freeze(info.shape.slice()) : null;
    return { info, dtype: DTYPES[info.dtype], staticDims, count: staticDims ? numel(staticDims) : -1 };
  });
}

/**
 * A plain frozen copy of caller-given dims, each element read once (a Proxy
 * or getter cannot answer differently later). `what` names them in the
 * error for anything but an array of at most 8 entries.
 */
export function snapshotDims(dims, what) {
  const n = Array.isArray(dims) ? dims.length : -1;
  if (!(Number.isSafeInteger(n) && n >= 0 && n <= MAX_RANK)) {
    throw new WasmqError(`${what}: dims must be an array of at most ${MAX_RANK} non-negative integers, got ${arrayKind(dims)}${n > MAX_RANK ? ` of length ${n}` : ''}`);
  }
  const copy = new Array(n);
  for (let d = 0; d < n; d++) copy[d] = dims[d];
  return Object.freeze(copy);
}

/**
 * Checks feeds against feedInfoOf(inputs); returns [{info, dtype, dims,
 * bytes}] in input order, bytes a fresh Uint8Array over exactly the
 * elements dims need (taken from internal slots). Errors are WasmqErrors
 * starting with `what` ("run: ..."): unknown or missing inputs, wrong array
 * type (WQ_ERR_SHAPE), dims that disagree with the declaration or with
 * another input's binding of a symbolic dim, data of the wrong length, a
 * detached buffer. Whatever the caller's getters throw becomes a WasmqError.
 */
export function validateFeeds(feedInfo, feeds, what) {
  let given;
  try {
    given = readFeeds(feedInfo, feeds, what);
  } catch (e) {
    if (e instanceof WasmqError) throw e;
    throw new WasmqError(`${what}: reading the feeds threw ${e?.name ?? typeof e}: ${e?.message ?? String(e)}`);
  }
  let bound = null; // symbolic dim name -> value, consistent across inputs (made when needed)
  const out = new Array(given.length);
  for (let i = 0; i < given.length; i++) {
    const { f, data, dims: givenDims } = given[i];
    const { info, dtype, staticDims } = f;
    if (!dtype) {
      throw new WasmqError(`${what}: input '${info.name}' has dtype ${info.dtype}, which the runtime cannot feed`, {
        code: 'WQ_ERR_UNSUPPORTED',
      });
    }
    const kind = typedArrayKind(data);
    if (!kindMatchesDtype(kind, dtype)) {
      throw new WasmqError(`${what}: input '${info.name}' is ${info.dtype} and needs a ${dtype.array.name}, got ${arrayKind(data)}`, {
        code: 'WQ_ERR_SHAPE',
      });
    }
    let dims = givenDims;
    let count = f.count;
    if (dims === undefined) {
      if (!staticDims) {
        throw new WasmqError(`${what}: input '${info.name}' has shape ${formatShape(info.shape)}; pass dims`);
      }
      dims = staticDims; // the declared shape is valid as it stands
    } else if (!(staticDims && sameDims(dims, staticDims))) {
      bound ??= new Map();
      count = checkDims(info, dims, bound, what);
    }
    const bytes = bytesOfView(data, `${what}: input '${info.name}'`);
    const length = typedArrayLength(data);
    if (length !== count || typedArrayByteLength(bytes) !== count * dtype.size) {
      throw new WasmqError(`${what}: input '${info.name}' dims [${dims.join(',')}] need ${count} elements, data has ${length}`, {
        code: 'WQ_ERR_SHAPE',
      });
    }
    out[i] = { info, dtype, dims, bytes };
  }
  return out;
}

/** First pass: every caller-visible read (feed objects, data, dims), once each. */
function readFeeds(feedInfo, feeds, what) {
  if (feeds === null || typeof feeds !== 'object') {
    throw new WasmqError(`${what}: feeds must be an object {inputName: {data, dims}}, got ${arrayKind(feeds)}`);
  }
  for (const key of Object.keys(feeds)) {
    if (!feedInfo.some((f) => f.info.name === key)) {
      throw new WasmqError(`${what}: unknown input '${key}' (model inputs: ${feedInfo.map((f) => f.info.name).join(', ')})`);
    }
  }
  // Plain loops and small records: this runs on every run() of a model
  // whose whole run may take microseconds.
  const given = new Array(feedInfo.length);
  for (let i = 0; i < feedInfo.length; i++) {
    const f = feedInfo[i];
    const feed = feeds[f.info.name];
    if (feed === undefined) throw new WasmqError(`${what}: missing input '${f.info.name}'`);
    if (ArrayBuffer.isView(feed)) {
      given[i] = { f, data: feed, dims: undefined }; // bare TypedArray: dims from the declaration
      continue;
    }
    if (feed === null || typeof feed !== 'object') {
      throw new WasmqError(`${what}: input '${f.info.name}' must be a TypedArray or {data, dims}, got ${arrayKind(feed)}`, {
        code: 'WQ_ERR_SHAPE',
      });
    }
    const data = feed.data;
    const dims = feed.dims;
    given[i] = { f, data, dims: dims === undefined ? undefined : snapshotDims(dims, `${what}: input '${f.info.name}'`) };
  }
  return given;
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
function checkDims(info, dims, bound, what) {
  validateDims(dims, `${what}: input '${info.name}'`);
  if (info.shape) {
    const mismatch = () =>
      new WasmqError(`${what}: input '${info.name}' has dims [${dims.join(',')}], model expects ${formatShape(info.shape)}`, {
        code: 'WQ_ERR_SHAPE',
      });
    if (dims.length !== info.shape.length) throw mismatch();
    info.shape.forEach((want, d) => {
      if (typeof want === 'number' && want !== dims[d]) throw mismatch();
      if (typeof want === 'string') {
        if (bound.has(want) && bound.get(want) !== dims[d]) {
          throw new WasmqError(
            `${what}: input '${info.name}' dim ${d} ('${want}') is ${dims[d]} but another input bound '${want}' to ${bound.get(want)}`,
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
