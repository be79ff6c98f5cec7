// Seeded random graphs for the differential tests: small DAGs of the float
// ops the int8 lowering takes (conv with fused relu/clip, depthwise and
// grouped conv, pools, add, mul, concat, lookups, resize, depth-to-space,
// flatten + gemm) with random legal attributes and shapes. Each graph is a
// FloatGraph (qdq_builder.mjs): its float model and, after calibration, its
// QDQ model. The same seed always gives the same graph.
import { mulberry32 } from '../../src/js/random.mjs';
import { FloatGraph } from './qdq_builder.mjs';

const conv2dOut = (size, k, stride, padBegin, padEnd, dilation = 1) => Math.floor((size + padBegin + padEnd - dilation * (k - 1) - 1) / stride) + 1;

/** Short form of a node for test names: Conv3x3/s2/p1/g4, MaxPool2x2/s2/p0, LeakyRelu(0.1). */
function describe(op, attrs) {
  if (attrs.kernel_shape) {
    const [k] = attrs.kernel_shape;
    return `${op}${k}x${k}/s${attrs.strides[0]}/p${attrs.pads[0]}${attrs.group > 1 ? `/g${attrs.group}` : ''}`;
  }
  if (attrs.alpha) return `${op}(${attrs.alpha.float})`;
  return op;
}

