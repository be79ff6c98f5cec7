// What the decision records leave out, read from the ONNX file itself for
// the inspector's node panel: each node's attributes and the statistics of
// the weights it reads (shape, dtype, min/max/mean, a histogram), as model
// viewers show them. Plain JS (no core): nodes are found by their ONNX name,
// the records' `source_nodes`.
import { fields, decodeTensorProto } from '../tensor_proto.mjs';

const text = (bytes) => new TextDecoder().decode(bytes);
const f32 = (b) => new DataView(b.buffer, b.byteOffset, 4).getFloat32(0, true);

// Packed repeated varints (int64 attribute lists).
function varints(bytes) {
  const out = [];
  let pos = 0;
  while (pos < bytes.length) {
    let v = 0n;
    let shift = 0n;
    for (;;) {
      const b = bytes[pos++];
      v |= BigInt(b & 0x7f) << shift;
      shift += 7n;
      if (!(b & 0x80)) break;
    }
    out.push(BigInt.asIntN(64, v));
  }
  return out;
}

function attributeValue(bytes) {
  let name = '';
  const a = { ints: [], floats: [], strings: [] };
  for (const [field, wire, v] of fields(bytes)) {
    if (field === 1) name = text(v);
    else if (field === 2) a.f = f32(v);
    else if (field === 3) a.i = BigInt.asIntN(64, v);
    else if (field === 4) a.s = text(v);
    else if (field === 5) a.t = v;
    else if (field === 6) a.g = true;
    else if (field === 7) {
      if (wire === 2) for (let k = 0; k + 4 <= v.length; k += 4) a.floats.push(f32(v.subarray(k, k + 4)));
      else a.floats.push(f32(v));
    } else if (field === 8) a.ints.push(...(wire === 2 ? varints(v) : [BigInt.asIntN(64, v)]));
    else if (field === 9) a.strings.push(text(v));
  }
  let value;
  if (a.ints.length) value = `[${a.ints.join(', ')}]`;
  else if (a.floats.length) value = `[${a.floats.map((x) => Number(x.toPrecision(6))).join(', ')}]`;
  else if (a.strings.length) value = `[${a.strings.map((x) => JSON.stringify(x)).join(', ')}]`;
  else if (a.i !== undefined) value = String(a.i);
  else if (a.f !== undefined) value = String(Number(a.f.toPrecision(6)));
  else if (a.s !== undefined) value = JSON.stringify(a.s);
  else if (a.t) {
    try {
      const t = decodeTensorProto(a.t);
      value = `tensor ${t.dtype} [${t.dims.join(', ')}]`;
    } catch (e) {
      value = `tensor (${e.message})`;
    }
  } else if (a.g) value = 'graph';
  else value = '';
  return { name, value };
}

/**
 * The ONNX file's top-level graph: nodes by name ({op, domain, inputs,
 * attributes: [{name, value}]}) and initializers by name (the TensorProto
 * bytes, decoded on demand by weightStats). Throws on bytes that are no
 * ModelProto (the page only calls it for a model that loaded).
 */
export function readOnnxNodes(modelBytes) {
  const bytes = modelBytes instanceof Uint8Array ? modelBytes : new Uint8Array(modelBytes);
  const nodes = new Map();
  const initializers = new Map();
  for (const [field, , graph] of fields(bytes)) {
    if (field !== 7) continue;
    for (const [gf, , v] of fields(graph)) {
      if (gf === 1) {
        const n = { op: '', domain: '', name: '', inputs: [], attributes: [] };
        for (const [nf, , x] of fields(v)) {
          if (nf === 1) n.inputs.push(text(x));
          else if (nf === 3) n.name = text(x);
          else if (nf === 4) n.op = text(x);
          else if (nf === 7) n.domain = text(x);
          else if (nf === 5) n.attributes.push(attributeValue(x));
        }
        nodes.set(n.name, n);
      } else if (gf === 5) {
        for (const [tf, , x] of fields(v)) {
          if (tf === 8) {
            initializers.set(text(x), v);
            break;
          }
        }
      }
    }
  }
  return { nodes, initializers };
}

/**
 * Shape, dtype and value statistics of one initializer: min, max, mean,
 * the fraction of zeros and a histogram of `bins` equal-width bins over
 * [min, max]; null when the tensor cannot be decoded (say why in .error).
 */
export function weightStats(tensorBytes, bins = 16) {
  let t;
  try {
    t = decodeTensorProto(tensorBytes);
  } catch (e) {
    return { error: e.message };
  }
  const n = t.data.length;
  let min = Infinity;
  let max = -Infinity;
  let sum = 0;
  let zeros = 0;
  for (let i = 0; i < n; i++) {
    const x = Number(t.data[i]);
    if (x < min) min = x;
    if (x > max) max = x;
    sum += x;
    if (x === 0) zeros++;
  }
  const histogram = new Array(bins).fill(0);
  const width = max > min ? (max - min) / bins : 1;
  for (let i = 0; i < n; i++) histogram[Math.min(bins - 1, Math.floor((Number(t.data[i]) - min) / width))]++;
  return { name: t.name, dtype: t.dtype, dims: t.dims, count: n, min: n ? min : 0, max: n ? max : 0, mean: n ? sum / n : 0, zeros, histogram };
}
