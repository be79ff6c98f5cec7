// Checking feeds ({inputName: {data, dims}}) against a model's declared
// inputs before they are staged in wasm memory: shared by model.run() and
// the quantizer's observe().

import { WasmqError } from './errors.mjs';
import { DTYPES, arrayMatchesDtype, arrayKind, numel } from './dtypes.mjs';
import { validateDims } from './source.mjs';

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
 * Checks feeds against feedInfoOf(inputs); returns [{info, dtype, dims,
 * data}] in input order. Errors are WasmqErrors starting with `what`
 * ("run: ..."): unknown or missing inputs, wrong array type (WQ_ERR_SHAPE),
 * dims that disagree with the declaration or with another input's binding
 * of a symbolic dim, data of the wrong length.
 */
export function validateFeeds(feedInfo, feeds, what) {
  if (feeds === null || typeof feeds !== 'object') {
    throw new WasmqError(`${what}: feeds must be an object {inputName: {data, dims}}, got ${arrayKind(feeds)}`);
  }
  const names = feedInfo.map((f) => f.info.name);
  for (const key of Object.keys(feeds)) {
    if (!names.includes(key)) {
      throw new WasmqError(`${what}: unknown input '${key}' (model inputs: ${names.join(', ')})`);
    }
  }
  const bound = new Map(); // symbolic dim name -> value, consistent across inputs
  return feedInfo.map(({ info, dtype, staticDims, count: staticCount }) => {
    let feed = feeds[info.name];
    if (feed === undefined) throw new WasmqError(`${what}: missing input '${info.name}'`);
    if (ArrayBuffer.isView(feed)) feed = { data: feed }; // bare TypedArray: dims from the declaration
    if (!dtype) {
      throw new WasmqError(`${what}: input '${info.name}' has dtype ${info.dtype}, which the runtime cannot feed`, {
        code: 'WQ_ERR_UNSUPPORTED',
      });
    }
    const { data } = feed;
    if (!arrayMatchesDtype(data, dtype)) {
      throw new WasmqError(`${what}: input '${info.name}' is ${info.dtype} and needs a ${dtype.array.name}, got ${arrayKind(data)}`, {
        code: 'WQ_ERR_SHAPE',
      });
    }
    let dims = feed.dims;
    let count = staticCount;
    if (dims === undefined) {
      if (!staticDims) {
        throw new WasmqError(`${what}: input '${info.name}' has shape ${formatShape(info.shape)}; pass dims`);
      }
      dims = staticDims; // the declared shape is valid as it stands
    } else if (!(staticDims && sameDims(dims, staticDims))) {
      count = checkDims(info, dims, bound, what);
    }
    if (data.length !== count) {
      throw new WasmqError(`${what}: input '${info.name}' dims [${dims.join(',')}] need ${count} elements, data has ${data.length}`, {
        code: 'WQ_ERR_SHAPE',
      });
    }
    return { info, dtype, dims, data };
  });
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
