// model.graph() records and `wasmq render` (SVG, report.html, JSON) on the
// shared models: node counts, colours by backend, transitions, overlays,
// Model Explorer node-data in and out, per-node profiling.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { load } from '../../src/js/index.mjs';
import { toDrawable, nodeData, parseNodeData, BACKEND_COLOURS } from '../../src/js/graph/data.mjs';
import { CLI, MODELS, REPO } from './helpers.mjs';

const SMALLCNN_QDQ = path.join(MODELS, 'synthetic/smallcnn_qdq.onnx');
const MNIST = path.join(MODELS, 'mnist-8/model.onnx');
const MNIST_DYN = path.join(MODELS, 'mnist-8-dynamic-int8/model.onnx');
const tmp = mkdtempSync(path.join(tmpdir(), 'wq-render-'));

const attrValues = (svg, attr) => [...svg.matchAll(new RegExp(`<g class="wq-node[^"]*"[^>]*\\s${attr}="([^"]*)"`, 'g'))].map((m) => m[1]);
const cli = (...args) => spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8' });

test('graph(): smallcnn_qdq is one int8 region with one layout transition (the pooled 1x1 tensor is flattened as it is)', async () => {
  const model = await load(SMALLCNN_QDQ);
  try {
    const g = model.graph();
    assert.equal(g.schema, 1);
    assert.equal(g.nodes.length, 8);
    assert.equal(g.regions.length, 1);
    assert.deepEqual(g.transitions.map((t) => `${t.from}->${t.to}`), ['NCHW->NHWC']);
    // 1x3x224x224 uint8 moved to NHWC; the 64-channel pooled tensor (1x1
    // spatial: the same bytes either way) is flattened without a transition.
    // It is fused into the input's QuantizeLinear (was 150528 B in a ToNHWC of its own).
    assert.deepEqual(g.transitions.map((t) => [t.bytes, t.fused, g.nodes[t.node].op]), [[0, true, 'QuantizeLinear']]);
    assert.equal(g.nodes.find((n) => n.op === 'Flatten').inputs.map((t) => g.tensors[t].layout.name)[0], 'NHWC');
    const conv = g.nodes.find((n) => n.name === 'c1_Conv');
    assert.equal(conv.op, 'QConv');
    assert.equal(g.tensors[conv.inputs[0]].layout.name, 'NHWC'); // so its kernel is a channels-last one
    assert.equal(conv.reason.code, 'INT8');
    assert.equal(conv.kernel, 'im2col_gemm');
    // The kernel record is data of its own, no longer text in the reason.
    assert.equal(conv.kernel_isa, 'simd128');
    assert.ok(!conv.reason.detail.includes('kernel'), conv.reason.detail);
    const gemm = g.nodes.find((n) => n.op === 'QGemm');
    if (gemm) assert.deepEqual([gemm.kernel, gemm.kernel_isa], ['gemv', 'simd128']);
    assert.ok(g.nodes.every((n) => (n.kernel === '') === (n.kernel_isa === '')));
    const w = g.tensors[conv.inputs[1]];
    assert.equal(w.qparams.granularity, 'per-channel');
    assert.equal(w.qparams.scale.length, 32);
    const out = g.tensors[conv.outputs[0]];
    assert.equal(out.layout.name, 'NHWC');
    assert.equal(out.qparams.zero_point[0], 0);
    assert.match(g.summary, /^int8: 6 of 8 nodes in 1 region; quantize\/dequantize: 2; float: 0 nodes; 1 transition moving 0 B \(1 fused\)$/);
    // Lifetimes: every intermediate lives from its producer to its last consumer.
    for (const t of g.tensors.filter((x) => x.arena)) {
      assert.equal(t.arena.first, t.producer);
      assert.equal(t.arena.last, Math.max(t.producer, ...t.consumers));
    }
  } finally {
    model.dispose();
  }
});

test('graph(): float mnist-8 has no int8 region; with lowering off a QDQ model is mode fp', async () => {
  const model = await load(MNIST);
  const fp = await load(SMALLCNN_QDQ, { lowering: false });
  try {
    const g = model.graph();
    assert.equal(g.regions.length, 0);
    assert.ok(g.nodes.every((n) => n.backend === 'float' && n.region === -1));
    assert.deepEqual(g.nodes.map((n) => n.op), ['Conv', 'Add', 'Relu', 'MaxPool', 'Conv', 'Add', 'Relu', 'MaxPool', 'Reshape', 'MatMul', 'Add']);
    const gfp = fp.graph();
    assert.equal(gfp.mode, 'fp');
    assert.equal(gfp.transitions.length, 0);
  } finally {
    model.dispose();
    fp.dispose();
  }
});

