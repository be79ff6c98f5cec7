// Every node's decision record (src/core/ir/decision.h) as the graph JSON,
// `info --lowered` and the summary line render it, on every shared model
// (../shared/models, ../shared/models-int8) and the QDQ graphs under
// tests/models:
//  - the summary lists every float node under its op and reason code, and
//    each "Op xN CODE" entry is exactly the float nodes of that op and code
//    in the node records (the counts add up);
//  - `info --lowered` prints the record of each node: its reason code and
//    the nodes it replaced, its sentence and the kernel its plan chose;
//  - the layout planner's charges: the nodes' planned_bytes add up to the
//    pass's planned minimum, the transitions' bytes to what the pass says
//    they move, and each transition moves what the planner counted for it;
//  - the quantize report renders the records of the model it wrote: the
//    runtime summary and, per float-graph node, the runtime node standing
//    for it (found through the records' sources).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { load, quantize } from '../../src/js/index.mjs';
import { randomArray } from '../../src/js/random.mjs';
import { MODELS, MODEL_INPUT_SHAPES, REPO, SHARED } from './helpers.mjs';

function sharedModels() {
  const out = [];
  for (const root of [MODELS, path.join(SHARED, 'models-int8')]) {
    if (!existsSync(root)) continue;
    for (const dir of readdirSync(root).sort()) {
      const d = path.join(root, dir);
      if (existsSync(path.join(d, 'model.onnx'))) out.push({ name: dir, file: path.join(d, 'model.onnx') });
      else if (dir === 'synthetic') {
        for (const f of readdirSync(d).filter((f) => f.endsWith('.onnx')).sort()) out.push({ name: f, file: path.join(d, f) });
      }
    }
  }
  for (const f of readdirSync(path.join(REPO, 'tests/models')).filter((f) => f.endsWith('_qdq.onnx')).sort()) {
    out.push({ name: f, file: path.join(REPO, 'tests/models', f) });
  }
  return out;
}

/** The summary's float entries: {total, entries: Map('Op CODE' -> count)}. */
export function summaryFloats(summary) {
  const m = summary.match(/float: (\d+) nodes?(?: \(([^)]*)\))?/);
  assert.ok(m, `no float count in: ${summary}`);
  const entries = new Map();
  for (const e of (m[2] ?? '').split(', ').filter(Boolean)) {
    const p = e.match(/^(\S+) x(\d+) ([A-Z_0-9]+)$/);
    assert.ok(p, `entry '${e}' of: ${summary}`);
    entries.set(`${p[1]} ${p[3]}`, Number(p[2]));
  }
  return { total: Number(m[1]), entries };
}

