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
    this.code = code;
    this.node = node;
    this.reason = reason;
  }
}
