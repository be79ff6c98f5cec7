// Graph records (docs/graph-json.md) -> a drawable model: boxes with labels
// and colours, edges labelled with dtype/layout/qparams, transitions as their
// own shape, overlays as heat colours. Pure data: the renderer (render.mjs)
// and the page only draw what this returns. Also reads and writes Model
// Explorer's node-data JSON ({results: {nodeId: {value}}, gradient|thresholds}).

// Fill = backend, always (Okabe-Ito colours and Tol's wine: told apart with any common
// colour-vision deficiency); an int8 region is an outline, never a fill.
export const BACKEND_COLOURS = {
  'int8-simd': '#009e73',
  'int8-ref': '#f0e442',
  float: '#0072b2',
  quantize: '#e69f00',
  transition: '#882255',
  io: '#6b7280',
};

export const LEGEND = [
  { key: 'int8-simd', label: 'int8 (SIMD)' },
  { key: 'int8-ref', label: 'int8 (reference)' },
  { key: 'float', label: 'float' },
  { key: 'quantize', label: 'quantize / dequantize' },
  { key: 'transition', label: 'layout transition' },
  { key: 'io', label: 'graph input / output' },
];

// Region outlines: dark, so they never read as a backend fill; region k
// (1-based) takes entry (k - 1) mod length.
export const REGION_OUTLINES = ['#1f2937', '#7c2d12', '#1e3a8a', '#581c87', '#14532d', '#831843'];
export const REGION_STROKE_WIDTH = 3.5;
// Heat ramp (low -> high), used when node-data gives no gradient of its own.
const HEAT = [
  { stop: 0, bgColor: '#fff5d6' },
  { stop: 0.5, bgColor: '#f59e0b' },
  { stop: 1, bgColor: '#b91c1c' },
];

const fmtNum = (x) => (x === 0 ? '0' : Math.abs(x) >= 0.01 && Math.abs(x) < 1000 ? String(+x.toPrecision(3)) : x.toExponential(2));
const fmtBytes = (b) => (b >= 1 << 20 ? `${(b / (1 << 20)).toFixed(1)} MB` : b >= 1024 ? `${(b / 1024).toFixed(1)} KB` : `${b} B`);

/**
 * What the core's op registry says about a node's op (graph.legend.ops,
 * docs/graph-json.md): "int8: conv -> QConv; layout: nchw", "int8: none
 * (runs float); layout: nchw", "int8: kernel; layout: nhwc-kernel (NCHW or NHWC)" (the
 * layouts its kernel takes when more than one: it follows its tensors').
 * '' when the records carry no legend (an older core).
 */
export function capabilityLabel(graph, node) {
  const c = graph.legend?.ops?.find((o) => o.op === node.op && o.domain === node.domain);
  if (!c) return '';
  const int8 = c.int8 === 'none' ? 'none (runs float)' : c.as ? `${c.int8} -> ${c.as}` : c.int8;
  const layouts = c.layouts?.length > 1 ? ` (${c.layouts.join(' or ')})` : '';
  return `int8: ${int8}; layout: ${c.layout}${layouts}`;
}

/**
 * What each layout decision code (node.layout.why, docs/graph-json.md
 * "Layout decision records") means, for people; the core emits only the codes.
 */
export const LAYOUT_WHY = {
  NOT_PLANNED: 'no activation of it can change order (floats, no image axes, unknown dims or per-channel codes)',
  DECLARED: 'its op runs only in the declared order (channels-first)',
  KERNEL_CHANNELS_LAST: 'its SIMD kernel runs channels-last',
  PLANNED: 'free: the planner chose this order (fewest bytes moved)',
  FUSED_BOUNDARY: 'free: channels-last, the layout change fused into this quantize/dequantize',
  AS_WRITTEN: 'reads its input in whatever order it was written (dims only, or the same bytes in both orders)',
  TRANSITION: 'a layout conversion the planner inserted',
};

/** "NHWC · KERNEL_CHANNELS_LAST (fixed)", "— · AS_WRITTEN", '' without a record (an older core). */
export function layoutLabel(node) {
  const l = node.layout;
  return l ? `${l.label ?? '—'} · ${l.why} (${l.fixed ? 'fixed' : 'planner'})` : '';
}

/** A free node's margin: "NCHW alone would move 384 B more", "a tie: NHWC would move as much (declared preferred)", '' when fixed. */
export function layoutMargin(node) {
  const l = node.layout;
  if (!l || l.fixed || l.other_bytes == null) return '';
  const other = l.label === 'NHWC' ? 'NCHW' : 'NHWC';
  return l.other_bytes > 0 ? `${other} alone would move ${fmtBytes(l.other_bytes)} more` : `a tie: ${other} would move as much (declared preferred)`;
}

