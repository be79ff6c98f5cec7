// The decision records of docs/graph-json.md built from the core's lowered
// graph JSON (wqx_graph_json: nodes with backend/role/why, tensors with dtype,
// dims and full qparams). What the core does not state itself is derived
// here from the graph: layouts (from the channels-last ops and transitions),
// int8 regions (connected int8 nodes), transitions, reason codes, byte counts.
// Pure: no wasm, no DOM, no Node APIs.

const DTYPE_BYTES = { float32: 4, float16: 2, float64: 8, int8: 1, uint8: 1, int16: 2, uint16: 2, int32: 4, uint32: 4, int64: 8, uint64: 8, bool: 1 };
const TRANSITION_OPS = { ToNHWC: ['NCHW', 'NHWC'], ToNCHW: ['NHWC', 'NCHW'] };

const LAYOUTS = {
  NCHW: { name: 'NCHW', order: [0, 1, 2, 3], packed_dim: -1, block: 0 },
  NHWC: { name: 'NHWC', order: [0, 2, 3, 1], packed_dim: -1, block: 0 },
};

function plainLayout(rank) {
  return { name: 'plain', order: Array.from({ length: Math.max(rank, 0) }, (_, i) => i), packed_dim: -1, block: 0 };
}

function tensorBytes(t) {
  if (!t.dims || t.dims.some((d) => d < 0)) return 0;
  return t.dims.reduce((a, b) => a * b, 1) * (DTYPE_BYTES[t.dtype] ?? 0);
}

// The fixed reason codes (docs/graph-json.md) from what the lowering said.
function reasonOf(node, lowered) {
  const detail = node.why || '';
  if (TRANSITION_OPS[node.op]) return { code: 'TRANSITION', detail };
  if (node.role === 'quantize' || node.role === 'dequantize') return { code: 'BOUNDARY', detail };
  if (node.backend.startsWith('int8')) return { code: 'INT8', detail };
  if (node.role === 'data') return { code: 'SHAPE', detail: 'computes shapes or indices (integers); moves no activations' };
  if (!lowered) return { code: 'MODE_FP', detail: detail || 'lowering off: runs as in the file' };
  if (/not supported|unsupported|no int8/i.test(detail)) return { code: 'UNSUPPORTED_OP', detail };
  if (/per-channel/i.test(detail) && /activation/i.test(detail)) return { code: 'PER_CHANNEL_ACTIVATION', detail };
  if (/qparams|scale/i.test(detail) && /not constant|missing/i.test(detail)) return { code: 'NO_QPARAMS', detail };
  return { code: 'NOT_QUANTIZED', detail: detail || 'float op with float neighbours' };
}

const fmtBytes = (b) => (b >= 1 << 20 ? `${(b / (1 << 20)).toFixed(1)} MB` : b >= 1024 ? `${(b / 1024).toFixed(1)} KB` : `${b} B`);

/**
 * raw: the core's JSON (parsed). options: {lowered (default true),
 * memory: model.memory}. Returns the graph-json document (schema 1 fields
 * this build can state; arena offsets are not exposed by the core yet, so
 * tensors carry arena {first, last} steps without an offset).
 */
