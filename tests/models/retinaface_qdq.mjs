// A RetinaFace-shaped QDQ detector written the way Vitis AI's quantizer
// exports one (what tests and the benchmark use for that vendor format, not
// a real vendor file): MobileNet-0.25 backbone, FPN with nearest upsampling
// and Add, three SSH context modules, class/box/landmark heads with
// Transpose -> Reshape -> Concat, Softmax on the scores. Every Conv is read
// as Conv -> LeakyRelu(26/256) -> QuantizeLinear (no Q on the conv output),
// Q/DQ pairs around Add, Resize, Concat, Transpose and Reshape, int8
// activations with zero point 0, and every scale (activations, per-tensor
// weights, biases) a power of two. Weights are seeded He-initialised values
// with BatchNorm-like biases; activation ranges are calibrated by running the
// float graph in onnxruntime-node on the seeded input.
//
//   node tests/models/retinaface_qdq.mjs OUT_DIR [SIZE]  writes
//   retinaface_qdq.onnx and retinaface_f32.onnx for a SIZE x SIZE input.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { FloatGraph, calibrate, quantize } from './qdq_builder.mjs';

const LEAKY = 26 / 256;

export function retinafaceGraph(size = 320) {
  const g = new FloatGraph('retinaface', 'int8', 13);
  g.input('input', [1, 3, size, size]);
  let n = 0;
  // Conv (+ LeakyRelu): the conv output is not quantized when an activation follows.
  const conv = (x, cin, cout, k, stride, { group = 1, act = true } = {}) => {
    const id = `c${n++}`;
    const fanIn = (cin / group) * k * k;
    g.weight(`${id}_w`, [cout, cin / group, k, k], Math.sqrt(6 / fanIn), { axis: null });
    g.weight(`${id}_b`, [cout], 0.1, { bias: true });
    const p = (k - 1) >> 1;
    g.node('Conv', [x, `${id}_w`, `${id}_b`], act ? `${id}_o` : id,
      { kernel_shape: [k, k], strides: [stride, stride], pads: [p, p, p, p], group }, act ? { noq: true } : {});
    if (!act) return id;
    g.node('LeakyRelu', [`${id}_o`], id, { alpha: { float: LEAKY } });
    return id;
  };
  const dw = (x, cin, cout, stride) => conv(conv(x, cin, cin, 3, stride, { group: cin }), cin, cout, 1, 1);
  let x = conv('input', 3, 8, 3, 2);
  for (const [cin, cout, s] of [[8, 16, 1], [16, 32, 2], [32, 32, 1], [32, 64, 2], [64, 64, 1]]) x = dw(x, cin, cout, s);
  const s1 = x;
  x = dw(x, 64, 128, 2);
  for (let i = 0; i < 5; i++) x = dw(x, 128, 128, 1);
  const s2 = x;
  x = dw(dw(x, 128, 256, 2), 256, 256, 1);
  const s3 = x;
  // FPN
  const o1 = conv(s1, 64, 64, 1, 1), o2 = conv(s2, 128, 64, 1, 1), o3 = conv(s3, 256, 64, 1, 1);
  g.const('up_scales', [4], [1, 1, 2, 2]);
  const upAdd = (small, big, name) => {
    g.node('Resize', [small, '', 'up_scales'], `${name}_up`, { mode: 'nearest' });
    g.node('Add', [big, `${name}_up`], `${name}_sum`);
    return conv(`${name}_sum`, 64, 64, 3, 1);
  };
  const m2 = upAdd(o3, o2, 'fpn2');
  const m1 = upAdd(m2, o1, 'fpn1');
  // SSH context modules
  const ssh = (f, name) => {
    const a = conv(f, 64, 32, 3, 1, { act: false });
    const b1 = conv(f, 64, 16, 3, 1);
    const b = conv(b1, 16, 16, 3, 1, { act: false });
    const c1 = conv(b1, 16, 16, 3, 1);
    const c = conv(c1, 16, 16, 3, 1, { act: false });
    g.node('Concat', [a, b, c], `${name}_cat`, { axis: 1 });
    g.node('Relu', [`${name}_cat`], `${name}_relu`);
    return `${name}_relu`;
  };
  const feats = [ssh(m1, 'ssh1'), ssh(m2, 'ssh2'), ssh(o3, 'ssh3')];
  // Heads: 2 anchors per location; class 2, box 4, landmarks 10 per anchor.
  const heads = {};
  for (const [head, per] of [['cls', 2], ['box', 4], ['ldm', 10]]) {
    heads[head] = feats.map((f, i) => {
      const c = conv(f, 64, 2 * per, 1, 1, { act: false });
      g.node('Transpose', [c], `${head}${i}_t`, { perm: [0, 2, 3, 1] });
      g.ints(`${head}_shape`, [1, -1, per]);
      g.node('Reshape', [`${head}${i}_t`, `${head}_shape`], `${head}${i}_r`);
      return `${head}${i}_r`;
    });
    g.node('Concat', heads[head], `${head}_all`, { axis: 1 });
  }
  g.node('Softmax', ['cls_all'], 'scores', { axis: -1 });
  g.output('scores');
  g.output('box_all');
  g.output('ldm_all');
  return g;
}

/** { qdq, f32 } model bytes of the detector for a size x size input. */
export async function retinafaceModels(size = 320) {
  const g = retinafaceGraph(size);
  const f32 = g.floatModel();
  const ranges = await calibrate(g);
  return { qdq: quantize(g, ranges, { pow2: true }), f32 };
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(new URL(import.meta.url).pathname)) {
  const out = process.argv[2] ?? '.';
  const { qdq, f32 } = await retinafaceModels(Number(process.argv[3] ?? 320));
  writeFileSync(path.join(out, 'retinaface_qdq.onnx'), qdq);
  writeFileSync(path.join(out, 'retinaface_f32.onnx'), f32);
}