test('render -o graph.svg: one node per executed node, colours and data-backend by backend, transitions drawn', async () => {
  const file = path.join(tmp, 'smallcnn.svg');
  const r = cli('render', SMALLCNN_QDQ, '-o', file);
  assert.equal(r.status, 0, r.stderr);
  const svg = readFileSync(file, 'utf8');
  assert.match(svg, /^<svg xmlns="http:\/\/www.w3.org\/2000\/svg"/);
  assert.equal(attrValues(svg, 'data-node').length, 8);
  const backends = attrValues(svg, 'data-backend');
  const ops = attrValues(svg, 'data-op');
  ops.forEach((op, i) => {
    if (/^Q(Conv|Gemm|GlobalAveragePool)/.test(op)) assert.ok(backends[i].startsWith('int8'), `${op} is ${backends[i]}`);
  });
  assert.deepEqual([...svg.matchAll(/data-transition="([^"]*)"/g)].map((m) => m[1].replace(/&gt;/g, '>')), ['NCHW->NHWC']);
  // That one is the input's, fused into its QuantizeLinear: drawn as the node itself, no hexagon.
  assert.doesNotMatch(svg, new RegExp(`<polygon [^>]*fill="${BACKEND_COLOURS.transition}"`));
  // Transitions of their own (ops_qdq: codes read channels-first inside the region) are hexagons.
  const opsSvg = path.join(tmp, 'ops.svg');
  assert.equal(cli('render', path.join(REPO, 'tests/models/ops_qdq.onnx'), '-o', opsSvg).status, 0);
  assert.match(readFileSync(opsSvg, 'utf8'), new RegExp(`<polygon [^>]*fill="${BACKEND_COLOURS.transition}"`));
  // Edge labels carry dtype, layout and qparams.
  assert.match(svg, />uint8 NHWC s=0\.014 zp=0</);

  const floatSvg = path.join(tmp, 'mnist.svg');
  assert.equal(cli('render', MNIST, '-o', floatSvg).status, 0);
  const fsvg = readFileSync(floatSvg, 'utf8');
  assert.equal(attrValues(fsvg, 'data-node').length, 11);
  assert.ok(attrValues(fsvg, 'data-backend').every((b) => b === 'float'));
  assert.equal((fsvg.match(new RegExp(`<rect [^>]*fill="${BACKEND_COLOURS.float}"`, 'g')) ?? []).length, 11);
  assert.doesNotMatch(fsvg, /data-transition/);
});

test('render -o report.html is self-contained: summary, graph, node table, memory lanes', () => {
  const file = path.join(tmp, 'report.html');
  const r = cli('render', MNIST_DYN, '-o', file);
  assert.equal(r.status, 0, r.stderr);
  const html = readFileSync(file, 'utf8');
  assert.doesNotMatch(html, /<script|<link|src="http/);
  const json = JSON.parse(execFileSync(process.execPath, [CLI, 'render', MNIST_DYN, '--json'], { encoding: 'utf8' }));
  assert.ok(html.includes(json.summary.replace(/&/g, '&amp;')));
  assert.equal((html.match(/<tr data-node=/g) ?? []).length, json.nodes.length);
  assert.equal((html.match(/class="wq-lane"/g) ?? []).length, json.tensors.filter((t) => t.arena).length);
  assert.ok(json.transitions.length > 0);
});

test('render --overlay time: per-node ms as heat colours, emitted and re-read as Model Explorer node data', () => {
  const svg = path.join(tmp, 'time.svg');
  const nd = path.join(tmp, 'time.json');
  const r = cli('render', SMALLCNN_QDQ, '-o', svg, '--overlay', 'time', '--repeats', '3', '--emit-node-data', nd);
  assert.equal(r.status, 0, r.stderr);
  const data = JSON.parse(readFileSync(nd, 'utf8'));
  assert.equal(Object.keys(data.results).length, 8);
  assert.ok(Object.values(data.results).every((v) => v.value >= 0));
  const text = readFileSync(svg, 'utf8');
  assert.match(text, /data-overlay="time"/);
  assert.equal(attrValues(text, 'data-value').length, 8);
  // The same values fed back in give the same drawing.
  const again = path.join(tmp, 'time2.svg');
  assert.equal(cli('render', SMALLCNN_QDQ, '-o', again, '--overlay', 'time', '--node-data', nd).status, 0);
  assert.equal(readFileSync(again, 'utf8'), text);
});

test('node data: thresholds colour nodes, malformed files are usage errors', async () => {
  const model = await load(SMALLCNN_QDQ);
  try {
    const g = model.graph();
    const doc = { results: { c1_Conv: { value: 5 }, c2_Conv: { value: 50 } }, thresholds: [{ value: 10, bgColor: '#00ff00' }, { value: 100, bgColor: '#ff0000' }] };
    const d = toDrawable(g, { overlay: 'error', nodeData: parseNodeData(doc) });
    assert.equal(d.nodes.find((n) => n.name === 'c1_Conv').fill, '#00ff00');
    assert.equal(d.nodes.find((n) => n.name === 'c2_Conv').fill, '#ff0000');
    assert.equal(d.nodes.find((n) => n.name === 'c3_Conv').fill, '#e5e7eb'); // no value
    assert.deepEqual(nodeData({ a: 1 }, { label: 'x' }).results, { a: { value: 1 } });
  } finally {
    model.dispose();
  }
  const bad = path.join(tmp, 'bad.json');
  writeFileSync(bad, '{"results": {"c1_Conv": {"value": "x"}}}');
  const r = cli('render', SMALLCNN_QDQ, '-o', path.join(tmp, 'x.svg'), '--overlay', 'error', '--node-data', bad);
  assert.equal(r.status, 2);
  assert.match(r.stderr, /results\['c1_Conv'\]\.value must be a number/);
});

test('run(feeds, {profile: true, repeats}) gives per-node medians; --version prints the package version', async () => {
  const model = await load(MNIST);
  try {
    const feeds = { Input3: { data: new Float32Array(784).fill(0.5), dims: [1, 1, 28, 28] } };
    const plain = await model.run(feeds);
    const profiled = await model.run(feeds, { profile: true, repeats: 3 });
    assert.deepEqual(Object.keys(profiled), Object.keys(plain));
    assert.deepEqual(profiled.Plus214_Output_0.data, plain.Plus214_Output_0.data);
    assert.equal(profiled.profile.length, 11);
    assert.ok(profiled.profile.every((n) => n.ms >= n.kernelMs && n.kernelMs >= 0));
  } finally {
    model.dispose();
  }
  const pkg = JSON.parse(readFileSync(path.join(REPO, 'package.json'), 'utf8'));
  assert.equal(execFileSync(process.execPath, [CLI, '--version'], { encoding: 'utf8' }).trim(), pkg.version);
});