export function buildGraphRecords(raw, { lowered = true, memory = null } = {}) {
  const tensors = raw.tensors.map((t) => ({
    id: t.id,
    name: t.name,
    kind: t.kind,
    dtype: t.dtype,
    dims: t.dims ?? [],
    layout: null,
    qparams: t.qparams,
    producer: -1,
    consumers: [],
    bytes: tensorBytes(t),
    arena: null,
  }));
  raw.nodes.forEach((n) => {
    for (const o of n.outputs) if (o >= 0) tensors[o].producer = n.id;
    for (const i of n.inputs) if (i >= 0 && !tensors[i].consumers.includes(n.id)) tensors[i].consumers.push(n.id);
  });
  // Layouts: channels-last ops and ToNHWC write NHWC; other rank-4 tensors are NCHW.
  for (const t of tensors) {
    const rank = t.dims.length;
    const producer = t.producer >= 0 ? raw.nodes[t.producer] : null;
    const nhwc = producer && (producer.op.endsWith('NHWC') || producer.op === 'ToNHWC');
    t.layout = rank === 4 ? { ...(nhwc ? LAYOUTS.NHWC : LAYOUTS.NCHW) } : plainLayout(rank);
  }
  const nodes = raw.nodes.map((n) => ({
    id: n.id,
    name: n.name,
    op: n.op,
    domain: n.domain,
    source_ops: [],
    source_nodes: [],
    backend: n.backend,
    role: TRANSITION_OPS[n.op] ? 'transition' : n.role,
    region: -1,
    reason: reasonOf(n, lowered),
    kernel: (/kernel ([A-Za-z0-9_]+)/.exec(n.why || '') ?? [])[1] ?? '',
    inputs: n.inputs,
    outputs: n.outputs,
  }));
  // Regions: int8 nodes joined through the tensors between them, in graph order.
  const regionOf = new Array(nodes.length).fill(-1);
  const regions = [];
  for (const start of nodes) {
    if (!start.backend.startsWith('int8') || regionOf[start.id] >= 0) continue;
    const region = { id: regions.length + 1, backend: start.backend, nodes: [], transitions: 0, transition_bytes: 0 };
    regions.push(region);
    const stack = [start.id];
    regionOf[start.id] = region.id;
    while (stack.length) {
      const n = nodes[stack.pop()];
      region.nodes.push(n.id);
      const neighbours = [
        ...n.inputs.filter((i) => i >= 0).map((i) => tensors[i].producer),
        ...n.outputs.filter((o) => o >= 0).flatMap((o) => tensors[o].consumers),
      ];
      for (const m of neighbours) {
        if (m >= 0 && regionOf[m] < 0 && nodes[m].backend.startsWith('int8')) {
          regionOf[m] = region.id;
          stack.push(m);
        }
      }
    }
    region.nodes.sort((a, b) => a - b);
  }
  nodes.forEach((n) => (n.region = regionOf[n.id]));
  const transitions = [];
  for (const n of nodes) {
    const dirs = TRANSITION_OPS[n.op];
    if (!dirs) continue;
    const tin = n.inputs[0];
    const tout = n.outputs[0];
    const bytes = tensors[tout]?.bytes || tensors[tin]?.bytes || 0;
    transitions.push({ node: n.id, from: dirs[0], to: dirs[1], tensor_in: tin, tensor_out: tout, bytes, region: n.region, fused: false });
    const region = regions[n.region - 1];
    if (region) {
      region.transitions++;
      region.transition_bytes += bytes;
    }
  }
  // Lifetimes in execution steps (the arena planner's [first, last]).
  for (const t of tensors) {
    if (t.kind !== 'intermediate' || t.producer < 0) continue;
    t.arena = { offset: null, size: t.bytes, first: t.producer, last: Math.max(t.producer, ...t.consumers) };
  }
  return {
    schema: 1,
    mode: !lowered ? 'fp' : nodes.some((n) => n.backend === 'float' && n.role === 'compute') ? 'int+fp' : 'int',
    summary: summaryLine(nodes, regions, transitions),
    inputs: raw.inputs,
    outputs: raw.outputs,
    nodes,
    tensors,
    regions,
    transitions,
    memory: memory
      ? { arena_bytes: memory.arenaBytes, lower_bound_bytes: memory.lowerBoundBytes, planned: memory.planned }
      : { arena_bytes: 0, lower_bound_bytes: 0, planned: false },
    passes: [],
  };
}

function summaryLine(nodes, regions, transitions) {
  const int8 = nodes.filter((n) => n.backend.startsWith('int8') && n.role !== 'quantize' && n.role !== 'dequantize').length;
  const boundary = nodes.filter((n) => n.role === 'quantize' || n.role === 'dequantize').length;
  const floats = nodes.filter((n) => n.backend === 'float' && n.role !== 'data');
  const shapeNodes = nodes.filter((n) => n.role === 'data').length;
  const why = new Map();
  for (const n of floats) if (n.reason.code !== 'NOT_QUANTIZED' && n.reason.code !== 'MODE_FP') why.set(n.op, (why.get(n.op) ?? 0) + 1);
  const whyText = why.size ? ` (${[...why].map(([op, c]) => `${op} x${c}`).join(', ')} unsupported)` : '';
  const bytes = transitions.reduce((a, t) => a + t.bytes, 0);
  return (
    `int8: ${int8} of ${nodes.length} nodes in ${regions.length} region${regions.length === 1 ? '' : 's'}; ` +
    `quantize/dequantize: ${boundary}; float: ${floats.length} node${floats.length === 1 ? '' : 's'}${whyText}; ` +
    (shapeNodes ? `shape computations: ${shapeNodes}; ` : '') +
    `${transitions.length} transition${transitions.length === 1 ? '' : 's'} moving ${fmtBytes(bytes)}`
  );
}

export { fmtBytes };
