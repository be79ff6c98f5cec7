// Generates the small QDQ test graphs of the int8 lowering tests (committed
// next to this script; rerun with `node tests/models/make_qdq_graphs.mjs`):
//
//   seed003_qdq.onnx   seed 003's repro: conv -> relu -> concat (with a
//                      second input whose range pushes the shared concat
//                      qparams to zp != qmin) -> conv, int8 activations;
//   ops_qdq.onnx       every op the lowering handles: depthwise and grouped
//                      conv with fused Clip (zp != qmin), Add with fused Relu,
//                      Mul, Sigmoid, HardSwish, Tanh, x * 0.5, AveragePool,
//                      MaxPool, Resize nearest, DepthToSpace, Reshape,
//                      Transpose, Squeeze, Unsqueeze, Flatten, Concat with
//                      differing qparams, GlobalAveragePool, Gemm (transB,
//                      transA, alpha/beta with a requantized bias, float bias),
//                      MatMul with [K, N] weight, and data-movement ops whose
//                      output qparams differ from their input's;
//   edge_qdq.onnx      what must stay float or lower in pieces: a conv feeding
//                      Softmax, a relu that cannot fuse (its conv has its own
//                      Q), codes read back with another scale, and chained
//                      linears (seed 004);
//   *_f32.onnx         the float graphs they were quantized from.
//
// Weights are seeded (mulberry32); activation ranges are calibrated by
// running the float graph in onnxruntime-node on the same seeded input the
// tests use (src/js/random.mjs, seed 0, uniform [0, 1)). Activations are
// affine int8 (or uint8), weights symmetric int8 [-127, 127] per output
// channel, biases int32 at scale s_x * s_w, as onnxruntime's quantizer and
// PyTorch's export write them.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { FloatGraph, calibrate, quantize } from './qdq_builder.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));

// --- the graphs -----------------------------------------------------------------

function seed003() {
  const g = new FloatGraph('seed003', 'int8');
  g.input('x', [1, 3, 16, 16]);
  g.input('y', [1, 8, 16, 16]);
  g.weight('w1', [8, 3, 3, 3], 0.5);
  g.weight('b1', [8], 0.2, { bias: true });
  g.node('Conv', ['x', 'w1', 'b1'], 'c1', { pads: [1, 1, 1, 1] }, { noq: true });
  // The relu output shares the concat's qparams, whose range the second
  // input widens to [-4, 4]: zero point 0, far from qmin -128, so the relu
  // cannot be folded as "qmin == zp" (seed 003).
  g.node('Relu', ['c1'], 'r1', {}, { share: 'cat' });
  g.node('Concat', ['r1', 'y'], 'cat', { axis: 1 }, { range: [-4, 4] });
  g.opts.set('y', { share: 'cat' });
  g.weight('w2', [4, 16, 3, 3], 0.3);
  g.weight('b2', [4], 0.1, { bias: true });
  g.node('Conv', ['cat', 'w2', 'b2'], 'out', { pads: [1, 1, 1, 1] });
  g.output('out');
  return g;
}