/** A random graph for `seed`: { graph: FloatGraph, description: string }. */
export function randomGraph(seed) {
  const draw = mulberry32(0x9e3779b9 ^ seed);
  const uniform = () => (draw() >>> 8) / 16777216;
  const int = (lo, hi) => lo + Math.floor(uniform() * (hi - lo + 1));
  const pick = (items) => items[int(0, items.length - 1)];

  const g = new FloatGraph(`random${seed}`, pick(['int8', 'uint8']));
  g.rand = mulberry32(seed + 1);
  const shapes = new Map(); // tensor -> [N, C, H, W] (or [N, F] after flatten)
  const consumed = new Set();
  const steps = [];
  let next = 0;
  const fresh = (op) => `${op.toLowerCase()}${next++}`;

  const input = 'x';
  shapes.set(input, [1, int(1, 8), int(3, 12), int(3, 12)]);
  g.input(input, shapes.get(input));

  const spatial = () => [...shapes.keys()].filter((t) => shapes.get(t).length === 4);
  // Prefer the newest tensors so graphs are deep, with some branching.
  const source = () => {
    const all = spatial();
    return uniform() < 0.7 ? all[all.length - 1] : pick(all);
  };
  const emit = (op, inputs, attrs, shape, opts = {}) => {
    const out = fresh(op);
    g.node(op, inputs, out, attrs, opts);
    for (const t of inputs) consumed.add(t);
    shapes.set(out, shape);
    steps.push(describe(op, attrs));
    return out;
  };

  const ops = {
    conv() {
      const t = source();
      const [n, c, h, w] = shapes.get(t);
      const k = pick([1, 3, 3, 5].filter((x) => x <= Math.max(h, w) + 2));
      const stride = pick([1, 1, 2]);
      const pad = pick([0, k >> 1]);
      const depthwise = c > 1 && uniform() < 0.3;
      const group = depthwise ? c : 1;
      const m = depthwise ? c * pick([1, 2]) : int(1, 8);
      const oh = conv2dOut(h, k, stride, pad, pad), ow = conv2dOut(w, k, stride, pad, pad);
      if (oh < 1 || ow < 1) return null;
      const wName = `${fresh('w')}`, bName = `${fresh('b')}`;
      g.weight(wName, [m, c / group, k, k], 0.5);
      g.weight(bName, [m], 0.2, { bias: true });
      const act = pick(['none', 'relu', 'relu', 'clip']);
      const attrs = { kernel_shape: [k, k], strides: [stride, stride], pads: [pad, pad, pad, pad], group };
      const out = emit('Conv', [t, wName, bName], attrs, [n, m, oh, ow], act === 'none' ? {} : { noq: true });
      if (act === 'none') return out;
      // The float conv output is read only by its activation (the pattern that fuses).
      shapes.delete(out);
      if (act === 'relu') return emit('Relu', [out], {}, [n, m, oh, ow]);
      if (act === 'clip') {
        const lo = fresh('lo'), hi = fresh('hi');
        g.const(lo, [], [0]);
        g.const(hi, [], [6]);
        return emit('Clip', [out, lo, hi], {}, [n, m, oh, ow]);
      }
      return out;
    },
    pool() {
      const t = source();
      const [n, c, h, w] = shapes.get(t);
      const op = pick(['MaxPool', 'AveragePool']);
      const k = pick([2, 3]);
      const stride = pick([1, 2]);
      const pad = pick([0, 0, 1]);
      const oh = conv2dOut(h, k, stride, pad, pad), ow = conv2dOut(w, k, stride, pad, pad);
      if (oh < 1 || ow < 1 || k > h + pad || k > w + pad) return null;
      return emit(op, [t], { kernel_shape: [k, k], strides: [stride, stride], pads: [pad, pad, pad, pad] }, [n, c, oh, ow]);
    },
    global() {
      const t = source();
      const [n, c] = shapes.get(t);
      return emit('GlobalAveragePool', [t], {}, [n, c, 1, 1]);
    },
    binary() {
      const t = source();
      const same = spatial().filter((u) => u !== t && shapes.get(u).join() === shapes.get(t).join());
      if (!same.length) return null;
      return emit(pick(['Add', 'Add', 'Mul']), [t, pick(same)], {}, shapes.get(t));
    },
    concat() {
      const t = source();
      const [n, , h, w] = shapes.get(t);
      const fits = spatial().filter((u) => shapes.get(u)[2] === h && shapes.get(u)[3] === w);
      const u = pick(fits);
      return emit('Concat', [t, u], { axis: 1 }, [n, shapes.get(t)[1] + shapes.get(u)[1], h, w]);
    },
    lookup() {
      const t = source();
      const op = pick(['Sigmoid', 'Tanh', 'HardSwish', 'LeakyRelu']);
      return emit(op, [t], op === 'LeakyRelu' ? { alpha: { float: pick([0.1, 0.01, 0.2]) } } : {}, shapes.get(t));
    },
    resize() {
      const t = source();
      const [n, c, h, w] = shapes.get(t);
      if (h * w > 64) return null;
      const roi = fresh('roi'), scales = fresh('scales');
      g.const(roi, [0], []);
      g.const(scales, [4], [1, 1, 2, 2]);
      return emit('Resize', [t, roi, scales], { mode: 'nearest' }, [n, c, 2 * h, 2 * w]);
    },
    depthToSpace() {
      const t = source();
      const [n, c, h, w] = shapes.get(t);
      if (c % 4) return null;
      return emit('DepthToSpace', [t], { blocksize: 2 }, [n, c / 4, 2 * h, 2 * w]);
    },
  };
  const weights = [['conv', 5], ['pool', 2], ['global', 1], ['binary', 2], ['concat', 1], ['lookup', 2], ['resize', 1], ['depthToSpace', 1]];
  const total = weights.reduce((a, [, w]) => a + w, 0);
  const drawOp = () => {
    let r = uniform() * total;
    for (const [name, w] of weights) if ((r -= w) < 0) return name;
    return 'conv';
  };

  const count = int(2, 7);
  for (let made = 0, tries = 0; made < count && tries < 50; tries++) if (ops[drawOp()]()) made++;

  // A classifier head now and then: Flatten -> Gemm (transB) on the newest tensor.
  if (uniform() < 0.3) {
    const t = source();
    const [n, c, h, w] = shapes.get(t);
    const features = c * h * w;
    if (features <= 512) {
      const flat = emit('Flatten', [t], { axis: 1 }, [n, features]);
      const nOut = int(1, 10);
      const wName = fresh('w'), bName = fresh('b');
      g.weight(wName, [nOut, features], 0.3);
      g.weight(bName, [nOut], 0.2, { bias: true });
      emit('Gemm', [flat, wName, bName], { transB: 1 }, [n, nOut]);
    }
  }
  if (shapes.size === 1) emit('Relu', [input], {}, shapes.get(input));
  // Every tensor nothing reads is an output (at least the newest one).
  for (const t of shapes.keys()) if (t !== input && !consumed.has(t)) g.output(t);
  return { graph: g, description: `${g.actDtype}: ${steps.join(' -> ')}` };
}
