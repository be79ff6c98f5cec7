// Shared helpers for the node:test suites (not a test file itself).
import path from 'node:path';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { DTYPES } from '../../src/js/dtypes.mjs';
import { decodeTensorProto } from '../../src/js/tensor_proto.mjs';

export const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const SHARED = process.env.WQ_SHARED_DIR ? path.resolve(process.env.WQ_SHARED_DIR) : path.resolve(REPO, '../shared');
export const MODELS = path.join(SHARED, 'models');
export const CLI = path.join(REPO, 'src/js/cli.mjs');
export const NATIVE_CLI = path.resolve(REPO, process.env.WQ_NATIVE_BUILD ?? 'build', 'wasmq');

// Concrete shapes for the shared models whose inputs have symbolic dims that
// a generic guess would get wrong (an audio chunk shorter than the model's
// reflect padding, a text strip of a fixed height), by model folder name.
export const MODEL_INPUT_SHAPES = {
  'ppocr-mobile-v2-cls': { x: [1, 3, 48, 192] },
  'pytorch-super-resolution-depthtospace': { input: [1, 1, 224, 224] },
  // One 96 ms chunk of 16 kHz audio.
  'silero-vad-v2-micro': { input: [1, 1536] },
  'silero-vad-v3.1': { input: [1, 1536] },
};

// TensorProto decoding is the package's own.
export { decodeTensorProto };

/** The C sources (.c, .h, .inc) under dir, recursively, sorted: what the layering tests scan. */
export function cSources(dir) {
  const out = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...cSources(p));
    else if (/\.(c|h|inc)$/.test(e.name)) out.push(p);
  }
  return out.sort();
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

// AttributeProto: an integer (INT), a non-integer number (FLOAT), a string
// (STRING) or an array of strings (STRINGS).
function attribute(name, v) {
  if (Array.isArray(v)) return [...str(1, name), ...v.flatMap((s) => str(9, s)), ...int(20, 8)];
  if (typeof v === 'string') return [...str(1, name), ...str(4, v), ...int(20, 3)];
  if (Number.isInteger(v)) return [...str(1, name), ...int(3, v < 0 ? 2n ** 64n + BigInt(v) : v), ...int(20, 2)];
  const f = new Uint8Array(new Float32Array([v]).buffer);
  return [...str(1, name), ...key(2, 5), ...f, ...int(20, 1)];
}

// A float32 initializer TensorProto (raw_data).
function floatTensor(name, dims, data) {
  const raw = new Uint8Array(Float32Array.from(data).buffer);
  return [...dims.flatMap((d) => int(1, d)), ...int(2, 1), ...str(8, name), ...bytesField(9, [...raw])];
}

/**
 * Encodes a one-graph ONNX model. nodes: [{op, name, inputs, outputs, attrs}]
 * (attrs: {name: int | float | string | [string]}), inputs/outputs:
 * [{name, dtype, shape}] (shape entries: number or dim_param), initializers:
 * [{name, dims, data}] (float32).
 */
export function buildModel({ nodes, inputs, outputs, initializers = [], opset = 13 }) {
  const graph = [
    ...nodes.flatMap((n) =>
      bytesField(1, [
        ...n.inputs.flatMap((i) => str(1, i)),
        ...n.outputs.flatMap((o) => str(2, o)),
        ...str(3, n.name),
        ...str(4, n.op),
        ...Object.entries(n.attrs ?? {}).flatMap(([k, v]) => bytesField(5, attribute(k, v))),
      ]),
    ),
    ...str(2, 'test_graph'),
    ...initializers.flatMap((t) => bytesField(5, floatTensor(t.name, t.dims, t.data))),
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
