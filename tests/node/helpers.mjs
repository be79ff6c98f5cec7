// Shared helpers for the node:test suites (not a test file itself).
import path from 'node:path';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { DTYPES, dtypeFromCode } from '../../src/js/dtypes.mjs';

export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const SHARED = process.env.WQ_SHARED_DIR ? path.resolve(process.env.WQ_SHARED_DIR) : path.resolve(REPO, '../shared');
export const MODELS = path.join(SHARED, 'models');
export const CLI = path.join(REPO, 'src/js/cli.mjs');
export const NATIVE_CLI = path.resolve(REPO, process.env.WQ_NATIVE_BUILD ?? 'build', 'wasmq');

// --- protobuf wire format (just enough for TensorProto and building models) ---

function readVarint(buf, pos) {
  let value = 0n;
  let shift = 0n;
  for (;;) {
    if (pos >= buf.length) throw new Error('protobuf: truncated varint');
    const b = buf[pos++];
    value |= BigInt(b & 0x7f) << shift;
    if (!(b & 0x80)) return [value, pos];
    shift += 7n;
  }
}

/** Yields [field, wireType, value] where value is a BigInt (varint/fixed) or a Uint8Array (length-delimited). */
function* fields(buf) {
  let pos = 0;
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
      yield [field, wire, buf.subarray(pos, pos + Number(len))];
      pos += Number(len);
    } else if (wire === 5) {
      yield [field, wire, buf.subarray(pos, pos + 4)];
      pos += 4;
    } else if (wire === 1) {
      yield [field, wire, buf.subarray(pos, pos + 8)];
      pos += 8;
    } else throw new Error(`protobuf: wire type ${wire}`);
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

/** Decodes a serialized ONNX TensorProto (a test_data_set_N/input_N.pb file) into {name, dtype, dims, data}. */
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
  }
  const dtype = dtypeFromCode(code);
  if (!dtype) throw new Error(`TensorProto dtype ${code} not supported by the tests`);
  const count = dims.reduce((a, b) => a * b, 1);
  let data;
  if (raw) {
    data = new dtype.array(raw.slice().buffer, 0, count);
  } else if (dtype.name === 'float32') data = Float32Array.from(floats);
  else if (dtype.name === 'int64') data = BigInt64Array.from(int64s);
  else if (dtype.name === 'uint64') data = BigUint64Array.from(int64s.map((x) => BigInt.asUintN(64, x)));
  else data = dtype.array.from(int32s);
  if (data.length !== count) throw new Error(`TensorProto ${name}: ${data.length} elements for dims [${dims}]`);
  return { name, dtype: dtype.name, dims, data };
}

/** Reads input_N.pb / output_N.pb of a test_data_set folder. */
export function readDataSet(dir) {
  const read = (prefix) => {
    const out = [];
    for (let n = 0; existsSync(path.join(dir, `${prefix}_${n}.pb`)); n++) {
      out.push(decodeTensorProto(readFileSync(path.join(dir, `${prefix}_${n}.pb`))));
    }
    return out;
  };
  return { inputs: read('input'), outputs: read('output') };
}

export function dataSetDirs(modelDir) {
  return readdirSync(modelDir)
    .filter((f) => /^test_data_set_\d+$/.test(f))
    .sort((a, b) => Number(a.slice(14)) - Number(b.slice(14)))
    .map((f) => path.join(modelDir, f));
}

// --- tiny ONNX model builder (for error-path tests) ---------------------------

function varint(n) {
  let v = BigInt(n);
  const out = [];
  do {
    let b = Number(v & 0x7fn);
    v >>= 7n;
    if (v) b |= 0x80;
    out.push(b);
  } while (v);
  return out;
}

const key = (field, wire) => varint((field << 3) | wire);
const int = (field, n) => [...key(field, 0), ...varint(n)];
const bytesField = (field, bytes) => [...key(field, 2), ...varint(bytes.length), ...bytes];
const str = (field, s) => bytesField(field, [...new TextEncoder().encode(s)]);

function valueInfo(name, dtypeName, shape) {
  const dims = shape.map((d) => bytesField(1, typeof d === 'number' ? int(1, d) : str(2, d)));
  const tensorType = [...int(1, DTYPES[dtypeName].code), ...bytesField(2, dims.flat())];
  return [...str(1, name), ...bytesField(2, bytesField(1, tensorType))];
}

/**
 * Encodes a one-graph ONNX model. nodes: [{op, name, inputs, outputs}],
 * inputs/outputs: [{name, dtype, shape}] (shape entries: number or dim_param).
 */
export function buildModel({ nodes, inputs, outputs, opset = 13 }) {
  const graph = [
    ...nodes.flatMap((n) =>
      bytesField(1, [...n.inputs.flatMap((i) => str(1, i)), ...n.outputs.flatMap((o) => str(2, o)), ...str(3, n.name), ...str(4, n.op)]),
    ),
    ...str(2, 'test_graph'),
    ...inputs.flatMap((t) => bytesField(11, valueInfo(t.name, t.dtype, t.shape))),
    ...outputs.flatMap((t) => bytesField(12, valueInfo(t.name, t.dtype, t.shape))),
  ];
  const model = [...int(1, 8), ...str(2, 'wasmq-tests'), ...bytesField(7, graph), ...bytesField(8, [...str(1, ''), ...int(2, opset)])];
  return new Uint8Array(model);
}

// --- comparison -------------------------------------------------------------

/**
 * Compares two arrays elementwise with |got - want| <= atol + rtol * |want|.
 * Returns {ok, maxAbs, worst: {index, got, want}}.
 */
export function compareClose(got, want, { rtol = 1e-3, atol = 1e-4 } = {}) {
  if (got.length !== want.length) return { ok: false, maxAbs: Infinity, worst: { index: -1, got: got.length, want: want.length } };
  let ok = true;
  let maxAbs = 0;
  let worst = null;
  for (let i = 0; i < want.length; i++) {
    const g = Number(got[i]);
    const w = Number(want[i]);
    if (Number.isNaN(w) && Number.isNaN(g)) continue;
    const diff = Math.abs(g - w);
    if (!(diff <= atol + rtol * Math.abs(w))) {
      if (ok) worst = { index: i, got: g, want: w };
      ok = false;
    }
    if (diff > maxAbs || Number.isNaN(diff)) maxAbs = Number.isNaN(diff) ? Infinity : diff;
  }
  return { ok, maxAbs, worst };
}

export function argmax(data) {
  let best = 0;
  for (let i = 1; i < data.length; i++) if (Number(data[i]) > Number(data[best])) best = i;
  return best;
}