/** The transition converting at node id (explicit or fused), or null. */
export function transitionAt(graph, id) {
  return graph.transitions.find((t) => t.node === id) ?? null;
}

/**
 * Why a transition exists, from its record: "ToNHWC 'x_to_nhwc' converts 'x'
 * NCHW→NHWC (3.0 KB) because QConv 'c2' (NHWC, KERNEL_CHANNELS_LAST) reads
 * it NHWC; 'x' comes from the graph input (NCHW, DECLARED)."
 */
/**
 * What a transition moves per run from its record: "fused" (no pass of its
 * own), "3.0 KB", or "3.0 KB, planned 2.0 KB" where the planner counted other
 * bytes for it than its node moves.
 */
export function transitionBytes(t) {
  if (t.fused) return 'fused';
  const planned = t.planned_bytes ?? t.bytes;
  return planned === t.bytes ? fmtBytes(t.bytes) : `${fmtBytes(t.bytes)}, planned ${fmtBytes(planned)}`;
}

export function transitionWhy(graph, t) {
  const at = graph.nodes[t.node];
  const who = (n) => `${n.op} '${n.name}' (${n.layout?.label ?? '—'}, ${n.layout?.why ?? '?'})`;
  const readers = (t.needed_by ?? []).map((i) => who(graph.nodes[i]));
  if (t.graph_output) readers.push('the graph output (NCHW, DECLARED)');
  const src = graph.tensors[t.tensor_in];
  const from = t.producer >= 0 ? who(graph.nodes[t.producer]) : `the graph input (${t.producer_layout?.label ?? 'NCHW'}, ${t.producer_layout?.why ?? 'DECLARED'})`;
  return `${at.op} '${at.name}' converts '${src.name}' ${t.from}→${t.to} (${t.fused ? 'fused, no extra pass' : transitionBytes(t)}) because ` +
    `${readers.length ? readers.join(', ') : 'nobody'} read${readers.length === 1 ? 's' : ''} it ${t.to}; '${src.name}' comes from ${from}.`;
}

/** "int8 NHWC s=0.0235 zp=-3", "int8 per-channel[32]", "float32 NCHW 1x16x28x28". */
export function tensorLabel(t) {
  // The records say 'undefined' where shape inference left the dtype open (symbolic inputs).
  const parts = [t.dtype === 'undefined' ? 'dtype ?' : t.dtype];
  if (t.layout && t.layout.name !== 'plain') parts.push(t.layout.name);
  const q = t.qparams;
  if (q && q.scale.length === 1) parts.push(`s=${fmtNum(q.scale[0])} zp=${q.zero_point[0]}`);
  else if (q) parts.push(`${q.granularity}[${q.scale.length}]`);
  else if (t.dims?.length) parts.push(t.dims.map((d) => (d < 0 ? '?' : d)).join('x'));
  return parts.join(' ');
}

export function colourKey(node) {
  if (node.role === 'transition') return 'transition';
  if (node.role === 'quantize' || node.role === 'dequantize') return 'quantize';
  return BACKEND_COLOURS[node.backend] ? node.backend : 'float';
}

function heatColour(value, min, max, gradient = HEAT) {
  const x = max > min ? (value - min) / (max - min) : 1;
  let a = gradient[0];
  let b = gradient[gradient.length - 1];
  for (let i = 1; i < gradient.length; i++) {
    if (x <= gradient[i].stop) {
      a = gradient[i - 1];
      b = gradient[i];
      break;
    }
  }
  const f = b.stop > a.stop ? Math.min(1, Math.max(0, (x - a.stop) / (b.stop - a.stop))) : 0;
  const ch = (c, k) => parseInt(c.slice(1 + 2 * k, 3 + 2 * k), 16);
  const mix = [0, 1, 2].map((k) => Math.round(ch(a.bgColor, k) + (ch(b.bgColor, k) - ch(a.bgColor, k)) * f));
  return `#${mix.map((v) => v.toString(16).padStart(2, '0')).join('')}`;
}

function thresholdColour(value, thresholds) {
  for (const t of thresholds) if (value <= t.value) return t.bgColor;
  return thresholds[thresholds.length - 1].bgColor;
}

/** Text colour readable on a fill. */
function inkOn(fill) {
  const ch = (k) => parseInt(fill.slice(1 + 2 * k, 3 + 2 * k), 16);
  return 0.299 * ch(0) + 0.587 * ch(1) + 0.114 * ch(2) > 150 ? '#111827' : '#ffffff';
}

