// Where the int8 layout pass puts its transitions (issue #7's done-when
// cases), read from the decision records: counts and bytes, not text. Each
// graph is built in float, calibrated in onnxruntime-node and quantized
// (tests/models/qdq_builder.mjs), then loaded; its int8 output is checked
// against the same model run op by op in float (partition 'fp'): within one
// output step.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { load } from '../../src/js/index.mjs';
import { readFileSync } from 'node:fs';
import { REPO, SHARED } from './helpers.mjs';
import { randomArray } from '../../src/js/random.mjs';
import { FloatGraph, calibrate, quantize } from '../models/qdq_builder.mjs';

async function qdqModel(build) {
  const g = new FloatGraph('layout', 'int8');
  build(g);
  return quantize(g, await calibrate(g));
}

function conv(g, x, out, cin, cout, noq = false) {
  g.weight(`${out}_w`, [cout, cin, 3, 3], 0.5);
  g.weight(`${out}_b`, [cout], 0.2, { bias: true });
  g.node('Conv', [x, `${out}_w`, `${out}_b`], out, { pads: [1, 1, 1, 1] }, noq ? { noq: true } : {});
}

/** Loads bytes, checks int8 against fp within one output step, returns graph(). */
async function planOf(bytes) {
  const m = await load(bytes);
  const fp = await load(bytes, { partition: 'fp' });
  try {
    const feeds = {};
    m.inputs.forEach((t, i) => (feeds[t.name] = { data: randomArray(t.dtype, t.shape.reduce((a, b) => a * b, 1), i), dims: t.shape }));
    const got = await m.run(feeds), want = await fp.run(feeds);
    const g = m.graph();
    for (const name of Object.keys(want)) {
      const out = g.tensors.find((t) => t.name === name);
      const dq = g.nodes[out.producer];
      const step = g.tensors[dq.inputs[0]].qparams.scale[0];
      let worst = 0;
      for (let i = 0; i < want[name].data.length; i++) worst = Math.max(worst, Math.abs(got[name].data[i] - want[name].data[i]));
      assert.ok(worst <= step * 1.0001, `${name}: ${worst} > one step ${step}`);
    }
    return g;
  } finally {
    m.dispose();
    fp.dispose();
  }
}

const inRegion = (g) => g.transitions.filter((t) => {
  if (t.fused) return false; // folded into the boundary Quantize/DequantizeLinear
  // A transition inside a region: neither end is a graph-boundary Quantize/DequantizeLinear.
  const from = g.tensors[t.tensor_in].producer, to = g.tensors[t.tensor_out].consumers;
  return !(from >= 0 && g.nodes[from].role === 'quantize') && !to.every((c) => g.nodes[c].role === 'dequantize');
});

test('conv -> relu -> concat(second quantized input) -> conv, NCHW graph I/O: 3 transitions, all int8, <= 3 KB moved', async () => {
  const g = (await planOf(path.join(REPO, 'tests/models/seed003_qdq.onnx')));
  assert.equal(g.transitions.length, 3);
  // x (1x3x16x16) and y (1x8x16x16) into NHWC, the result (1x4x16x16) back:
  // nothing moves twice, and each conversion is fused into the Quantize /
  // DequantizeLinear next to it (was 768 + 2048 + 1024 B in separate passes).
  assert.deepEqual(g.transitions.map((t) => [t.from, t.to, t.bytes, t.fused, g.nodes[t.node].op]), [
    ['NCHW', 'NHWC', 0, true, 'QuantizeLinear'],
    ['NCHW', 'NHWC', 0, true, 'QuantizeLinear'],
    ['NHWC', 'NCHW', 0, true, 'DequantizeLinear'],
  ]);
  // A fused transition is a QuantizeLinear writing a channels-last tensor
  // from a channels-first one (or a DequantizeLinear reading one): the op
  // stays the ONNX op, its kernel follows the two layouts.
  for (const t of g.transitions) {
    assert.notEqual(g.tensors[t.tensor_in].layout.name, g.tensors[t.tensor_out].layout.name);
  }
  assert.ok(g.transitions.reduce((a, t) => a + t.bytes, 0) <= 3072);
  assert.match(g.summary, /; 3 transitions moving 0 B \(3 fused\)$/);
  assert.deepEqual(g.transitions.map((t) => g.nodes[t.node].role), ['quantize', 'quantize', 'dequantize']);
  // The float graph inputs go straight to channels-last codes; the codes straight to the float output.
  assert.deepEqual(g.transitions.map((t) => [g.tensors[t.tensor_in].kind, g.tensors[t.tensor_out].kind]), [
    ['input', 'intermediate'],
    ['input', 'intermediate'],
    ['intermediate', 'output'],
  ]);
  assert.equal(inRegion(g).length, 0);
  assert.ok(g.nodes.every((n) => n.backend !== 'float'));
  // The first conv replaced its ONNX node, its input's DequantizeLinear, the
  // fused Relu and the QuantizeLinear after it.
  const c1 = g.nodes.find((n) => n.name === 'Conv_c1');
  assert.deepEqual(c1.source_ops, ['Conv', 'DequantizeLinear', 'Relu', 'QuantizeLinear']);
  assert.deepEqual(c1.source_nodes, ['Conv_c1', 'DQ_x', 'Relu_r1', 'Q_r1']);
  const cat = g.nodes.find((n) => n.name === 'Concat_cat');
  assert.equal(g.tensors[cat.outputs[0]].layout.name, 'NHWC');
});

