// Partition modes (load option `partition`, CLI --partition) and the
// decision records: reason codes and fields (not text), model.graphJson()
// byte-identical to `wasmq inspect --json` natively and through npx, and
// the same model planned twice giving the same bytes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { existsSync, readFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { load, WasmqError } from '../../src/js/index.mjs';
import { CLI, MODELS, NATIVE_CLI, REPO, SHARED } from './helpers.mjs';
import { randomArray } from '../../src/js/random.mjs';
import { capabilityLabel } from '../../src/js/graph/data.mjs';
import { legendHtml } from '../../src/js/graph/render.mjs';

const ort = createRequire(import.meta.url)('onnxruntime-node');
const EDGE = path.join(REPO, 'tests/models/edge_qdq.onnx');
const SEED003 = path.join(REPO, 'tests/models/seed003_qdq.onnx');
const SMALLCNN = path.join(MODELS, 'synthetic/smallcnn_qdq.onnx');
const KWS = path.join(SHARED, 'models-int8/mlperftiny-kws-dscnn-int8/model.onnx');
const MNIST = path.join(MODELS, 'mnist-8/model.onnx');

const byName = (g, name) => g.nodes.find((n) => n.name === name);

test("partition 'int' fails the load naming the node and its reason code", async () => {
  await assert.rejects(load(EDGE, { partition: 'int' }), (err) => {
    assert.ok(err instanceof WasmqError);
    assert.equal(err.code, 'WQ_ERR_UNSUPPORTED');
    // Decided by the lowering's own check before anything is rewritten, the
    // neighbours included: Conv_c1's result feeds the Softmax, not a
    // QuantizeLinear (the first node on the quantized path that stays float).
    assert.equal(err.node, 'Conv_c1');
    assert.match(err.message, /\[OUTPUT_NOT_QUANTIZED\]: stays float: its result 'c1' feeds Softmax 'Softmax_sm', not a QuantizeLinear/);
    return true;
  });
  // strictInt8 is the older spelling of the same mode.
  await assert.rejects(load(EDGE, { strictInt8: true }), (err) => err.node === 'Conv_c1');
  const m = await load(SMALLCNN, { partition: 'int' });
  try {
    const g = m.graph();
    assert.equal(g.mode, 'int');
    assert.equal(m.info.partition, 'int');
    assert.ok(g.nodes.every((n) => n.backend !== 'float'));
  } finally {
    m.dispose();
  }
  await assert.rejects(load(SMALLCNN, { partition: 'int8' }), /partition must be 'int', 'int\+fp' or 'fp'/);
});

test('legend.ops: the registry capability record of every op the graph runs, once, in the registry order', async () => {
  const m = await load(EDGE);
  try {
    const g = m.graph();
    const key = (o) => `${o.domain}.${o.op}`;
    // one entry per op the nodes run, sorted by (domain, op) as the registry (src/core/ops/ops.inc)
    const ops = [...new Set(g.nodes.map((n) => `${n.domain}.${n.op}`))];
    const cmp = (a, b) => (a < b ? -1 : a > b ? 1 : 0);
    ops.sort((a, b) => cmp(a.split('.')[0], b.split('.')[0]) || cmp(a.split('.')[1], b.split('.')[1]));
    assert.deepEqual(g.legend.ops.map(key), ops);
    const cap = (op, domain = '') => g.legend.ops.find((o) => o.op === op && o.domain === domain);
    // What the int8 forms are (Softmax: between a DequantizeLinear and a QuantizeLinear).
    assert.deepEqual(cap('Softmax'), { op: 'Softmax', domain: '', int8: 'softmax', as: 'QLinearSoftmax', layout: 'nchw', layouts: ['NCHW'] });
    assert.deepEqual(cap('Conv'), { op: 'Conv', domain: '', int8: 'conv', as: 'QConv', layout: 'nchw', layouts: ['NCHW'] });
    assert.equal(cap('QuantizeLinear').int8, 'quantize');
    assert.equal(cap('DequantizeLinear').int8, 'dequantize');
    // One QConv op: its kernel follows its tensors' layouts (no QConvNHWC twin).
    const conv = cap('QConv', 'wasmq');
    assert.equal(conv.int8, 'kernel');
    assert.equal(conv.layout, 'nhwc-kernel');
    assert.deepEqual(conv.layouts, ['NCHW', 'NHWC']);
    assert.ok(g.legend.ops.every((o) => !o.op.endsWith('NHWC') || o.op === 'ToNHWC'));
    const qconvs = g.nodes.filter((n) => n.op === 'QConv');
    assert.ok(qconvs.some((n) => g.tensors[n.inputs[0]].layout.name === 'NHWC'));
    // the inspector's details line reads the same record
    assert.equal(capabilityLabel(g, byName(g, 'Softmax_sm')), 'int8: softmax -> QLinearSoftmax; layout: nchw');
    assert.equal(capabilityLabel(g, byName(g, 'Conv_c1')), 'int8: conv -> QConv; layout: nchw');
    assert.equal(capabilityLabel({ nodes: g.nodes }, byName(g, 'Conv_c1')), '');
    // and the legend names the graph's ops with no int8 form (from the records, not a list of its own): none here
    assert.deepEqual(g.legend.ops.filter((o) => o.int8 === 'none'), []);
    assert.doesNotMatch(legendHtml(g.legend), /no int8 form/);
    const none = [{ op: 'Erf', domain: '', int8: 'none', as: '', layout: 'nchw', layouts: ['NCHW'] }];
    assert.match(legendHtml({ ...g.legend, ops: [...g.legend.ops, ...none] }), /no int8 form: Erf</);
    assert.doesNotMatch(legendHtml(), /no int8 form/);
    // every float node's op is in the legend; a node that stayed float for want of a kernel has int8 'none'
    for (const n of g.nodes) {
      const c = cap(n.op, n.domain);
      assert.ok(c, n.op);
      if (n.reason.code === 'UNSUPPORTED_OP') assert.equal(c.int8, 'none', n.name);
      if (n.backend === 'int8-simd' && n.domain === 'wasmq') assert.ok(['kernel', 'quantize', 'dequantize'].includes(c.int8), n.name);
    }
  } finally {
    m.dispose();
  }
});

