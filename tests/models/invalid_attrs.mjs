// Models whose only fault is an attribute out of its valid range (or
// disagreeing with a weight), each one that onnxruntime refuses: wasmq must
// refuse it too, naming the node and the attribute. Used by
// tests/node/invalid_attrs.test.mjs, which checks both sides on every run;
// `node tests/models/invalid_attrs.mjs [DIR]` writes them as .onnx files
// (--help: usage).
import { writeFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { encodeModel } from './qdq_builder.mjs';

const ones = (n) => new Float32Array(n).fill(1);

/** One node over X (float, static shape), with weights W (and B) as initializers. */
function oneNode({ op, x, w, b, attrs, opset = 13 }) {
  const initializers = [];
  const inputs = ['X'];
  if (w) {
    initializers.push({ name: 'W', dtype: 'float', dims: w, data: ones(w.reduce((p, d) => p * d, 1)) });
    inputs.push('W');
  }
  if (b) {
    initializers.push({ name: 'B', dtype: 'float', dims: [b], data: ones(b) });
    inputs.push('B');
  }
  return encodeModel({
    nodes: [{ op, name: 'the_node', inputs, outputs: ['Y'], attrs }],
    initializers,
    inputs: [{ name: 'X', dtype: 'float', shape: x }],
    outputs: [{ name: 'Y', dtype: 'float' }],
    opset,
  });
}

const CONV = { op: 'Conv', x: [1, 2, 5, 5], w: [2, 2, 3, 3] };
const CONV_T = { op: 'ConvTranspose', x: [1, 2, 3, 3], w: [2, 2, 3, 3] };
const MAXPOOL = { op: 'MaxPool', x: [1, 2, 5, 5] };
const AVGPOOL = { op: 'AveragePool', x: [1, 2, 5, 5] };

/** [{name, attribute, model}]: `attribute` is what the error must name. */
export function invalidAttributeCases() {
  const cases = [];
  const add = (name, attribute, spec) => cases.push({ name, attribute, model: oneNode(spec) });
  // ConvTranspose: output_padding must stay below the stride (or dilation).
  add('convtranspose_output_padding_100000', 'output_padding', { ...CONV_T, attrs: { output_padding: [100000, 100000] } });
  add('convtranspose_output_padding_eq_stride', 'output_padding', { ...CONV_T, attrs: { strides: [2, 2], output_padding: [2, 2] } });
  add('convtranspose_output_padding_over_stride_one_axis', 'output_padding', { ...CONV_T, attrs: { strides: [2, 3], output_padding: [0, 3] } });
  add('convtranspose_output_padding_negative', 'output_padding', { ...CONV_T, attrs: { output_padding: [-1, 0] } });
  add('convtranspose_strides_zero', 'strides', { ...CONV_T, attrs: { strides: [0, 1] } });
  add('convtranspose_dilations_zero', 'dilations', { ...CONV_T, attrs: { dilations: [1, 0] } });
  add('convtranspose_pads_negative', 'pads', { ...CONV_T, attrs: { pads: [-1, 0, 0, 0] } });
  add('convtranspose_kernel_shape_vs_weight', 'kernel_shape', { ...CONV_T, attrs: { kernel_shape: [2, 2] } });
  // Conv.
  add('conv_strides_zero', 'strides', { ...CONV, attrs: { strides: [0, 0] } });
  add('conv_strides_negative', 'strides', { ...CONV, attrs: { strides: [1, -2] } });
  add('conv_dilations_zero', 'dilations', { ...CONV, attrs: { dilations: [0, 1] } });
  add('conv_dilations_negative', 'dilations', { ...CONV, attrs: { dilations: [-1, -1] } });
  add('conv_pads_negative', 'pads', { ...CONV, attrs: { pads: [0, -1, 0, 0] } });
  add('conv_kernel_shape_vs_weight', 'kernel_shape', { ...CONV, attrs: { kernel_shape: [2, 2] } });
  add('conv_kernel_shape_zero', 'kernel_shape', { ...CONV, attrs: { kernel_shape: [0, 0] } });
  add('conv_group_zero', 'group', { ...CONV, attrs: { group: 0 } });
  add('conv_group_negative', 'group', { ...CONV, attrs: { group: -2 } });
  // Pools: pads must be smaller than the kernel; kernel, strides, dilations positive.
  add('maxpool_pads_eq_kernel', 'pads', { ...MAXPOOL, attrs: { kernel_shape: [3, 3], pads: [3, 3, 3, 3] } });
  add('maxpool_pad_end_over_kernel', 'pads', { ...MAXPOOL, attrs: { kernel_shape: [2, 2], pads: [0, 0, 0, 5] } });
  add('maxpool_pads_100000', 'pads', { ...MAXPOOL, attrs: { kernel_shape: [3, 3], pads: [100000, 0, 0, 0] } });
  add('maxpool_kernel_shape_zero', 'kernel_shape', { ...MAXPOOL, attrs: { kernel_shape: [0, 3] } });
  add('maxpool_kernel_shape_negative', 'kernel_shape', { ...MAXPOOL, attrs: { kernel_shape: [-3, 3] } });
  add('maxpool_strides_zero', 'strides', { ...MAXPOOL, attrs: { kernel_shape: [2, 2], strides: [0, 1] } });
  add('maxpool_dilations_zero', 'dilations', { ...MAXPOOL, attrs: { kernel_shape: [2, 2], dilations: [0, 0] } });
  add('maxpool_pads_negative', 'pads', { ...MAXPOOL, attrs: { kernel_shape: [2, 2], pads: [-1, 0, 0, 0] } });
  add('averagepool_pads_eq_kernel', 'pads', { ...AVGPOOL, attrs: { kernel_shape: [2, 2], pads: [2, 0, 0, 0] } });
  add('averagepool_pads_over_kernel_count_include_pad', 'pads', { ...AVGPOOL, attrs: { kernel_shape: [2, 2], pads: [0, 3, 0, 3], count_include_pad: 1 } });
  add('averagepool_strides_negative', 'strides', { ...AVGPOOL, attrs: { kernel_shape: [2, 2], strides: [-1, 1] } });
  add('averagepool_kernel_shape_missing', 'kernel_shape', { ...AVGPOOL, attrs: {} });
  add('maxpool_kernel_shape_missing', 'kernel_shape', { ...MAXPOOL, attrs: { strides: [1, 1] } });
  return cases;
}

const USAGE = 'usage: node tests/models/invalid_attrs.mjs [DIR]   writes each model as DIR/NAME.onnx (default DIR: invalid_attrs)';

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  let args;
  try {
    args = parseArgs({ options: { help: { type: 'boolean', short: 'h' } }, allowPositionals: true });
  } catch (e) {
    console.error(`${e.message}\n${USAGE}`);
    process.exit(2);
  }
  if (args.values.help) {
    console.log(USAGE);
    process.exit(0);
  }
  if (args.positionals.length > 1) {
    console.error(`one output folder at most, got ${args.positionals.length}\n${USAGE}`);
    process.exit(2);
  }
  const dir = args.positionals[0] ?? 'invalid_attrs';
  mkdirSync(dir, { recursive: true });
  for (const c of invalidAttributeCases()) writeFileSync(path.join(dir, `${c.name}.onnx`), c.model);
  console.log(`wrote ${invalidAttributeCases().length} models to ${dir}`);
}
