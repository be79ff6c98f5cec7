// Int8 lowering equivalence (issue 3 item 6). For every quantized model in
// ../shared/models (synthetic/*_qdq*, synthetic/*_qlinear,
// mnist-8-dynamic-int8) and the QDQ test graphs in tests/models (seed 003's
// repro, every lowered op, the edge cases), on a seeded random input (input k: mulberry32
// seed k, uniform [0, 1), src/js/random.mjs):
//   (a) the lowered int8 graph — in wasm and natively (native CLI) — matches
//       the unlowered graph executed op by op with float Q/DQ semantics
//       (native CLI --no-lower) within one quantization step of the output;
//   (b) it matches onnxruntime-node (x64quantprecision, see
//       shared/TOOLCHAIN.md) within one step on >= 99.9% of elements;
//   and the lowering really happened: `wasmq info --lowered` lists the
//   expected int8 ops and, for the QDQ graphs, no float node.
// For the pairs with a float model (*_f32) it prints cosine similarity and
// max relative error (max |int8 - float| / max |float|) of int8 vs float.
// The quantization step of an output is the scale of the DequantizeLinear
// that produces it (mnist-8-dynamic-int8: one accumulator unit, the product
// of the two scales its final Mul applies).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import os from 'node:os';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { load } from '../../src/js/index.mjs';
import { encodeNpy, parseNpy } from '../../src/js/npy.mjs';
import { randomArray } from '../../src/js/random.mjs';
import { safeFileName } from '../../src/js/cli.mjs';
import { MODELS, NATIVE_CLI, REPO, decodeTensorProto } from './helpers.mjs';

const ort = createRequire(import.meta.url)('onnxruntime-node');
const ORT_OPTIONS = { logSeverityLevel: 3, extra: { session: { x64quantprecision: '1' } } };
const LOCAL = path.join(REPO, 'tests/models');

const CASES = [
  { file: path.join(MODELS, 'synthetic/smallcnn_qdq.onnx'), float: path.join(MODELS, 'synthetic/smallcnn_f32.onnx'), ops: ['QConv', 'QGemm', 'QGlobalAveragePool'], allInt8: true },
  ...['matmul_1x1024x1024', 'matmul_256x256x256'].flatMap((m) =>
    ['qdq', 'qdq_pertensor', 'qlinear'].map((form) => ({
      file: path.join(MODELS, `synthetic/${m}_${form}.onnx`),
      float: path.join(MODELS, `synthetic/${m}_f32.onnx`),
      ops: ['QGemm'],
      allInt8: true,
    })),
  ),
  {
    file: path.join(MODELS, 'mnist-8-dynamic-int8/model.onnx'),
    ops: ['QConvToFloat', 'QGemmToFloat'],
    allInt8: true, // the dynamic-quantization rescale (Cast/Mul/Add/Relu) fused into the int8 ops
    step: (inits) => inits.get('Pooling160_Output_0_reshape0_scale')[0] * inits.get('Parameter193_reshape1_scale')[0],
  },
  { file: path.join(LOCAL, 'seed003_qdq.onnx'), float: path.join(LOCAL, 'seed003_f32.onnx'), ops: ['QConv'], allInt8: true },
  {
    file: path.join(LOCAL, 'ops_qdq.onnx'),
    float: path.join(LOCAL, 'ops_f32.onnx'),
    ops: ['QConv', 'QGemm', 'QAdd', 'QMul', 'QLookup', 'QAveragePool', 'QGlobalAveragePool', 'QConcat'],
    allInt8: true,
  },
  // Conv into Softmax, a relu after a conv with its own Q, codes read back
  // with another scale: those stay float (with the reason); the rest lowers.
  // (No float comparison: reading codes at twice their scale is deliberate.)
  { file: path.join(LOCAL, 'edge_qdq.onnx'), ops: ['QConv', 'QGemm', 'QLookup'], allInt8: false },
];

// --- just enough ONNX reading: inputs, initializers, nodes -------------------

