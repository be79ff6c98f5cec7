// Decoder for one serialized ONNX TensorProto (the test_data_set_N/input_K.pb
// files of ONNX test data), in plain JS so Node tools can read test data
// without the wasm core. Fields read: dims (1), data_type (2), float_data (4),
// int32_data (5), int64_data (7), name (8), raw_data (9), data_location (14).

import { dtypeFromCode, dtypeNameOfCode, numel } from './dtypes.mjs';

export class TensorProtoError extends Error {
  constructor(message) {
    super(message);
    this.name = 'TensorProtoError';
  }
}

function readVarint(buf, pos) {
  let value = 0n;
  let shift = 0n;
  for (;;) {
    if (pos >= buf.length || shift > 63n) throw new TensorProtoError('TensorProto: truncated or overlong varint');
    const b = buf[pos++];
    value |= BigInt(b & 0x7f) << shift;
    if (!(b & 0x80)) return [value, pos];
    shift += 7n;
  }
}

/** Yields [field, wireType, value]: a BigInt (varint) or a Uint8Array view (other wire types). */
export function* fields(buf) {
  let pos = 0;
  const take = (len) => {
    if (len > buf.length - pos) throw new TensorProtoError('TensorProto: truncated field');
    const bytes = buf.subarray(pos, pos + len);
    pos += len;
    return bytes;
  };
  while (pos < buf.length) {
    let key;
    [key, pos] = readVarint(buf, pos);
    const field = Number(key >> 3n);
    const wire = Number(key & 7n);
    if (wire === 0) {
      let v;
      [v, pos] = readVarint(buf, pos);
      yield [field, wire, v];
    } else if (wire === 2) {
      let len;
      [len, pos] = readVarint(buf, pos);
      yield [field, wire, take(Number(len))];
    } else if (wire === 5) yield [field, wire, take(4)];
    else if (wire === 1) yield [field, wire, take(8)];
    else throw new TensorProtoError(`TensorProto: unknown wire type ${wire}`);
  }
}

function packedVarints(bytes) {
  const out = [];
  let pos = 0;
  while (pos < bytes.length) {
    let v;
    [v, pos] = readVarint(bytes, pos);
    out.push(v);
  }
  return out;
}

const toSigned64 = (v) => BigInt.asIntN(64, v);

/**
 * Decodes TensorProto bytes into { name, dtype, dims, data } (data a fresh
 * TypedArray of the runtime's dtype set). Throws TensorProtoError for bytes
 * that are not a well-formed tensor, external data and unsupported dtypes.
 */
export function decodeTensorProto(bytes) {
  // A plain view (Buffer.slice would not copy below).
  const buf = ArrayBuffer.isView(bytes) ? new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength) : new Uint8Array(bytes);
  const dims = [];
  let code = 0;
  let name = '';
  let raw = null;
  const floats = [];
  const int32s = [];
  const int64s = [];
  for (const [field, wire, v] of fields(buf)) {
    if (field === 1) {
      if (wire === 2) dims.push(...packedVarints(v).map((x) => Number(toSigned64(x))));
      else dims.push(Number(toSigned64(v)));
    } else if (field === 2) code = Number(v);
    else if (field === 4) {
      const dv = new DataView(v.buffer, v.byteOffset, v.byteLength);
      if (wire === 2) for (let i = 0; i + 4 <= v.length; i += 4) floats.push(dv.getFloat32(i, true));
      else floats.push(dv.getFloat32(0, true));
    } else if (field === 5) int32s.push(...(wire === 2 ? packedVarints(v) : [v]).map((x) => Number(BigInt.asIntN(32, x))));
    else if (field === 7) int64s.push(...(wire === 2 ? packedVarints(v) : [v]).map(toSigned64));
    else if (field === 8) name = new TextDecoder().decode(v);
    else if (field === 9) raw = v;
    else if (field === 14 && v === 1n) throw new TensorProtoError('TensorProto: external data is not supported');
  }
  if (dims.some((d) => d < 0 || !Number.isSafeInteger(d))) throw new TensorProtoError(`TensorProto '${name}': bad dims [${dims}]`);
  const dtype = dtypeFromCode(code);
  if (!dtype) throw new TensorProtoError(`TensorProto '${name}': dtype ${dtypeNameOfCode(code)} is not supported`);
  const count = numel(dims);
  let data;
  if (raw) {
    if (raw.length !== count * dtype.size) {
      throw new TensorProtoError(`TensorProto '${name}': raw_data is ${raw.length} bytes, dims [${dims}] need ${count * dtype.size}`);
    }
    data = new dtype.array(raw.slice().buffer, 0, count);
  } else if (dtype.name === 'float32') data = Float32Array.from(floats);
  else if (dtype.name === 'int64') data = BigInt64Array.from(int64s);
  else if (dtype.name === 'uint64') data = BigUint64Array.from(int64s.map((x) => BigInt.asUintN(64, x)));
  else data = dtype.array.from(int32s);
  if (data.length !== count) throw new TensorProtoError(`TensorProto '${name}': ${data.length} elements for dims [${dims}]`);
  return { name, dtype: dtype.name, dims, data };
}
