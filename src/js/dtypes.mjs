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

/** Whether `data` is the TypedArray class used for dtype `d`. */
export function arrayMatchesDtype(data, d) {
  // The tag (not instanceof) also accepts arrays from other realms/workers.
  const tag = ArrayBuffer.isView(data) ? data[Symbol.toStringTag] : undefined;
  if (d.name === 'uint8' || d.name === 'bool') {
    return tag === 'Uint8Array' || tag === 'Uint8ClampedArray';
  }
  return tag === d.array.name;
}

/** Name of a TypedArray's class for messages ('Float64Array', 'Array'...). */
export function arrayKind(data) {
  if (ArrayBuffer.isView(data)) return data[Symbol.toStringTag] ?? 'DataView';
  if (Array.isArray(data)) return 'Array';
  return data === null ? 'null' : typeof data;
}

/** Element count of a concrete shape (1 for a scalar). */
export function numel(dims) {
  let n = 1;
  for (const d of dims) n *= d;
  return n;
}