/**
 * graph: records; options.overlay: 'region' (backend colours and region
 * outlines) | 'time' | 'error'; options.nodeData: Model Explorer node-data
 * JSON with the overlay's values by node name (see nodeData());
 * options.direction: 'TB' (top-down, default) or 'LR' (left to right);
 * options.collapse: each int8 region of 2+ nodes drawn as one box.
 */
export function toDrawable(graph, { overlay = 'region', nodeData = null, direction = 'TB', collapse = false } = {}) {
  const values = new Map(Object.entries(nodeData?.results ?? {}).map(([k, v]) => [k, v.value]));
  const finite = [...values.values()].filter(Number.isFinite);
  const min = finite.length ? Math.min(...finite) : 0;
  const max = finite.length ? Math.max(...finite) : 0;
  const nodes = [];
  const edges = [];
  for (const id of graph.inputs) {
    const t = graph.tensors[id];
    nodes.push(ioNode(`in:${id}`, t, 'input'));
  }
  for (const n of graph.nodes) {
    const key = colourKey(n);
    let fill = BACKEND_COLOURS[key];
    let value;
    if (overlay !== 'region') {
      value = values.get(n.name);
      if (value === undefined || !Number.isFinite(value)) fill = '#e5e7eb';
      else if (nodeData?.thresholds) fill = thresholdColour(value, nodeData.thresholds);
      else fill = heatColour(value, min, max, nodeData?.gradient ?? HEAT);
    }
    // A transition node, or a Quantize/DequantizeLinear with one fused in (drawn as itself).
    const transition = graph.transitions.find((t) => t.node === n.id) ?? null;
    const hexagon = transition && !transition.fused;
    const op = n.op;
    const sub = transition
      ? `${transition.from}→${transition.to} ${transitionBytes(transition)}`
      : value !== undefined && overlay !== 'region'
        ? `${overlay === 'time' ? 'ms' : nodeData?.label ?? 'err'} ${Number.isFinite(value) ? fmtNum(value) : '–'}`
        : n.kernel || (n.role === 'compute' ? n.backend : n.role);
    const label = op.length > 24 ? `${op.slice(0, 23)}…` : op;
    nodes.push({
      key: `n:${n.id}`,
      kind: hexagon ? 'transition' : 'op',
      id: n.id,
      name: n.name,
      label,
      sub,
      fill,
      ink: inkOn(fill),
      stroke: n.region > 0 ? REGION_OUTLINES[(n.region - 1) % REGION_OUTLINES.length] : '#374151',
      strokeWidth: n.region > 0 ? REGION_STROKE_WIDTH : 1.2,
      width: Math.max(120, 8 * Math.max(label.length, sub.length) + 24),
      height: hexagon ? 40 : 44,
      attrs: {
        'data-node': n.name,
        'data-node-id': String(n.id),
        'data-op': n.op,
        'data-backend': n.backend,
        'data-role': n.role,
        'data-region': String(n.region),
        'data-reason': n.reason.code,
        ...(n.layout ? { 'data-layout': n.layout.label ?? '', 'data-layout-why': n.layout.why } : {}),
        ...(transition ? { 'data-transition': `${transition.from}->${transition.to}`, 'data-bytes': String(transition.bytes) } : {}),
        ...(value !== undefined ? { 'data-value': String(value) } : {}),
      },
    });
    for (const tid of n.inputs) {
      if (tid < 0) continue;
      const t = graph.tensors[tid];
      if (t.kind === 'constant') continue; // weights are in the side panel, not edges
      const from = t.producer >= 0 ? `n:${t.producer}` : `in:${tid}`;
      edges.push({ from, to: `n:${n.id}`, tensor: tid, label: tensorLabel(t) });
    }
  }
  for (const id of graph.outputs) {
    const t = graph.tensors[id];
    nodes.push(ioNode(`out:${id}`, t, 'output'));
    if (t.producer >= 0) edges.push({ from: `n:${t.producer}`, to: `out:${id}`, tensor: id, label: tensorLabel(t) });
  }
  const shown = collapse ? collapseRegions(graph, nodes, edges) : { nodes, edges };
  // Edges from inputs that were never declared as a graph input (should not happen) are dropped.
  const keys = new Set(shown.nodes.map((n) => n.key));
  return {
    overlay,
    direction,
    summary: graph.summary,
    nodes: shown.nodes,
    edges: shown.edges.filter((e) => keys.has(e.from) && keys.has(e.to)),
    range: overlay === 'region' ? null : { min, max, label: nodeData?.label ?? overlay },
  };
}