test('int8 conv -> DepthToSpace -> int8 conv: no transition inside the region', async () => {
  const g = await planOf(await qdqModel((f) => {
    f.input('x', [1, 4, 6, 6]);
    conv(f, 'x', 'c1', 4, 8);
    f.node('DepthToSpace', ['c1'], 'd2s', { blocksize: 2 }, { share: 'c1' });
    conv(f, 'd2s', 'c2', 2, 4);
    f.output('c2');
  }));
  // One DepthToSpace op; its kernel follows its channels-last tensors.
  const d2s = g.nodes.find((n) => n.op === 'DepthToSpace');
  assert.deepEqual([...d2s.inputs, ...d2s.outputs].map((t) => g.tensors[t].layout.name), ['NHWC', 'NHWC']);
  assert.ok(g.nodes.every((n) => !n.op.endsWith('NHWC') || n.op === 'ToNHWC'));
  assert.equal(inRegion(g).length, 0);
  assert.equal(g.transitions.length, 2); // graph input in, graph output out
});

test('a chain of Identity ops between int8 convs forces no transition', async () => {
  const g = await planOf(await qdqModel((f) => {
    f.input('x', [1, 4, 6, 6]);
    conv(f, 'x', 'c1', 4, 8);
    f.node('Identity', ['c1'], 'i1', {}, { share: 'c1' });
    f.node('Identity', ['i1'], 'i2', {}, { share: 'c1' });
    conv(f, 'i2', 'c2', 8, 4);
    f.output('c2');
  }));
  assert.equal(inRegion(g).length, 0);
  assert.equal(g.transitions.length, 2);
  for (const n of g.nodes.filter((x) => x.op === 'Identity')) assert.equal(g.tensors[n.outputs[0]].layout.name, 'NHWC');
});

test('int8 Add: both inputs channels-last, no transition; one channels-first input, exactly one', async () => {
  const same = await planOf(await qdqModel((f) => {
    f.input('x', [1, 4, 6, 6]);
    conv(f, 'x', 'a', 4, 8);
    conv(f, 'x', 'b', 4, 8);
    f.node('Add', ['a', 'b'], 's');
    conv(f, 's', 'c', 8, 4);
    f.output('c');
  }));
  assert.equal(inRegion(same).length, 0);
  assert.equal(same.transitions.length, 2);
  const mixed = await planOf(await qdqModel((f) => {
    f.input('x', [1, 4, 6, 6]);
    f.input('y', [1, 8, 6, 6]);
    conv(f, 'x', 'a', 4, 8);
    f.node('Add', ['a', 'y'], 's');
    conv(f, 's', 'c', 8, 4);
    f.output('c');
  }));
  // x in, y in (the one conversion the Add needs), the result out.
  assert.equal(mixed.transitions.length, 3);
  const add = mixed.nodes.find((n) => n.op === 'QAdd');
  assert.ok(add.inputs.every((t) => mixed.tensors[t].layout.name === 'NHWC'));
  assert.equal(mixed.transitions.filter((t) => t.to === 'NHWC').length, 2);
});