test("partition 'int+fp': every node's backend, region and reason code on the edge-case graph", async () => {
  const m = await load(EDGE);
  try {
    const g = m.graph();
    assert.equal(g.mode, 'int+fp');
    // A conv whose result feeds a float Softmax, one read back with other
    // parameters, and the Softmax itself (its input is not dequantized codes)
    // stay float, each with its code.
    assert.deepEqual(byName(g, 'Conv_c1').reason.code, 'OUTPUT_NOT_QUANTIZED');
    assert.deepEqual(byName(g, 'Conv_c3').reason.code, 'QPARAMS_MISMATCH');
    assert.equal(byName(g, 'Softmax_sm').reason.code, 'INPUT_NOT_QUANTIZED');
    for (const name of ['Conv_c1', 'Conv_c3', 'Softmax_sm']) {
      assert.equal(byName(g, name).backend, 'float');
      assert.equal(byName(g, name).region, -1);
    }
    // Lowered nodes: int8 in a region; Q/DQ at the edges; transitions.
    const c2 = byName(g, 'Conv_c2');
    assert.equal(c2.reason.code, 'INT8');
    assert.equal(c2.backend, 'int8-simd');
    assert.ok(c2.region >= 1);
    for (const n of g.nodes) {
      if (n.role === 'quantize' || n.role === 'dequantize') assert.equal(n.reason.code, 'BOUNDARY');
      if (n.role === 'transition') assert.equal(n.reason.code, 'TRANSITION');
      assert.equal(n.region >= 1, n.backend !== 'float', n.name);
    }
    assert.equal(g.regions.length, 3);
    assert.deepEqual(g.regions.map((r) => r.id), [1, 2, 3]);
    assert.equal(g.transitions.length, 2);
    for (const t of g.transitions) {
      // A transition node, or one fused into the Quantize/DequantizeLinear next to it (moving nothing extra).
      assert.equal(g.nodes[t.node].role, t.fused ? (t.to === 'NHWC' ? 'quantize' : 'dequantize') : 'transition');
      assert.equal(g.tensors[t.tensor_out].layout.name, t.to);
      assert.equal(t.bytes, t.fused ? 0 : g.tensors[t.tensor_out].bytes);
    }
    // Channels-last tensors report logical (channels-first) dims.
    const nhwc = g.tensors.filter((t) => t.layout.name === 'NHWC');
    assert.ok(nhwc.length > 0);
    for (const t of nhwc) assert.deepEqual(t.layout.order, [0, 2, 3, 1]);
    assert.deepEqual(g.tensors.find((t) => t.name === 'x_q_nhwc').dims, [1, 2, 6, 6]);
    // The summary names the float ops with their codes.
    // (One of the two transitions is fused into a QuantizeLinear: one node fewer, 72 B moved, not 216.)
    assert.match(g.summary, /^int8: 7 of 18 nodes in 3 regions; quantize\/dequantize: 8; float: 3 nodes \(/);
    assert.match(g.summary, /; 2 transitions moving 72 B \(1 fused\)$/);
    assert.match(g.summary, /Softmax x1 INPUT_NOT_QUANTIZED/);
    // Arena slots: every intermediate placed, no two alive at once overlapping.
    const slots = g.tensors.filter((t) => t.arena);
    assert.ok(slots.length > 0 && slots.every((t) => Number.isInteger(t.arena.offset)));
    for (const a of slots)
      for (const b of slots) {
        if (a === b || a.arena.last < b.arena.first || b.arena.last < a.arena.first) continue;
        const apart = a.arena.offset + a.arena.size <= b.arena.offset || b.arena.offset + b.arena.size <= a.arena.offset;
        assert.ok(apart, `${a.name} and ${b.name} overlap while both alive`);
      }
    assert.ok(Math.max(...slots.map((t) => t.arena.offset + t.arena.size)) <= g.memory.arena_bytes);
    // Per-pass counters.
    const partition = g.passes.find((p) => p.name === 'partition');
    assert.deepEqual(partition, { name: 'partition', ran: true, stats: { int8: 6, boundary: 8, float: 3, float_on_path: 3 } });
    assert.deepEqual(g.passes.map((p) => p.name).slice(0, 3), ['resolve_ops', 'check_dtypes', 'bind_input_shapes']);
  } finally {
    m.dispose();
  }
});

test("partition 'fp' runs everything float and matches onnxruntime's op-by-op QDQ within one output step", async () => {
  const fp = await load(SMALLCNN, { partition: 'fp' });
  const old = await load(SMALLCNN, { lowering: false });
  try {
    const g = fp.graph();
    assert.equal(g.mode, 'fp');
    assert.equal(fp.info.lowering, false);
    assert.ok(g.nodes.every((n) => n.backend === 'float' && n.reason.code === 'MODE_FP' && n.region === -1));
    assert.equal(g.regions.length, 0);
    const input = fp.inputs[0];
    const data = randomArray(input.dtype, input.shape.reduce((a, b) => a * b, 1), 5);
    const feeds = { [input.name]: { data, dims: input.shape } };
    const name = fp.outputs[0].name;
    const got = (await fp.run(feeds))[name].data;
    assert.deepEqual(got, (await old.run(feeds))[name].data, "fp equals lowering: false bit for bit");
    const session = await ort.InferenceSession.create(SMALLCNN, { logSeverityLevel: 3, graphOptimizationLevel: 'disabled' });
    const want = (await session.run({ [input.name]: new ort.Tensor('float32', data, input.shape) }))[name].data;
    const step = 0.00669779; // the output DequantizeLinear's scale
    let worst = 0, exact = 0;
    for (let i = 0; i < want.length; i++) {
      const d = Math.abs(got[i] - want[i]);
      worst = Math.max(worst, d);
      if (d <= 1e-6) exact++;
    }
    assert.ok(worst <= step * 1.0001, `max diff ${worst}`);
    assert.ok(exact / want.length >= 0.9, `${exact} of ${want.length} within 1e-6`);
  } finally {
    fp.dispose();
    old.dispose();
  }
});

test('graphJson(): the bytes of `wasmq inspect --json`, natively and through npx; the same model twice gives the same bytes', async () => {
  for (const file of [SMALLCNN, EDGE, SEED003, KWS, MNIST]) {
    const a = await load(file);
    const b = await load(readFileSync(file));
    let json;
    try {
      json = a.graphJson();
      assert.equal(json, b.graphJson(), `${file}: planned twice`);
      assert.deepEqual(JSON.parse(json), a.graph());
    } finally {
      a.dispose();
      b.dispose();
    }
    const npx = spawnSync(process.execPath, [CLI, 'inspect', file, '--json'], { encoding: 'utf8', maxBuffer: 1 << 26 });
    assert.equal(npx.status, 0, npx.stderr);
    assert.equal(npx.stdout, json, `${file}: npx inspect`);
    if (existsSync(NATIVE_CLI)) {
      const native = spawnSync(NATIVE_CLI, ['inspect', file, '--json'], { encoding: 'utf8', maxBuffer: 1 << 26 });
      assert.equal(native.status, 0, native.stderr);
      // The native build runs the reference variants (its kernel_isa says
      // so); everything else is the same bytes.
      assert.equal(native.stdout.replaceAll('"kernel_isa":"ref"', '"kernel_isa":"simd128"'), json, `${file}: native inspect`);
    }
  }
});

test('--partition MODE in both CLIs: int names the node and code; a bad mode is a usage error', () => {
  const clis = [[process.execPath, CLI]];
  if (existsSync(NATIVE_CLI)) clis.push([NATIVE_CLI]);
  for (const [exe, ...pre] of clis) {
    const r = spawnSync(exe, [...pre, 'inspect', EDGE, '--partition', 'int'], { encoding: 'utf8' });
    assert.equal(r.status, 1);
    assert.match(r.stderr, /^wasmq: .*edge_qdq\.onnx: partition mode int: Conv 'Conv_c1' .*\[OUTPUT_NOT_QUANTIZED\].*\(node 'Conv_c1'\) \[WQ_ERR_UNSUPPORTED\]\n$/);
    const bad = spawnSync(exe, [...pre, 'run', EDGE, '--partition', 'int8'], { encoding: 'utf8' });
    assert.equal(bad.status, 2);
    assert.match(bad.stderr, /--partition expects int, int\+fp or fp, got int8/);
    const fp = spawnSync(exe, [...pre, 'info', SMALLCNN, '--partition', 'fp'], { encoding: 'utf8' });
    assert.equal(fp.status, 0, fp.stderr);
    assert.match(fp.stdout, /^partition fp: int8: 0 of \d+ nodes in 0 regions/m);
  }
});