/**
 * Each int8 region of two or more nodes becomes one box (where its first
 * node was: execution order stays), naming its node count and most common
 * ops; edges inside it go, edges across its border attach to the box.
 */
function collapseRegions(graph, nodes, edges) {
  const members = new Map();
  for (const n of graph.nodes) if (n.region > 0) members.set(n.region, [...(members.get(n.region) ?? []), n]);
  const boxOf = new Map();
  const boxes = new Map();
  for (const [region, list] of members) {
    if (list.length < 2) continue;
    const counts = new Map();
    for (const n of list) counts.set(n.op, (counts.get(n.op) ?? 0) + 1);
    const ops = [...counts].sort((a, b) => b[1] - a[1]).slice(0, 3).map(([op, c]) => `${op}×${c}`).join(' ');
    const label = `int8 region ${region}`;
    const sub = `${list.length} nodes: ${ops}`;
    const fill = BACKEND_COLOURS['int8-simd'];
    boxes.set(`r:${region}`, {
      key: `r:${region}`,
      kind: 'op',
      id: -region,
      name: `${label} (${list.length} nodes)`,
      label,
      sub,
      fill,
      ink: inkOn(fill),
      stroke: REGION_OUTLINES[(region - 1) % REGION_OUTLINES.length],
      strokeWidth: REGION_STROKE_WIDTH,
      width: Math.max(140, 7 * sub.length + 24),
      height: 44,
      attrs: { 'data-region-group': String(region), 'data-region': String(region), 'data-members': String(list.length), 'data-backend': 'int8-simd', 'data-role': 'region' },
    });
    for (const n of list) boxOf.set(`n:${n.id}`, `r:${region}`);
  }
  const out = [];
  const placed = new Set();
  for (const n of nodes) {
    const box = boxOf.get(n.key);
    if (!box) out.push(n);
    else if (!placed.has(box)) {
      placed.add(box);
      out.push(boxes.get(box));
    }
  }
  const seen = new Set();
  const kept = [];
  for (const e of edges) {
    const from = boxOf.get(e.from) ?? e.from;
    const to = boxOf.get(e.to) ?? e.to;
    const id = `${from}>${to}:${e.tensor}`;
    if (from === to || seen.has(id)) continue;
    seen.add(id);
    kept.push({ ...e, from, to });
  }
  return { nodes: out, edges: kept };
}

function ioNode(key, t, role) {
  const label = t.name.length > 24 ? `${t.name.slice(0, 23)}…` : t.name;
  const sub = `${t.dtype} ${(t.dims ?? []).map((d) => (d < 0 ? '?' : d)).join('x')}`;
  return {
    key,
    kind: 'io',
    id: t.id,
    name: t.name,
    label,
    sub,
    fill: '#f3f4f6',
    ink: '#111827',
    stroke: BACKEND_COLOURS.io,
    width: Math.max(110, 7.2 * Math.max(label.length, sub.length) + 24),
    height: 40,
    attrs: { [`data-graph-${role}`]: t.name },
  };
}

/**
 * Model Explorer node-data JSON for one overlay. values: Map or object
 * {nodeName: number}. label names the quantity ("ms", "SNR dB"...).
 */
export function nodeData(values, { label = 'value', gradient = HEAT } = {}) {
  const entries = values instanceof Map ? [...values] : Object.entries(values);
  return { label, results: Object.fromEntries(entries.map(([k, v]) => [k, { value: v }])), gradient };
}

/** Accepts node-data JSON as Model Explorer writes it (results keyed by node id/name), checking its shape. */
export function parseNodeData(json) {
  const doc = typeof json === 'string' ? JSON.parse(json) : json;
  // Model Explorer also wraps per-graph: {graphName: {results...}}.
  const data = doc?.results ? doc : Object.values(doc ?? {}).find((v) => v?.results);
  if (!data || typeof data.results !== 'object') throw new Error('node data: expected {results: {nodeId: {value}}}');
  for (const [k, v] of Object.entries(data.results)) {
    if (typeof v?.value !== 'number') throw new Error(`node data: results['${k}'].value must be a number`);
  }
  return data;
}

/** Memory lanes: one per intermediate with a lifetime, sorted by first step. */
export function memoryLanes(graph) {
  return graph.tensors
    .filter((t) => t.arena)
    .map((t) => ({ tensor: t.id, name: t.name, first: t.arena.first, last: t.arena.last, bytes: t.arena.size, offset: t.arena.offset }))
    .sort((a, b) => a.first - b.first || b.bytes - a.bytes);
}

export { fmtBytes, fmtNum };