function* fields(buf) {
  let pos = 0;
  const varint = () => {
    let v = 0n, shift = 0n;
    for (;;) {
      const b = buf[pos++];
      v |= BigInt(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
      shift += 7n;
    }
  };
  while (pos < buf.length) {
    const k = varint();
    const field = Number(k >> 3n), wire = Number(k & 7n);
    if (wire === 0) yield [field, varint()];
    else if (wire === 2) {
      const len = Number(varint());
      yield [field, buf.subarray(pos, pos + len)];
      pos += len;
    } else if (wire === 5) (pos += 4), yield [field, null];
    else if (wire === 1) (pos += 8), yield [field, null];
    else throw new Error(`wire type ${wire}`);
  }
}

const text = (b) => new TextDecoder().decode(b);

function readModel(file) {
  const bytes = readFileSync(file);
  let graph;
  for (const [f, v] of fields(bytes)) if (f === 7) graph = v;
  const nodes = [], inits = new Map(), inputs = [], outputs = [];
  const valueInfo = (b) => {
    let name = '', dims = [];
    for (const [f, v] of fields(b)) {
      if (f === 1) name = text(v);
      if (f === 2)
        for (const [f2, tt] of fields(v))
          if (f2 === 1)
            for (const [f3, shape] of fields(tt))
              if (f3 === 2) for (const [, dim] of fields(shape)) for (const [f5, dv] of fields(dim)) if (f5 === 1) dims.push(Number(dv));
    }
    return { name, dims };
  };
  for (const [f, v] of fields(graph)) {
    if (f === 1) {
      const n = { inputs: [], outputs: [], op: '' };
      for (const [f2, v2] of fields(v)) {
        if (f2 === 1) n.inputs.push(text(v2));
        if (f2 === 2) n.outputs.push(text(v2));
        if (f2 === 4) n.op = text(v2);
      }
      nodes.push(n);
    } else if (f === 5) {
      const t = decodeTensorProto(v);
      inits.set(t.name, t.data);
    } else if (f === 11) inputs.push(valueInfo(v));
    else if (f === 12) outputs.push(valueInfo(v));
  }
  return { nodes, inits, inputs: inputs.filter((i) => !inits.has(i.name)), outputs };
}

/** Quantization step of each graph output: the scale of its DequantizeLinear. */
function outputSteps(model, spec) {
  return model.outputs.map(({ name }) => {
    if (spec.step) return spec.step(model.inits);
    const dq = model.nodes.find((n) => n.op === 'DequantizeLinear' && n.outputs[0] === name);
    assert.ok(dq, `${name}: not produced by a DequantizeLinear`);
    const scale = model.inits.get(dq.inputs[1]);
    assert.equal(scale.length, 1, `${name}: per-tensor output scale expected`);
    return scale[0];
  });
}

// --- runners ---------------------------------------------------------------

function feedsFor(model) {
  return Object.fromEntries(
    model.inputs.map((inp, k) => [inp.name, { data: randomArray('float32', inp.dims.reduce((a, b) => a * b, 1), k), dims: inp.dims }]),
  );
}

function runNative(file, feeds, extra = []) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'wq-equiv-'));
  try {
    const args = ['run', file, '--out', dir, ...extra];
    for (const [name, t] of Object.entries(feeds)) {
      const f = path.join(dir, `in_${safeFileName(name)}.npy`);
      writeFileSync(f, encodeNpy({ dtype: 'float32', dims: t.dims, data: t.data }));
      args.push('--input', `${name}=${f}`);
    }
    const r = spawnSync(NATIVE_CLI, args, { encoding: 'utf8' });
    assert.equal(r.status, 0, `native run ${path.basename(file)} ${extra.join(' ')}: ${r.stderr}`);
    const model = readModel(file);
    return Object.fromEntries(model.outputs.map(({ name }) => [name, parseNpy(readFileSync(path.join(dir, `${safeFileName(name)}.npy`))).data]));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function runWasm(file, feeds) {
  const m = await load(file);
  try {
    const out = await m.run(feeds);
    return Object.fromEntries(Object.entries(out).map(([k, v]) => [k, v.data]));
  } finally {
    m.dispose();
  }
}

async function runOrt(file, feeds) {
  const session = await ort.InferenceSession.create(file, ORT_OPTIONS);
  const out = await session.run(Object.fromEntries(Object.entries(feeds).map(([k, v]) => [k, new ort.Tensor('float32', v.data, v.dims)])));
  return Object.fromEntries(Object.entries(out).map(([k, v]) => [k, v.data]));
}

// --- metrics -----------------------------------------------------------------

/** max |a - b| in steps, and the fraction of elements within one step. */
function stepDiff(a, b, step) {
  assert.equal(a.length, b.length);
  let max = 0, within = 0;
  for (let i = 0; i < a.length; i++) {
    const d = Math.abs(a[i] - b[i]) / step;
    if (d > max) max = d;
    if (d <= 1 + 1e-4) within++;
  }
  return { max, within: a.length ? within / a.length : 1 };
}

function floatMetrics(q, f) {
  let dot = 0, nq = 0, nf = 0, maxAbs = 0, maxRef = 0;
  for (let i = 0; i < f.length; i++) {
    dot += q[i] * f[i];
    nq += q[i] * q[i];
    nf += f[i] * f[i];
    maxAbs = Math.max(maxAbs, Math.abs(q[i] - f[i]));
    maxRef = Math.max(maxRef, Math.abs(f[i]));
  }
  return { cosine: dot / Math.sqrt(nq * nf), maxRel: maxAbs / maxRef };
}

const label = (file) => path.relative(path.dirname(path.dirname(file)), file);

for (const spec of CASES) {
  test(`int8 lowering equivalence: ${label(spec.file)}`, { skip: !existsSync(spec.file) && 'model missing' }, async (t) => {
    const model = readModel(spec.file);
    const steps = outputSteps(model, spec);
    const feeds = feedsFor(model);

    // The lowering happened (native and wasm load the same way).
    const info = spawnSync(NATIVE_CLI, ['info', spec.file, '--lowered'], { encoding: 'utf8' });
    assert.equal(info.status, 0, info.stderr);
    // QConv, QAveragePool... may run as their channels-last variants (layout pass).
    for (const op of spec.ops) assert.match(info.stdout, new RegExp(`wasmq\\.${op} `), `${op} missing after lowering`);
    if (spec.allInt8) assert.doesNotMatch(info.stdout, /\[float\]/, `a node stayed float:\n${info.stdout}`);

    const reference = runNative(spec.file, feeds, ['--no-lower']);
    const native = runNative(spec.file, feeds);
    const wasm = await runWasm(spec.file, feeds);
    const onnxruntime = await runOrt(spec.file, feeds);
    const floatOut = spec.float ? await runWasm(spec.float, feeds) : null;

    model.outputs.forEach(({ name }, k) => {
      const step = steps[k];
      const vsRefWasm = stepDiff(wasm[name], reference[name], step);
      const vsRefNative = stepDiff(native[name], reference[name], step);
      const vsOrt = stepDiff(wasm[name], onnxruntime[name], step);
      const nativeVsWasm = stepDiff(native[name], wasm[name], step);
      let line =
        `${label(spec.file)} ${name}: step ${step.toPrecision(6)}; vs op-by-op QDQ max ${vsRefWasm.max.toFixed(3)} steps (wasm), ` +
        `${vsRefNative.max.toFixed(3)} (native); vs onnxruntime max ${vsOrt.max.toFixed(3)} steps, ${(vsOrt.within * 100).toFixed(3)}% within 1 step`;
      if (floatOut && floatOut[name]) {
        const fm = floatMetrics(wasm[name], floatOut[name]);
        line += `; vs float model cosine ${fm.cosine.toFixed(6)}, max rel err ${(fm.maxRel * 100).toFixed(3)}%`;
        assert.ok(fm.cosine > 0.99, `${name}: cosine ${fm.cosine} vs the float model`);
      }
      t.diagnostic(line);
      assert.ok(vsRefWasm.max <= 1 + 1e-4, `${name}: wasm int8 is ${vsRefWasm.max} steps from the op-by-op QDQ graph`);
      assert.ok(vsRefNative.max <= 1 + 1e-4, `${name}: native int8 is ${vsRefNative.max} steps from the op-by-op QDQ graph`);
      assert.equal(nativeVsWasm.max, 0, `${name}: native and wasm int8 differ`);
      assert.ok(vsOrt.within >= 0.999, `${name}: only ${vsOrt.within * 100}% within one step of onnxruntime`);
    });
  });
}