/** Checks one loaded model's records; returns what it saw, for the totals. */
function checkRecords(name, g, lowered) {
  // Summary <-> node records.
  const f = summaryFloats(g.summary);
  const listed = [...f.entries.values()].reduce((a, b) => a + b, 0);
  assert.equal(listed, f.total, `${name}: the float entries add up to ${listed}, not ${f.total}: ${g.summary}`);
  const fromNodes = new Map();
  for (const n of g.nodes) {
    assert.ok(n.reason && typeof n.reason.code === 'string' && n.reason.code !== 'NONE', `${name}: node ${n.name} has no reason code`);
    if (n.backend !== 'float' || n.role === 'data') continue;
    const key = `${n.op} ${n.reason.code}`;
    fromNodes.set(key, (fromNodes.get(key) ?? 0) + 1);
  }
  assert.deepEqual(Object.fromEntries([...f.entries].sort()), Object.fromEntries([...fromNodes].sort()), `${name}: ${g.summary}`);

  // `info --lowered` renders the same record: one block per node, its
  // sentence and its kernel.
  const blocks = lowered.split('\n').slice(1).join('\n').split(/\n(?=  \[)/).map((b) => `${b.replace(/\n$/, '')}\n`);
  assert.equal(blocks.length, g.nodes.length, `${name}: info --lowered lists ${blocks.length} nodes, the JSON ${g.nodes.length}`);
  g.nodes.forEach((n, i) => {
    const b = blocks[i];
    assert.ok(b.includes(` ${n.name}\n`), `${name}: block ${i} is not ${n.name}: ${b.slice(0, 80)}`);
    const from = n.source_ops.map((op, k) => `${op} '${n.source_nodes[k]}'`).join(', ');
    assert.ok(b.includes(`\n      decision: ${n.reason.code}${from ? ` from ${from}` : ''}\n`), `${name}: ${n.name}'s decision line: ${b}`);
    if (n.reason.detail) assert.ok(b.includes(`why: ${n.reason.detail}`), `${name}: ${n.name}'s detail missing from info --lowered`);
    if (n.kernel) assert.ok(b.includes(`kernel: ${n.kernel} (${n.kernel_isa})`), `${name}: ${n.name}'s kernel missing`);
    else assert.ok(!b.includes('kernel: '), `${name}: ${n.name} prints a kernel its record does not have`);
  });

  // The layout planner's charges.
  const plan = g.passes.find((p) => p.name === 'layout_int8' && p.ran)?.stats;
  const charged = g.nodes.reduce((a, n) => a + n.layout.planned_bytes, 0);
  const moved = g.transitions.reduce((a, t) => a + t.bytes, 0);
  if (plan) {
    assert.equal(charged, plan.planned_bytes, `${name}: the nodes' planned_bytes add up to ${charged}, the planner's minimum is ${plan.planned_bytes}`);
    assert.equal(moved, plan.transition_bytes, `${name}: transitions move ${moved}, the pass says ${plan.transition_bytes}`);
  } else {
    assert.equal(charged, 0, name);
  }
  for (const t of g.transitions) {
    assert.equal(t.planned_bytes, g.nodes[t.node].layout.planned_bytes, `${name}: transition ${t.node}`);
    if (t.fused) assert.equal(t.bytes, 0, `${name}: fused transition ${t.node} moves bytes`);
    else assert.equal(t.bytes, t.planned_bytes, `${name}: transition ${g.nodes[t.node].name} moves ${t.bytes} B, the planner counted ${t.planned_bytes} B`);
  }
  return { transitions: g.transitions.filter((t) => !t.fused).length, charged, kernels: g.nodes.filter((n) => n.kernel).length };
}

test('decision records: summaries add up, info --lowered and the JSON agree, planner charges add up (every shared model)', async (t) => {
  const models = sharedModels();
  assert.ok(models.length >= 10, `only ${models.length} models found under ${SHARED}`);
  const seen = { transitions: 0, charged: 0, kernels: 0 };
  for (const { name, file } of models) {
    const modes = /int8|qdq|qlinear/.test(name) || file.includes('models-int8') ? ['int+fp', 'fp'] : ['int+fp'];
    for (const partition of modes) {
      const shapes = MODEL_INPUT_SHAPES[name];
      const model = await load(readFileSync(file), { partition, ...(shapes ? { inputShapes: shapes } : {}) });
      try {
        const r = checkRecords(`${name} (${partition})`, model.graph(), model.describeLowered());
        for (const k of Object.keys(seen)) seen[k] += r[k];
      } finally {
        model.dispose();
      }
    }
  }
  t.diagnostic(`${models.length} models: ${seen.kernels} kernel records, ${seen.transitions} unfused transitions, ${seen.charged} B charged by the planner`);
  // The checks above saw real records, not empty ones.
  assert.ok(seen.kernels > 50, `only ${seen.kernels} nodes with a kernel record`);
  assert.ok(seen.transitions > 0 && seen.charged > 0, 'no transition charged by the planner among the models');
});

test('the summary parser and the cross-check fail on a miscount', () => {
  const f = summaryFloats('int8: 3 of 5 nodes in 1 region; quantize/dequantize: 0; float: 2 nodes (Conv x1 OUTPUT_NOT_QUANTIZED, Erf x2 UNSUPPORTED_OP); 0 transitions moving 0 B');
  assert.equal(f.total, 2);
  assert.deepEqual([...f.entries], [['Conv OUTPUT_NOT_QUANTIZED', 1], ['Erf UNSUPPORTED_OP', 2]]);
  const g = {
    summary: 'float: 2 nodes (Conv x2 UNSUPPORTED_OP)',
    nodes: [{ name: 'a', op: 'Conv', backend: 'float', role: 'compute', reason: { code: 'UNSUPPORTED_OP', detail: '' }, kernel: '', layout: { planned_bytes: 0 } }],
    transitions: [],
    passes: [],
  };
  assert.throws(() => checkRecords('miscount', g, 'lowered graph\n  [float] Conv a'), /miscount/);
});

test('the quantize report renders the runtime records of the written model (mnist-8)', async () => {
  const q = await quantize(readFileSync(path.join(MODELS, 'mnist-8/model.onnx')));
  let result;
  try {
    for (let k = 0; k < 8; k++) await q.observe({ Input3: { data: randomArray('float32', 784, k).map((v) => Math.abs(v)), dims: [1, 1, 28, 28] } });
    result = await q.finish();
  } finally {
    q.dispose();
  }
  const { report } = result;
  const model = await load(result.onnx);
  try {
    const g = model.graph();
    assert.equal(report.runtime, g.summary);
    const byName = new Map(g.nodes.map((n) => [n.name, n]));
    const standing = (name) => byName.get(name) ?? g.nodes.find((n) => n.source_nodes.includes(name));
    for (const n of report.nodes) {
      const r = standing(n.name);
      assert.ok(r, `${n.name}: no runtime node stands for it`);
      assert.deepEqual(n.runtime, { op: r.op, reason: r.reason.code, kernel: r.kernel }, n.name);
      if (n.decision !== 'float') assert.equal(n.runtime.reason, 'INT8', `${n.name} was quantized but runs ${n.runtime.reason}`);
    }
    // The absorbed Relus stand in their convs' records; the convs name their kernel.
    const relu = report.nodes.find((n) => n.op === 'Relu');
    assert.equal(relu.decision, 'absorbed');
    assert.equal(relu.runtime.op, 'QConv');
    assert.ok(relu.runtime.kernel, 'the QConv names its kernel');
  } finally {
    model.dispose();
  }
});