test('QConvToFloat reads and writes channels-last when only per-tensor QuantizeLinears read its floats (mnist-8-dynamic-int8)', async () => {
  const m = await load(readFileSync(path.join(SHARED, 'models/mnist-8-dynamic-int8/model.onnx')));
  try {
    const g = m.graph();
    const convs = g.nodes.filter((n) => n.op === 'QConvToFloat');
    assert.equal(convs.length, 2);
    for (const c of convs) {
      assert.deepEqual([c.inputs[0], c.outputs[0]].map((t) => g.tensors[t].layout.name), ['NHWC', 'NHWC']);
      assert.equal(g.tensors[c.outputs[0]].dtype, 'float32');
      // Its float result is quantized channels-last into channels-last codes: no transition there.
      for (const r of g.tensors[c.outputs[0]].consumers) {
        assert.equal(g.nodes[r].op, 'QuantizeLinear');
        assert.equal(g.tensors[g.nodes[r].outputs[0]].layout.name, 'NHWC');
        assert.ok(!g.transitions.some((t) => t.node === r));
      }
    }
    // The input's transition (fused into its QuantizeLinear) and one ToNCHW
    // before the Reshape; none between the convolutions (was 4: the second
    // conv's input went back to NCHW, each conv transposed in and out).
    assert.deepEqual(g.transitions.map((t) => [g.nodes[t.node].op, t.fused]), [['QuantizeLinear', true], ['ToNCHW', false]]);
    assert.ok(g.transitions[1].node > g.nodes.indexOf(convs[1]));
  } finally {
    m.dispose();
  }
});

// Graphs where the old greedy walk (each agnostic op decided in graph order
// from its inputs with a one-step look-ahead, followers only after a
// channels-last input) moved more bytes than the minimum; the planner finds
// the minimum. Numbers of the greedy walk: main a627144, `wasmq inspect --json`.
const moved = (g) => g.transitions.reduce((a, t) => a + t.bytes, 0);

test('planner beats the greedy walk: Add(conv, graph input) -> Identity -> conv', async () => {
  // Greedy: the Add stayed channels-first (converting y or a cost the same
  // 288 B and its reader is an Identity, not a conv), so a went back to
  // NCHW and the Identity's result forward again: 4 transitions, 576 B.
  // Minimum: the Add runs channels-last, y's QuantizeLinear writes
  // channels-last codes itself: 3 transitions, all fused, 0 B.
  for (const [c, greedy, want] of [[8, 576, 0], [80, 5760, 2880]]) {
    const g = await planOf(await qdqModel((f) => {
      f.input('x', [1, 4, 6, 6]);
      f.input('y', [1, c, 6, 6]);
      conv(f, 'x', 'a', 4, c);
      f.node('Add', ['a', 'y'], 's');
      f.node('Identity', ['s'], 'i', {}, { share: 's' });
      conv(f, 'i', 'out', c, 4);
      f.output('out');
    }));
    assert.ok(moved(g) < greedy);
    assert.equal(moved(g), want);
    const add = g.nodes.find((n) => n.op === 'QAdd');
    assert.ok([...add.inputs, ...add.outputs].every((t) => g.tensors[t].layout.name === 'NHWC'));
    // 80 channels: y's QuantizeLinear cannot fuse the change (more than 64
    // channels), one ToNHWC of y (80x6x6 = 2880 B) instead of two.
    assert.deepEqual(g.transitions.map((t) => [t.from, t.to, t.bytes, t.fused]), c === 8
      ? [['NCHW', 'NHWC', 0, true], ['NCHW', 'NHWC', 0, true], ['NHWC', 'NCHW', 0, true]]
      : [['NCHW', 'NHWC', 0, true], ['NCHW', 'NHWC', 2880, false], ['NHWC', 'NCHW', 0, true]]);
  }
});

