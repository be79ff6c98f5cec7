import { WasmqError } from './errors.mjs';

// Element types the runtime executes, keyed by the public name. `code` is
// ONNX's TensorProto.DataType (the C core's wq_dtype); `npy` is the numpy
// descr without byte order; `array` is the TypedArray holding the elements.

export const DTYPES = Object.freeze({
  float32: Object.freeze({ name: 'float32', code: 1, size: 4, npy: 'f4', array: Float32Array }),
  uint8: Object.freeze({ name: 'uint8', code: 2, size: 1, npy: 'u1', array: Uint8Array }),
  int8: Object.freeze({ name: 'int8', code: 3, size: 1, npy: 'i1', array: Int8Array }),
  uint16: Object.freeze({ name: 'uint16', code: 4, size: 2, npy: 'u2', array: Uint16Array }),
  int16: Object.freeze({ name: 'int16', code: 5, size: 2, npy: 'i2', array: Int16Array }),
  int32: Object.freeze({ name: 'int32', code: 6, size: 4, npy: 'i4', array: Int32Array }),
  int64: Object.freeze({ name: 'int64', code: 7, size: 8, npy: 'i8', array: BigInt64Array }),
  bool: Object.freeze({ name: 'bool', code: 9, size: 1, npy: 'b1', array: Uint8Array }),
  uint32: Object.freeze({ name: 'uint32', code: 12, size: 4, npy: 'u4', array: Uint32Array }),
  uint64: Object.freeze({ name: 'uint64', code: 13, size: 8, npy: 'u8', array: BigUint64Array }),
});

const BY_CODE = new Map(Object.values(DTYPES).map((d) => [d.code, d]));
const BY_NPY = new Map(Object.values(DTYPES).map((d) => [d.npy, d]));

// ONNX names of codes we cannot execute, for error messages.
const ONNX_NAMES = {
  0: 'undefined', 8: 'string', 10: 'float16', 11: 'double', 14: 'complex64',
  15: 'complex128', 16: 'bfloat16',
};

/** dtype info for an ONNX code, or undefined. */
export function dtypeFromCode(code) {
  return BY_CODE.get(code);
}

/** dtype info for a numpy descr body ('f4', 'i1', ...), or undefined. */
export function dtypeFromNpy(body) {
  return BY_NPY.get(body);
}

/** Public name of an ONNX dtype code, including ones we cannot execute. */
export function dtypeNameOfCode(code) {
  const d = BY_CODE.get(code);
  if (d) return d.name;
  return ONNX_NAMES[code] ?? `dtype(${code})`;
}

// What a TypedArray really is, read from its internal slots through the
// intrinsic getters (captured once, here): a subclass overriding
// Symbol.toStringTag, length or byteLength, or a patched prototype, cannot
// change these answers. They also work on arrays from other realms.
const TYPED_ARRAY_PROTO = Object.getPrototypeOf(Uint8Array.prototype);
const intrinsic = (proto, key) => {
  const get = Object.getOwnPropertyDescriptor(proto, key).get;
  return (x) => get.call(x);
};
const taKind = intrinsic(TYPED_ARRAY_PROTO, Symbol.toStringTag); // undefined for non-TypedArrays
const taBuffer = intrinsic(TYPED_ARRAY_PROTO, 'buffer');
const taByteOffset = intrinsic(TYPED_ARRAY_PROTO, 'byteOffset');
const taByteLength = intrinsic(TYPED_ARRAY_PROTO, 'byteLength');
const taLength = intrinsic(TYPED_ARRAY_PROTO, 'length');
const dvBuffer = intrinsic(DataView.prototype, 'buffer');
const dvByteOffset = intrinsic(DataView.prototype, 'byteOffset');
const dvByteLength = intrinsic(DataView.prototype, 'byteLength');
const U8 = Uint8Array;
const isView = ArrayBuffer.isView;

/** The TypedArray class name of `x` from its internal slot ('Float32Array'...), or undefined. */
export function typedArrayKind(x) {
  return isView(x) ? taKind(x) : undefined;
}

/** Element count of a TypedArray from its internal slot (0 once detached). */
export function typedArrayLength(x) {
  return taLength(x);
}

/** Byte length of a TypedArray from its internal slot (0 once detached). */
export function typedArrayByteLength(x) {
  return taByteLength(x);
}

/**
 * A fresh Uint8Array over exactly the bytes a TypedArray or DataView holds
 * (buffer, offset and length read from internal slots), or null when `x`
 * is neither. Throws WasmqError (WQ_ERR_INVALID_ARG) naming `what` when its
 * buffer was detached or shrunk away.
 */
export function bytesOfView(x, what) {
  if (!isView(x)) return null;
  const typed = taKind(x) !== undefined;
  const buffer = typed ? taBuffer(x) : dvBuffer(x);
  try {
    return new U8(buffer, typed ? taByteOffset(x) : dvByteOffset(x), typed ? taByteLength(x) : dvByteLength(x));
  } catch (e) {
    throw new WasmqError(`${what}: its ArrayBuffer is detached or was resized away (${e.message})`);
  }
}

/** Whether the TypedArray kind `kind` (typedArrayKind) holds dtype `d`. */
export function kindMatchesDtype(kind, d) {
  if (d.name === 'uint8' || d.name === 'bool') return kind === 'Uint8Array' || kind === 'Uint8ClampedArray';
  return kind === d.array.name;
}

/** Whether `data` is the TypedArray class used for dtype `d` (its internal slot, not its tag). */
export function arrayMatchesDtype(data, d) {
  return kindMatchesDtype(typedArrayKind(data), d);
}

/** Name of a TypedArray's class for messages ('Float64Array', 'Array'...). */
export function arrayKind(data) {
  if (isView(data)) return taKind(data) ?? 'DataView';
  if (Array.isArray(data)) return 'Array';
  return data === null ? 'null' : typeof data;
}

/** Element count of a concrete shape (1 for a scalar). */
export function numel(dims) {
  let n = 1;
  for (const d of dims) n *= d;
  return n;
}
