// A synthetic graph of n nodes in the records format (docs/graph-json.md), for
// the large-graph layout check: residual blocks (a branch and an Add every
// few nodes), int8 regions broken by float islands, transitions at region
// edges. Deterministic.
export function syntheticGraph(n) {
  const nodes = [];
  const tensors = [];
  const tensor = (name, extra = {}) => {
    const t = { id: tensors.length, name, kind: 'intermediate', dtype: 'int8', dims: [1, 32, 56, 56], layout: { name: 'NHWC', order: [0, 2, 3, 1], packed_dim: -1, block: 0 }, qparams: { dtype: 'int8', granularity: 'per-tensor', axis: -1, scale: [0.02], zero_point: [0] }, producer: -1, consumers: [], bytes: 100352, arena: null, ...extra };
    tensors.push(t);
    return t.id;
  };
  const input = tensor('input', { kind: 'input', dtype: 'float32', qparams: null, layout: { name: 'NCHW', order: [0, 1, 2, 3], packed_dim: -1, block: 0 } });
  let prev = input;
  let skip = input;
  const transitions = [];
  for (let i = 0; i < n; i++) {
    const float = Math.floor(i / 40) % 4 === 3;
    const isTransition = i % 40 === 0;
    const isAdd = i % 5 === 4;
    const op = isTransition ? 'ToNHWC' : isAdd ? (float ? 'Add' : 'QAdd') : float ? 'Conv' : 'QConv';
    const out = tensor(`t${i}`, float ? { dtype: 'float32', qparams: null } : {});
    const inputs = isAdd ? [prev, skip] : [prev];
    nodes.push({ id: i, name: `node_${i}`, op, domain: float ? '' : 'wasmq', source_ops: [], source_nodes: [], backend: float ? 'float' : 'int8-simd', role: isTransition ? 'transition' : 'compute', region: float ? -1 : 1 + Math.floor(i / 160), reason: { code: float ? 'NOT_QUANTIZED' : isTransition ? 'TRANSITION' : 'INT8', detail: '' }, kernel: '', inputs, outputs: [out] });
    for (const t of inputs) tensors[t].consumers.push(i);
    tensors[out].producer = i;
    if (isTransition) transitions.push({ node: i, from: 'NCHW', to: 'NHWC', tensor_in: prev, tensor_out: out, bytes: 100352, region: 1, fused: false });
    if (isAdd) skip = out;
    prev = out;
  }
  tensors[prev].kind = 'output';
  return { schema: 1, mode: 'int+fp', summary: `synthetic: ${n} nodes`, inputs: [input], outputs: [prev], nodes, tensors, regions: [], transitions, memory: { arena_bytes: 0, lower_bound_bytes: 0, planned: false }, passes: [] };
}