function opsGraph() {
  const g = new FloatGraph('ops', 'int8');
  g.input('x', [1, 4, 8, 8]);
  // Depthwise conv with a fused Clip(-1, 1) whose symmetric-ish range puts zp mid-range.
  g.weight('wdw', [4, 1, 3, 3], 0.8);
  g.weight('bdw', [4], 0.3, { bias: true });
  g.node('Conv', ['x', 'wdw', 'bdw'], 'dw', { group: 4, pads: [1, 1, 1, 1] }, { noq: true });
  g.const('clip_lo', [], [-1]);
  g.const('clip_hi', [], [1]);
  g.node('Clip', ['dw', 'clip_lo', 'clip_hi'], 'dwc', {}, { range: [-1.2, 1.2] });
  // Grouped 1x1 conv 4 -> 8 (groups 2), no activation, float (unquantized) bias.
  g.weight('wg', [8, 2, 1, 1], 0.7);
  g.weight('bg', [8], 0.2, { floatBias: true });
  g.node('Conv', ['dwc', 'wg', 'bg'], 'gc', { group: 2 });
  // Strided conv 8 -> 8 with fused Relu.
  g.weight('ws', [8, 8, 3, 3], 0.3);
  g.weight('bs', [8], 0.1, { bias: true });
  g.node('Conv', ['gc', 'ws', 'bs'], 'sc', { strides: [2, 2], pads: [1, 1, 1, 1] }, { noq: true });
  g.node('Relu', ['sc'], 'scr');
  // Elementwise: Add with fused Relu, Mul, lookups.
  g.node('MaxPool', ['gc'], 'mp', { kernel_shape: [3, 3], strides: [2, 2], pads: [1, 1, 1, 1] }, { share: 'gc' });
  g.node('Add', ['scr', 'mp'], 'add', {}, { noq: true });
  g.node('Relu', ['add'], 'addr');
  g.node('Sigmoid', ['addr'], 'sig');
  g.node('Mul', ['addr', 'sig'], 'mul');
  g.node('HardSwish', ['mul'], 'hsw');
  g.node('Tanh', ['hsw'], 'th');
  g.const('half', [], [0.5]);
  g.node('Mul', ['th', 'half'], 'halved');
  // Pools and data movement (some with their own qparams: requantized).
  g.node('AveragePool', ['halved'], 'ap', { kernel_shape: [2, 2], pads: [0, 0, 1, 1], strides: [1, 1] });
  g.const('scales', [4], [1, 1, 2, 2]);
  g.const('roi', [0], []);
  g.node('Resize', ['ap', 'roi', 'scales'], 'rs', { mode: 'nearest' }, { share: 'ap' });
  g.node('DepthToSpace', ['rs'], 'd2s', { blocksize: 2 }, { range: [-0.8, 0.9] });
  g.ints('shape1', [1, 2, 16, 16]);
  g.node('Reshape', ['d2s', 'shape1'], 'rsh', {}, { share: 'd2s' });
  g.node('Transpose', ['rsh'], 'tr', { perm: [0, 1, 3, 2] }, { share: 'd2s' });
  g.ints('axes0', [0]);
  g.node('Squeeze', ['tr', 'axes0'], 'sq', {}, { share: 'd2s' });
  g.node('Unsqueeze', ['sq', 'axes0'], 'usq', {}, { range: [-1, 1] });
  // Concat of branches with different qparams (QConcat requantizes), then GAP.
  g.weight('wc', [2, 8, 1, 1], 0.5);
  g.node('Conv', ['gc', 'wc'], 'gc2', {});
  g.node('Resize', ['gc2', 'roi', 'scales'], 'gc2u', { mode: 'nearest' }, { share: 'gc2' });
  g.node('Concat', ['usq', 'gc2u'], 'cat', { axis: 1 });
  g.node('GlobalAveragePool', ['cat'], 'gap');
  g.node('Flatten', ['gap'], 'flat', {}, { share: 'gap' });
  // Gemm family: transB with int32 bias; MatMul [K, N]; transA + alpha/beta.
  g.weight('wfc', [6, 4], 0.9, { axis: 0 });
  g.weight('bfc', [6], 0.3, { bias: true });
  g.node('Gemm', ['flat', 'wfc', 'bfc'], 'fc1', { transB: 1 });
  g.weight('wmm', [6, 5], 0.8, { axis: 1 });
  g.node('MatMul', ['fc1', 'wmm'], 'mm');
  g.node('Transpose', ['mm'], 'mmT', { perm: [1, 0] }, { share: 'mm' });
  g.weight('wfc2', [5, 3], 0.8, { axis: 1 });
  g.weight('bfc2', [3], 0.3, { bias: true });
  g.node('Gemm', ['mmT', 'wfc2', 'bfc2'], 'y', { transA: 1, alpha: { float: 0.5 }, beta: { float: 2 } });
  g.output('y');
  // Intermediate results as outputs too, so a wrong code anywhere shows.
  g.output('sig');
  g.output('usq');
  g.output('cat');
  return g;
}

// Cases that must not lower, or lower in pieces, each for a stated reason.
function edgeGraph() {
  const g = new FloatGraph('edge', 'uint8');
  g.input('x', [1, 2, 6, 6]);
  // A conv whose result feeds Softmax, not a QuantizeLinear: stays float.
  g.weight('w1', [3, 2, 3, 3], 0.5);
  g.node('Conv', ['x', 'w1'], 'c1', { pads: [1, 1, 1, 1] }, { noq: true });
  g.node('Softmax', ['c1'], 'sm', { axis: 1 });
  // conv -> Q -> DQ -> relu -> Q: the relu cannot fuse (the conv has its own
  // output parameters), so it becomes its own QLookup.
  g.weight('w2', [4, 2, 1, 1], 0.5);
  g.node('Conv', ['x', 'w2'], 'c2', {});
  g.node('Relu', ['c2'], 'r2', {}, { dqScaleFactor: 2 });
  // The codes of r2 are read back with twice their scale: the conv reading
  // them must not take r2's parameters (seed 004) and stays float.
  g.weight('w3', [2, 4, 1, 1], 0.5);
  g.node('Conv', ['r2', 'w3'], 'c3', {});
  // Chained linears (seed 004): each reads its input parameters at its own
  // DequantizeLinear.
  g.node('Flatten', ['x'], 'fl', {}, { share: 'x' });
  g.weight('m1', [72, 16], 0.2, { axis: 1 });
  g.node('MatMul', ['fl', 'm1'], 'mm1');
  g.weight('m2', [16, 8], 0.4, { axis: 1 });
  g.node('MatMul', ['mm1', 'm2'], 'mm2');
  g.weight('m3', [8, 4], 0.5, { axis: 1 });
  g.weight('b3', [4], 0.1, { bias: true });
  g.node('Gemm', ['mm2', 'm3', 'b3'], 'mm3');
  g.output('sm');
  g.output('r2');
  g.output('c3');
  g.output('mm3');
  return g;
}

for (const make of [seed003, opsGraph, edgeGraph]) {
  const g = make();
  const ranges = await calibrate(g);
  writeFileSync(path.join(HERE, `${g.name}_f32.onnx`), g.floatModel());
  writeFileSync(path.join(HERE, `${g.name}_qdq.onnx`), quantize(g, ranges));
  console.log(`wrote ${g.name}_f32.onnx and ${g.name}_qdq.onnx`);
}
