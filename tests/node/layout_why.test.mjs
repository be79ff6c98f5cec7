// The layout decisions as data: every node's layout record (label, fixed,
// why code), each transition's needed_by / producer / producer_layout, and
// the planner's totals in the layout_int8 pass statistics. Asserts codes and
// ids, not text (docs/graph-json.md "Layout decision records").
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { readFileSync } from 'node:fs';
import { load } from '../../src/js/index.mjs';
import { REPO, SHARED } from './helpers.mjs';
import { FloatGraph, calibrate, quantize } from '../models/qdq_builder.mjs';
import { renderReport } from '../../src/js/graph/report.mjs';

async function graphOf(bytes) {
  const m = await load(bytes);
  try {
    const g = m.graph();
    // The text report prints the same record per planned node: "layout: NHWC PLANNED".
    const lines = m.describeLowered().match(/^ {6}layout: \S+ \S+$/gm) ?? [];
    const want = g.nodes.filter((n) => n.layout.why !== 'NOT_PLANNED')
      .map((n) => `      layout: ${n.layout.why === 'AS_WRITTEN' ? 'any' : n.layout.label} ${n.layout.why}`);
    assert.deepEqual(lines, want);
    return { g, json: m.graphJson() };
  } finally {
    m.dispose();
  }
}

async function qdqModel(build) {
  const g = new FloatGraph('why', 'int8');
  build(g);
  return quantize(g, await calibrate(g));
}

function conv(g, x, out, cin, cout) {
  g.weight(`${out}_w`, [cout, cin, 3, 3], 0.5);
  g.weight(`${out}_b`, [cout], 0.2, { bias: true });
  g.node('Conv', [x, `${out}_w`, `${out}_b`], out, { pads: [1, 1, 1, 1] });
}

const WHY = ['NOT_PLANNED', 'DECLARED', 'KERNEL_CHANNELS_LAST', 'PLANNED', 'FUSED_BOUNDARY', 'AS_WRITTEN', 'TRANSITION'];
const layoutStats = (g) => g.passes.find((p) => p.name === 'layout_int8').stats;
const byName = (g, name) => g.nodes.find((n) => n.name === name);

/** Invariants of the records on any graph. */
function checkRecords(g) {
  for (const n of g.nodes) {
    assert.ok(WHY.includes(n.layout.why), `${n.name}: ${n.layout.why}`);
    assert.equal(n.layout.fixed, !['PLANNED', 'FUSED_BOUNDARY'].includes(n.layout.why), n.name);
    assert.equal(n.layout.label === null, ['NOT_PLANNED', 'AS_WRITTEN'].includes(n.layout.why), n.name);
    if (n.role === 'transition') assert.equal(n.layout.why, 'TRANSITION');
    // A free label's margin: >= 0 at the minimum, > 0 for channels-last (ties go declared).
    if (n.layout.fixed) assert.equal(n.layout.other_bytes, null, n.name);
    else assert.ok(n.layout.other_bytes > 0 || (n.layout.other_bytes === 0 && n.layout.label === 'NCHW'), `${n.name}: ${n.layout.other_bytes}`);
  }
  for (const t of g.transitions) {
    // A reader in needed_by reads the converted tensor in the order it is written.
    for (const r of t.needed_by) assert.ok(g.nodes[r].inputs.includes(t.tensor_out));
    assert.ok(t.needed_by.length > 0 || t.graph_output, `transition at node ${t.node} needed by nobody`);
    assert.equal(t.producer, g.tensors[t.tensor_in].producer);
    if (t.producer >= 0) assert.deepEqual(t.producer_layout, g.nodes[t.producer].layout);
    else assert.deepEqual(t.producer_layout, { label: 'NCHW', fixed: true, why: 'DECLARED', other_bytes: null, planned_bytes: 0 });
  }
  const s = layoutStats(g);
  assert.equal(s.exact, 1);
  // Two labels, min cut: what the planner found is what the transitions move
  // (plus channels-first Resize/DepthToSpace writes: none in these graphs).
  assert.equal(s.planned_bytes, g.transitions.reduce((a, t) => a + t.bytes, 0));
  assert.equal(s.free_labels, g.nodes.filter((n) => !n.layout.fixed).length);
}