test('planner beats the greedy walk: Resize nearest x2 before a conv converts before upsampling', async () => {
  // Greedy: Resize followed only a channels-last input, so the upsampled
  // 4x12x12 codes went to NHWC (576 B). Minimum: the input's
  // QuantizeLinear writes channels-last (fused), Resize runs channels-last.
  const g = await planOf(await qdqModel((f) => {
    f.input('x', [1, 4, 6, 6]);
    f.const('sc', [4], [1, 1, 2, 2]);
    f.node('Resize', ['x', '', 'sc'], 'r', { mode: 'nearest' }, { share: 'x' });
    conv(f, 'r', 'out', 4, 4);
    f.output('out');
  }));
  assert.equal(moved(g), 0);
  assert.deepEqual(g.transitions.map((t) => [t.from, t.to, t.fused, g.nodes[t.node].op]), [
    ['NCHW', 'NHWC', true, 'QuantizeLinear'],
    ['NHWC', 'NCHW', true, 'DequantizeLinear'],
  ]);
  const r = g.nodes.find((n) => n.op === 'Resize');
  assert.deepEqual([r.inputs[0], r.outputs[0]].map((t) => g.tensors[t].layout.name), ['NHWC', 'NHWC']);
});

test('an int8 Add whose inputs arrive in different layouts with the same bytes (8x1x1) reads them as they are: no transition', async () => {
  // a: conv -> global average pool (channels-last, 8x1x1); y: a channels-first
  // 8x1x1 graph input. Both orders hold the same bytes, and QAdd reads each
  // input through its own layout record. The greedy walk: 2 transitions, 8 B
  // (a ToNCHW of the pooled codes).
  const g = await planOf(await qdqModel((f) => {
    f.input('x', [1, 4, 6, 6]);
    f.input('y', [1, 8, 1, 1]);
    conv(f, 'x', 'c', 4, 8);
    f.node('GlobalAveragePool', ['c'], 'a');
    f.node('Add', ['a', 'y'], 's');
    f.node('Flatten', ['s'], 'out', {}, { share: 's' });
    f.output('out');
  }));
  // Only x's (fused) transition into the conv.
  assert.deepEqual(g.transitions.map((t) => [t.from, t.to, t.bytes, t.fused, g.nodes[t.node].op]), [
    ['NCHW', 'NHWC', 0, true, 'QuantizeLinear'],
  ]);
  const add = g.nodes.find((n) => n.op === 'QAdd');
  assert.deepEqual(add.inputs.map((t) => g.tensors[t].layout.name), ['NHWC', 'NCHW']);
});

test('planning the same model twice gives byte-identical JSON', async () => {
  const bytes = readFileSync(path.join(REPO, 'tests/models/ops_qdq.onnx'));
  const a = await load(bytes), b = await load(bytes);
  try {
    assert.equal(JSON.stringify(a.graph()), JSON.stringify(b.graph()));
    // ops_qdq: 5 transitions, 3 fused, 1,024 B. Converting the pooled 8x4x4
    // codes (128 B) instead of the 2x16x16 result (512 B) would move fewer
    // bytes, but then Resize and DepthToSpace run channels-first, where they
    // gather element by element (3 us each against < 1 us channels-last,
    // bench/profile_nodes.mjs): the planner charges a channels-first
    // follower the bytes it writes, and keeps them channels-last.
    assert.equal(a.graph().transitions.length, 5);
    assert.equal(moved(a.graph()), 1024);
    const rs = a.graph().nodes.find((n) => n.name === 'Resize_rs');
    assert.equal(a.graph().tensors[rs.outputs[0]].layout.name, 'NHWC');
  } finally {
    a.dispose();
    b.dispose();
  }
});

test('mobilenetv2-12-int8: Shape and the Reshape of the pooled 1280x1x1 codes read them channels-last as written: one transition, fused', async () => {
  const m = await load(readFileSync(path.join(SHARED, 'models-int8/mobilenetv2-12-int8/model.onnx')));
  try {
    const g = m.graph();
    // The greedy walk: 3 transitions, 64,000 B (the 7x7x1280 map to NCHW for
    // the Shape, the pooled codes to NCHW for the Reshape).
    assert.deepEqual(g.transitions.map((t) => [t.from, t.to, t.bytes, t.fused, g.nodes[t.node].op]), [
      ['NCHW', 'NHWC', 0, true, 'QuantizeLinear'],
    ]);
    for (const op of ['Shape', 'Reshape']) {
      const n = g.nodes.find((x) => x.op === op);
      assert.equal(g.tensors[n.inputs[0]].layout.name, 'NHWC', op);
    }
  } finally {
    m.dispose();
  }
});
