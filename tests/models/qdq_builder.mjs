// Builds QDQ test graphs the way onnxruntime's quantizer and PyTorch's export
// write them: a float graph (FloatGraph), activation ranges calibrated by
// running it in onnxruntime-node on the seeded inputs the tests use
// (calibrate), and its QDQ form (quantize): affine int8/uint8 activations,
// symmetric int8 [-127, 127] per-channel weights, int32 biases at s_x * s_w.
// Used by make_qdq_graphs.mjs (the committed graphs) and the differential
// tests (random graphs).
import { createRequire } from 'node:module';
import { mulberry32, randomArray } from '../../src/js/random.mjs';

const ort = createRequire(import.meta.url)('onnxruntime-node');

// --- protobuf encoding -------------------------------------------------------

function varint(n) {
  let v = BigInt.asUintN(64, BigInt(n));
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
const bytes = (field, b) => [...key(field, 2), ...varint(b.length), ...b];
const str = (field, s) => bytes(field, [...new TextEncoder().encode(s)]);
const f32 = (field, x) => {
  const b = new Uint8Array(4);
  new DataView(b.buffer).setFloat32(0, x, true);
  return [...key(field, 5), ...b];
};

const DT = { float: 1, uint8: 2, int8: 3, int32: 6, int64: 7 };

function tensorProto(name, dtype, dims, data) {
  const raw = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  return [...dims.flatMap((d) => int(1, d)), ...int(2, DT[dtype]), ...str(8, name), ...bytes(9, [...raw])];
}

function attribute(name, v) {
  const a = str(1, name);
  if (typeof v === 'string') return [...a, ...int(20, 3), ...bytes(4, [...new TextEncoder().encode(v)])];
  if (Array.isArray(v)) return [...a, ...int(20, 7), ...v.flatMap((x) => int(8, x))];
  if (v && v.float !== undefined) return [...a, ...int(20, 1), ...f32(2, v.float)];
  return [...a, ...int(20, 2), ...int(3, v)];
}

function valueInfo(name, dtype, shape) {
  const t = [...int(1, DT[dtype])];
  if (shape) t.push(...bytes(2, shape.flatMap((d) => bytes(1, int(1, d)))));
  return [...str(1, name), ...bytes(2, bytes(1, t))];
}

// Nodes may name a domain (n.domain, e.g. 'com.microsoft' for onnxruntime's
// contrib ops); extraOpsets lists [domain, version] imports besides ai.onnx.
export function encodeModel({ nodes, initializers, inputs, outputs, opset, extraOpsets = [] }) {
  const graph = [
    ...nodes.flatMap((n) =>
      bytes(1, [
        ...n.inputs.flatMap((i) => str(1, i)),
        ...n.outputs.flatMap((o) => str(2, o)),
        ...str(3, n.name),
        ...str(4, n.op),
        ...(n.domain ? str(7, n.domain) : []),
        ...Object.entries(n.attrs ?? {}).flatMap(([k, v]) => bytes(5, attribute(k, v))),
      ]),
    ),
    ...str(2, 'wasmq_lowering_test'),
    ...initializers.flatMap((t) => bytes(5, tensorProto(t.name, t.dtype, t.dims, t.data))),
    ...inputs.flatMap((t) => bytes(11, valueInfo(t.name, t.dtype, t.shape))),
    ...outputs.flatMap((t) => bytes(12, valueInfo(t.name, t.dtype, t.shape))),
  ];
  return new Uint8Array([...int(1, 8), ...str(2, 'wasmq-tests'), ...bytes(7, graph), ...bytes(8, [...str(1, ''), ...int(2, opset)]),
    ...extraOpsets.flatMap(([domain, version]) => bytes(8, [...str(1, domain), ...int(2, version)])),
  ]);
}

// --- float graph description --------------------------------------------------

/**
 * A float graph: inputs, float constants, nodes. Per tensor options:
 *   noq: true            the tensor is not quantized (e.g. conv output into relu)
 *   share: 'other'       use the other tensor's qparams
 *   range: [lo, hi]      calibrate to this range instead of the observed one
 * Weights (Conv W, Gemm/MatMul B) get { axis } for their per-channel axis;
 * biases { bias: true } are int32 at s_x * s_w, or stay float with { floatBias: true }.
 */
export class FloatGraph {
  constructor(name, actDtype, opset = 14) {
    Object.assign(this, { name, actDtype, opset, inputs: [], consts: new Map(), nodes: [], outputs: [], opts: new Map() });
    this.rand = mulberry32(12345);
  }
  input(name, shape, opts = {}) {
    this.inputs.push({ name, shape });
    this.opts.set(name, opts);
  }
  const(name, dims, data, opts = {}) {
    this.consts.set(name, { name, dims, data: data instanceof Float32Array || data instanceof BigInt64Array ? data : Float32Array.from(data), opts });
  }
  /** Random float constant, uniform in [-amp, amp). */
  weight(name, dims, amp, opts = {}) {
    const n = dims.reduce((a, b) => a * b, 1);
    const data = new Float32Array(n);
    for (let i = 0; i < n; i++) data[i] = ((this.rand() >>> 8) / 16777216 * 2 - 1) * amp;
    this.const(name, dims, data, opts);
  }
  ints(name, values) {
    this.consts.set(name, { name, dims: [values.length], data: BigInt64Array.from(values.map(BigInt)), opts: {}, dtype: 'int64' });
  }
  node(op, inputs, output, attrs = {}, opts = {}) {
    this.nodes.push({ op, name: `${op}_${output}`, inputs, outputs: [output], attrs });
    this.opts.set(output, opts);
  }
  output(name) {
    this.outputs.push(name);
  }
  constTensors() {
    return [...this.consts.values()].map((c) => ({ name: c.name, dtype: c.dtype ?? 'float', dims: c.dims, data: c.data }));
  }
  floatModel(extraOutputs = []) {
    return encodeModel({
      nodes: this.nodes,
      initializers: this.constTensors(),
      inputs: this.inputs.map((t) => ({ name: t.name, dtype: 'float', shape: t.shape })),
      outputs: [...this.outputs, ...extraOutputs].map((name) => ({ name, dtype: 'float' })),
      opset: this.opset,
    });
  }
}

export const feedsOf = (g) =>
  Object.fromEntries(g.inputs.map((t, i) => [t.name, new ort.Tensor('float32', randomArray('float32', t.shape.reduce((a, b) => a * b, 1), i), t.shape)]));

/** min/max of every activation over the seeded input (input k uses seed k, as the tests do). */
export async function calibrate(g) {
  const acts = g.nodes.map((n) => n.outputs[0]).filter((t) => !g.outputs.includes(t));
  const session = await ort.InferenceSession.create(g.floatModel(acts), { logSeverityLevel: 3 });
  const feeds = feedsOf(g);
  const results = await session.run(feeds);
  const ranges = new Map();
  const observe = (name, data) => {
    let lo = Infinity, hi = -Infinity;
    for (const v of data) (lo = Math.min(lo, v)), (hi = Math.max(hi, v));
    ranges.set(name, [lo, hi]);
  };
  for (const [name, t] of Object.entries(feeds)) observe(name, t.data);
  for (const [name, t] of Object.entries(results)) observe(name, t.data);
  return ranges;
}

// The smallest power of two s with amax / s <= 127 (Vitis AI's scales).
const pow2Scale = (amax) => 2 ** Math.ceil(Math.log2(Math.max(amax, 1e-6) / 127));

export function actQparams(dtype, [lo, hi], pow2 = false) {
  if (pow2) return { dtype: 'int8', scale: pow2Scale(Math.max(-lo, hi)), zp: 0 };
  const [qmin, qmax] = dtype === 'int8' ? [-128, 127] : [0, 255];
  const rmin = Math.min(lo, 0), rmax = Math.max(hi, 0);
  const scale = Math.fround(Math.max((rmax - rmin) / (qmax - qmin), 1e-6));
  const zp = Math.min(qmax, Math.max(qmin, Math.round(qmin - rmin / scale)));
  return { dtype, scale, zp };
}

export const roundHalfEven = (x) => {
  const r = Math.round(x);
  return Math.abs(x % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r;
};

/** Symmetric int8 [-127, 127] weights, one scale per index along `axis` (or per tensor). */
export function quantizeWeight(c, axis, pow2 = false) {
  const dims = c.dims, n = c.data.length;
  const channels = axis === null ? 1 : dims[axis];
  const inner = axis === null ? 1 : dims.slice(axis + 1).reduce((a, b) => a * b, 1);
  const chOf = (i) => (axis === null ? 0 : Math.floor(i / inner) % channels);
  const amax = new Float64Array(channels);
  for (let i = 0; i < n; i++) amax[chOf(i)] = Math.max(amax[chOf(i)], Math.abs(c.data[i]));
  const scales = Float32Array.from(amax, (a) => (pow2 ? pow2Scale(a) : Math.fround(Math.max(a, 1e-6) / 127)));
  const q = new Int8Array(n);
  for (let i = 0; i < n; i++) q[i] = Math.max(-127, Math.min(127, roundHalfEven(c.data[i] / scales[chOf(i)])));
  return { q, scales };
}

/**
 * The QDQ graph of g with calibrated ranges. options.exposeIntermediates adds
 * the dequantized value of every quantized node output as a graph output too
 * (named `${tensor}_dq`), for comparing runs node by node. options.pow2:
 * power-of-two scales everywhere, int8 activations with zero point 0
 * (Vitis AI's form).
 */
export function quantize(g, ranges, options = {}) {
  const nodes = [], inits = [];
  const qp = new Map();
  const qparamsOf = (t) => {
    if (qp.has(t)) return qp.get(t);
    const o = g.opts.get(t) ?? {};
    const p = o.share ? qparamsOf(o.share) : actQparams(o.dtype ?? g.actDtype, o.range ?? ranges.get(t), options.pow2);
    qp.set(t, p);
    return p;
  };
  const addQdq = (t, p, qName, dqName, dqScale = p.scale) => {
    const s = `${t}_scale`, z = `${t}_zp`;
    inits.push({ name: s, dtype: 'float', dims: [], data: Float32Array.of(p.scale) });
    inits.push({ name: z, dtype: p.dtype, dims: [], data: p.dtype === 'int8' ? Int8Array.of(p.zp) : Uint8Array.of(p.zp) });
    nodes.push({ op: 'QuantizeLinear', name: `Q_${t}`, inputs: [t, s, z], outputs: [qName] });
    let ds = s;
    if (dqScale !== p.scale) {
      // A DequantizeLinear that reads the codes with another scale than they were written with.
      ds = `${t}_dq_scale`;
      inits.push({ name: ds, dtype: 'float', dims: [], data: Float32Array.of(dqScale) });
    }
    nodes.push({ op: 'DequantizeLinear', name: `DQ_${t}`, inputs: [qName, ds, z], outputs: [dqName] });
  };
  // What each float tensor is read as.
  const readAs = new Map();
  for (const t of g.inputs) {
    if (g.opts.get(t.name)?.noq) continue;
    addQdq(t.name, qparamsOf(t.name), `${t.name}_q`, `${t.name}_dq`);
    readAs.set(t.name, `${t.name}_dq`);
  }
  const weightRole = (n, k) => (['Conv'].includes(n.op) && k === 1) || (['Gemm', 'MatMul'].includes(n.op) && k === 1);
  const biasRole = (n, k) => (n.op === 'Conv' || n.op === 'Gemm') && k === 2;
  const usedConsts = new Set();
  for (const n of g.nodes) {
    const inputs = n.inputs.map((t, k) => {
      const c = g.consts.get(t);
      if (!c) return readAs.get(t) ?? t;
      if (weightRole(n, k) && !c.opts.float) {
        const axis = c.opts.axis === undefined ? 0 : c.opts.axis;
        const { q, scales } = quantizeWeight(c, axis, options.pow2);
        const name = `${t}_${n.name}`;
        inits.push({ name: `${name}_q`, dtype: 'int8', dims: c.dims, data: q });
        inits.push({ name: `${name}_s`, dtype: 'float', dims: axis === null ? [] : [scales.length], data: scales });
        inits.push({ name: `${name}_z`, dtype: 'int8', dims: axis === null ? [] : [scales.length], data: new Int8Array(scales.length) });
        nodes.push({ op: 'DequantizeLinear', name: `DQ_${name}`, inputs: [`${name}_q`, `${name}_s`, `${name}_z`], outputs: [`${name}_dq`], attrs: axis === null ? {} : { axis } });
        n.weightScales = scales;
        return `${name}_dq`;
      }
      if (biasRole(n, k) && !c.opts.floatBias) {
        const sx = qparamsOf(n.inputs[0]).scale;
        const sw = n.weightScales;
        const count = c.data.length;
        const scales = Float32Array.from({ length: count }, (_, i) => Math.fround(sx * sw[sw.length === 1 ? 0 : i]));
        const q = Int32Array.from(c.data, (v, i) => roundHalfEven(v / scales[i]));
        const name = `${t}_${n.name}`;
        const perTensor = scales.every((s) => s === scales[0]) && c.opts.perTensorBias;
        inits.push({ name: `${name}_q`, dtype: 'int32', dims: c.dims, data: q });
        inits.push({ name: `${name}_s`, dtype: 'float', dims: perTensor ? [] : [count], data: perTensor ? scales.subarray(0, 1) : scales });
        nodes.push({ op: 'DequantizeLinear', name: `DQ_${name}`, inputs: [`${name}_q`, `${name}_s`], outputs: [`${name}_dq`], attrs: perTensor ? {} : { axis: c.dims.length - 1 } });
        return `${name}_dq`;
      }
      usedConsts.add(t);
      return t;
    });
    const out = n.outputs[0];
    const isOutput = g.outputs.includes(out);
    const produced = isOutput ? `${out}_f` : out;
    nodes.push({ ...n, inputs, outputs: [produced] });
    if (g.opts.get(out)?.noq) {
      readAs.set(out, produced);
      continue;
    }
    const p = qparamsOf(out);
    const dqScale = g.opts.get(out)?.dqScaleFactor ? Math.fround(p.scale * g.opts.get(out).dqScaleFactor) : p.scale;
    addQdq(produced, p, `${out}_q`, isOutput ? out : `${out}_dq`, dqScale);
    readAs.set(out, isOutput ? out : `${out}_dq`);
  }
  for (const t of usedConsts) {
    const c = g.consts.get(t);
    inits.push({ name: t, dtype: c.dtype ?? 'float', dims: c.dims, data: c.data });
  }
  const intermediates = g.nodes.map((n) => n.outputs[0]).filter((t) => !g.outputs.includes(t) && !g.opts.get(t)?.noq);
  const model = encodeModel({
    nodes,
    initializers: inits,
    inputs: g.inputs.map((t) => ({ name: t.name, dtype: 'float', shape: t.shape })),
    outputs: [...g.outputs, ...(options.exposeIntermediates ? intermediates.map((t) => `${t}_dq`) : [])].map((name) => ({ name, dtype: 'float' })),
    opset: g.opset,
  });
  // The quantization step of each quantized node output (the scale its DequantizeLinear reads with).
  const quantized = [...g.outputs, ...intermediates].filter((o) => !g.opts.get(o)?.noq);
  model.steps = Object.fromEntries(quantized.map((o) => [o, qparamsOf(o).scale]));
  model.qparams = Object.fromEntries(quantized.map((o) => [o, qparamsOf(o)]));
  return model;
}