test('conv -> relu -> concat(second quantized input) -> conv: why each node has its label, who needs each transition', async () => {
  const { g } = await graphOf(readFileSync(path.join(REPO, 'tests/models/seed003_qdq.onnx')));
  checkRecords(g);
  const rec = (name) => byName(g, name).layout;
  assert.deepEqual(rec('Conv_c1'), { label: 'NHWC', fixed: true, why: 'KERNEL_CHANNELS_LAST', other_bytes: null, planned_bytes: 0 });
  assert.deepEqual(rec('Conv_out'), { label: 'NHWC', fixed: true, why: 'KERNEL_CHANNELS_LAST', other_bytes: null, planned_bytes: 0 });
  // The Concat reads any layout: the planner put it channels-last. Alone
  // channels-first it would convert its two 8x16x16 inputs and its 16x16x16
  // result: 2,048 + 2,048 + 4,096 B more.
  assert.deepEqual(rec('Concat_cat'), { label: 'NHWC', fixed: false, why: 'PLANNED', other_bytes: 8192, planned_bytes: 0 });
  // A fused QuantizeLinear alone channels-first: its codes (3x16x16, 8x16x16) converted; the result's 4x16x16.
  for (const [q, b] of [['Q_x', 768], ['Q_y', 2048], ['DQ_out_f', 1024]]) assert.deepEqual(rec(q), { label: 'NHWC', fixed: false, why: 'FUSED_BOUNDARY', other_bytes: b, planned_bytes: 0 });
  // x into NHWC for the conv c1; y for the concat (channels-last because
  // conv 'out' reads it); the result back to NCHW for the graph output.
  const names = (t) => t.needed_by.map((i) => g.nodes[i].name);
  assert.deepEqual(g.transitions.map((t) => [g.nodes[t.node].name, names(t), t.graph_output, t.producer, t.producer_layout.why]), [
    ['Q_x', ['Conv_c1'], false, -1, 'DECLARED'],
    ['Q_y', ['Concat_cat'], false, -1, 'DECLARED'],
    ['DQ_out_f', [], true, byName(g, 'Conv_out').id, 'KERNEL_CHANNELS_LAST'],
  ]);
  const cat = byName(g, 'Concat_cat');
  const readers = g.tensors[cat.outputs[0]].consumers.map((i) => g.nodes[i].name);
  assert.deepEqual(readers, ['Conv_out']);
  assert.deepEqual(layoutStats(g), { nodes_nhwc: 3, transitions: 3, transition_bytes: 0, planned_bytes: 0, free_labels: 4, exact: 1 });
});

test('an explicit ToNHWC (80 channels: no fused Quantize) is needed by the channels-last Add; its producer is fixed declared', async () => {
  const { g } = await graphOf(await qdqModel((f) => {
    f.input('x', [1, 4, 6, 6]);
    f.input('y', [1, 80, 6, 6]);
    conv(f, 'x', 'a', 4, 80);
    f.node('Add', ['a', 'y'], 's');
    f.node('Identity', ['s'], 'i', {}, { share: 's' });
    conv(f, 'i', 'out', 80, 4);
    f.output('out');
  }));
  checkRecords(g);
  const to = g.transitions.filter((t) => !t.fused);
  assert.equal(to.length, 1);
  const [t] = to;
  assert.deepEqual([t.from, t.to, t.bytes], ['NCHW', 'NHWC', 2880]);
  assert.deepEqual(g.nodes[t.node].layout, { label: 'NHWC', fixed: true, why: 'TRANSITION', other_bytes: null, planned_bytes: 2880 });
  assert.deepEqual(t.needed_by.map((i) => [g.nodes[i].op, g.nodes[i].layout.why, g.nodes[i].layout.label]), [['QAdd', 'PLANNED', 'NHWC']]);
  // y's QuantizeLinear: more than 64 channels, it cannot write channels-last itself.
  assert.deepEqual([g.nodes[t.producer].op, t.producer_layout], ['QuantizeLinear', { label: 'NCHW', fixed: true, why: 'DECLARED', other_bytes: null, planned_bytes: 0 }]);
  assert.equal(byName(g, 'Identity_i').layout.why, 'PLANNED');
  assert.equal(layoutStats(g).planned_bytes, 2880);
});

