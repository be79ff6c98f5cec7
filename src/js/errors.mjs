// The one error type the package throws.

/**
 * Error thrown for every failure. `code` is the C status name
 * ("WQ_ERR_SHAPE"...; "WQ_ERR_DISPOSED" for use after dispose or of a model
 * whose wasm core trapped; "WQ_ERR_INTERNAL" for the call in which it trapped), `node` the
 * node at fault ("" if none), `reason` the message without the node suffix.
 */
export class WasmqError extends Error {
  constructor(reason, { code = 'WQ_ERR_INVALID_ARG', node = '' } = {}) {
    super(node ? `${reason} (node '${node}')` : reason);
    this.name = 'WasmqError';
    this.code = code && code !== 'WQ_OK' ? code : 'WQ_ERR_INTERNAL'; // a thrown error is never OK
    this.node = node;
    this.reason = reason;
  }
}

/** What the caller's code threw, as a WasmqError (WQ_ERR_INVALID_ARG) saying where. */
export function callerError(what, e) {
  if (e instanceof WasmqError) return e;
  const err = new WasmqError(`${what}: ${e?.name ?? typeof e}: ${e?.message ?? String(e)}`);
  err.cause = e;
  return err;
}

/**
 * A plain copy of an options object, every (own or inherited enumerable)
 * property read once, so the caller's getters run here and nowhere later;
 * {} for undefined. Fails as a WasmqError for anything but an object, or
 * when a getter throws.
 */
export function readOptions(options, what) {
  if (options === undefined) return {};
  if (options === null || typeof options !== 'object') {
    throw new WasmqError(`${what}: options must be an object, got ${options === null ? 'null' : typeof options}`);
  }
  const copy = {};
  try {
    for (const key in options) copy[key] = options[key];
  } catch (e) {
    throw callerError(`${what}: reading the options threw`, e);
  }
  return copy;
}

/**
 * Runs fn (sync or async); anything it throws that is not a WasmqError (a
 * caller's object misbehaving somewhere unforeseen) becomes one
 * (WQ_ERR_INVALID_ARG naming `what`, the original as `cause`): the package
 * throws nothing else.
 */
export async function wasmqErrors(what, fn) {
  try {
    return await fn();
  } catch (e) {
    throw callerError(what, e);
  }
}