test('needed_by leaves out a reader of the converted tensor that reads any layout (Flatten of same-bytes codes)', async () => {
  // The pooled 8x1x1 codes are written channels-last; the Slice runs only
  // channels-first (a ToNCHW, 8 B); the Flatten after it reads whichever
  // order is there (same bytes), so it did not need the transition.
  const { g } = await graphOf(await qdqModel((f) => {
    f.input('x', [1, 4, 6, 6]);
    conv(f, 'x', 'c', 4, 8);
    f.node('GlobalAveragePool', ['c'], 'a');
    f.ints('st', [0]), f.ints('en', [4]), f.ints('ax', [1]);
    f.node('Slice', ['a', 'st', 'en', 'ax'], 'tr', {}, { share: 'a' });
    f.node('Flatten', ['a'], 'fl', {}, { share: 'a' });
    f.output('tr');
    f.output('fl');
  }));
  checkRecords(g);
  const to = g.transitions.filter((t) => !t.fused);
  assert.equal(to.length, 1);
  const [t] = to;
  assert.deepEqual([t.from, t.to, t.bytes], ['NHWC', 'NCHW', 8]);
  assert.deepEqual(t.needed_by.map((i) => [g.nodes[i].op, g.nodes[i].layout.why]), [['Slice', 'DECLARED']]);
  const flat = g.nodes.find((n) => n.op === 'Flatten');
  assert.deepEqual(flat.layout, { label: null, fixed: true, why: 'AS_WRITTEN', other_bytes: null, planned_bytes: 0 });
  assert.ok(g.tensors[t.tensor_out].consumers.includes(flat.id), 'the Flatten reads the converted tensor too');
  assert.deepEqual([g.nodes[t.producer].op, t.producer_layout.why], ['QGlobalAveragePool', 'KERNEL_CHANNELS_LAST']);
});

test('mobilenetv2-12-int8: Shape and the pooled Reshape read as written, QAdds planned channels-last, the classifier unplanned', async () => {
  const { g } = await graphOf(readFileSync(path.join(SHARED, 'models-int8/mobilenetv2-12-int8/model.onnx')));
  checkRecords(g);
  const count = {};
  for (const n of g.nodes) count[`${n.op} ${n.layout.why} ${n.layout.label}`] = (count[`${n.op} ${n.layout.why} ${n.layout.label}`] ?? 0) + 1;
  assert.equal(count['Shape AS_WRITTEN null'], 1);
  assert.equal(count['Reshape AS_WRITTEN null'], 1);
  assert.equal(count['QConv KERNEL_CHANNELS_LAST NHWC'], 52);
  assert.equal(count['QAdd PLANNED NHWC'], 10);
  assert.equal(count['QGemm NOT_PLANNED null'], 1); // rank 2: no image axes to reorder
  const shape = g.nodes.find((n) => n.op === 'Shape');
  assert.equal(g.tensors[shape.inputs[0]].layout.name, 'NHWC');
  assert.deepEqual(layoutStats(g), { nodes_nhwc: 63, transitions: 1, transition_bytes: 0, planned_bytes: 0, free_labels: 11, exact: 1 });
  assert.deepEqual(g.transitions.map((t) => [g.nodes[t.node].op, t.needed_by.map((i) => g.nodes[i].op), t.producer]), [['QuantizeLinear', ['QConv'], -1]]);
});

test('ops_qdq: a ToNCHW before a channels-first QLookup; the records are byte-identical when planned twice', async () => {
  const bytes = readFileSync(path.join(REPO, 'tests/models/ops_qdq.onnx'));
  const a = await graphOf(bytes), b = await graphOf(bytes);
  assert.equal(a.json, b.json);
  const { g } = a;
  checkRecords(g);
  const t = g.transitions.find((x) => x.to === 'NCHW' && !x.fused);
  assert.deepEqual([t.bytes, t.needed_by.map((i) => g.nodes[i].name), g.nodes[t.producer].name, t.producer_layout.why],
    [512, ['Q_d2s'], 'DepthToSpace_d2s', 'PLANNED']);
  assert.equal(layoutStats(g).planned_bytes, 1024);
  // The QLookup after the ToNCHW: a tie (channels-last, its 2x16x16 result
  // would be converted instead: the same 512 B), so declared.
  assert.deepEqual(byName(g, 'Q_d2s').layout, { label: 'NCHW', fixed: false, why: 'PLANNED', other_bytes: 0, planned_bytes: 0 });
  // report.html: a layout cell per node, a row per transition naming who needed it.
  const html = renderReport(g);
  assert.equal((html.match(/<td data-layout-why="/g) ?? []).length, g.nodes.length);
  for (const x of g.transitions) assert.ok(html.includes(`data-transition-node="${x.node}" data-needed-by="${x.needed_by.join(' ')}"`), `transition ${x.node}`);
  assert.ok(html.includes('over 16 free label(s), exact'));
});

test('without the layout pass (partition fp) every node is NOT_PLANNED and nothing moves', async () => {
  const m = await load(readFileSync(path.join(REPO, 'tests/models/seed003_qdq.onnx')), { partition: 'fp' });
  try {
    const g = m.graph();
    assert.ok(g.nodes.every((n) => n.layout.why === 'NOT_PLANNED' && n.layout.label === null));
    assert.equal(g.transitions.length, 0);
  } finally {
    m.dispose();
  }
});
