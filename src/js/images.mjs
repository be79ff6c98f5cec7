// Images as model inputs: decoded RGBA pixels -> one float32 tensor by a
// preprocessing spec (the config's "images" object, docs/quantize.md):
//
//   { "input": "x",              model input the images feed (default: the only float input)
//     "size": [H, W],            default: the input's fixed H and W
//     "resize": "crop",          "crop" (scale to cover, centre crop) | "stretch" | "pad" (fit, pad 0)
//     "layout": "NCHW",          or "NHWC" (default: NCHW unless the last dim is 1, 3 or 4 and dim 1 is not)
//     "channels": "RGB",         "RGB" | "BGR" | "GRAY" (default: GRAY for 1 channel, else RGB)
//     "scale": 0.00392156862745098, pixel (0..255) * scale, then (- mean) / std per channel
//     "mean": [0, 0, 0], "std": [1, 1, 1],
//     "extra": [0] }             constant values of channels past the colour ones (e.g. a mask)
//
// Pure JavaScript without platform imports: Node decodes files in calib.mjs
// (pngjs, jpeg-js), a page with decodeImage() below (the browser's decoder).
// Resampling is bilinear at pixel centres in double precision, so the same
// pixels give the same bytes everywhere.

import { WasmqError } from './errors.mjs';

const RESIZE = ['crop', 'stretch', 'pad'];
const CHANNELS = { RGB: [0, 1, 2], BGR: [2, 1, 0], GRAY: null };
const KEYS = ['input', 'size', 'resize', 'layout', 'channels', 'scale', 'mean', 'std', 'extra'];

const fail = (message) => {
  throw new WasmqError(`images: ${message}`, { code: 'WQ_ERR_INVALID_ARG' });
};

const numbers = (v, what) => {
  if (!Array.isArray(v) || v.length === 0 || !v.every((x) => typeof x === 'number' && Number.isFinite(x))) fail(`${what} must be a non-empty array of finite numbers`);
  return v;
};

/**
 * Checks an images spec against the model's inputs ([{name, dtype, shape}])
 * and fills in its defaults. Returns {input, index, height, width, resize,
 * layout, channels, colour, scale, mean, std, extra, dims}.
 */
export function resolveImageSpec(spec = {}, inputs) {
  if (spec === null || typeof spec !== 'object' || Array.isArray(spec)) fail('the spec must be an object');
  for (const key of Object.keys(spec)) if (!KEYS.includes(key)) fail(`unknown key '${key}' (expected one of: ${KEYS.join(', ')})`);
  let info;
  if (spec.input !== undefined) {
    info = inputs.find((i) => i.name === spec.input);
    if (!info) fail(`input '${spec.input}' is not an input of the model (${inputs.map((i) => i.name).join(', ')})`);
  } else if (inputs.length === 1) {
    info = inputs[0];
  } else {
    fail(`the model has ${inputs.length} inputs: say which one the images feed with "input"`);
  }
  if (inputs.length !== 1) fail(`images calibrate a model with one input; this one has ${inputs.length}`);
  if (info.dtype !== 'float32') fail(`input '${info.name}' is ${info.dtype}; images feed a float32 input`);
  const shape = info.shape;
  if (!shape || shape.length !== 4) fail(`input '${info.name}' is not a 4-D image tensor (shape ${shape ? `[${shape.join(',')}]` : 'unknown'})`);
  const fixed = (d) => (typeof d === 'number' && d > 0 ? d : null);
  let layout = spec.layout;
  if (layout === undefined) layout = [1, 3, 4].includes(fixed(shape[3])) && ![1, 3, 4].includes(fixed(shape[1])) ? 'NHWC' : 'NCHW';
  if (layout !== 'NCHW' && layout !== 'NHWC') fail(`layout must be "NCHW" or "NHWC", got ${JSON.stringify(layout)}`);
  const [cAxis, hAxis, wAxis] = layout === 'NCHW' ? [1, 2, 3] : [3, 1, 2];
  const c = fixed(shape[cAxis]);
  if (!c) fail(`input '${info.name}' has no fixed channel count (dim ${cAxis}); bind it with --shape`);
  let height = fixed(shape[hAxis]);
  let width = fixed(shape[wAxis]);
  if (spec.size !== undefined) {
    const s = numbers(spec.size, 'size');
    if (s.length !== 2 || !s.every((x) => Number.isInteger(x) && x > 0 && x <= 16384)) fail('size must be [height, width] in pixels');
    if ((height && height !== s[0]) || (width && width !== s[1])) fail(`size [${s}] differs from input '${info.name}''s ${height}x${width}`);
    [height, width] = s;
  }
  if (!height || !width) fail(`input '${info.name}' has a symbolic height or width: give "size": [H, W] (or --shape)`);
  const resize = spec.resize ?? 'crop';
  if (!RESIZE.includes(resize)) fail(`resize must be one of ${RESIZE.join(', ')}, got ${JSON.stringify(resize)}`);
  const channels = spec.channels ?? (c === 1 ? 'GRAY' : 'RGB');
  if (!(channels in CHANNELS)) fail(`channels must be "RGB", "BGR" or "GRAY", got ${JSON.stringify(channels)}`);
  const colour = channels === 'GRAY' ? 1 : 3;
  const extra = spec.extra === undefined ? [] : numbers(spec.extra, 'extra');
  if (colour + extra.length !== c) {
    fail(`input '${info.name}' has ${c} channel(s): ${channels} gives ${colour}${extra.length ? ` and "extra" ${extra.length}` : ''} (use "extra" for constant channels past the colour ones)`);
  }
  const scale = spec.scale ?? 1 / 255;
  if (typeof scale !== 'number' || !Number.isFinite(scale) || scale === 0) fail('scale must be a finite non-zero number');
  const perChannel = (v, name, fallback) => {
    if (v === undefined) return new Array(colour).fill(fallback);
    const a = typeof v === 'number' ? new Array(colour).fill(v) : numbers(v, name);
    if (a.length !== colour) fail(`${name} needs ${colour} value(s) (one per colour channel), got ${a.length}`);
    return a;
  };
  const mean = perChannel(spec.mean, 'mean', 0);
  const std = perChannel(spec.std, 'std', 1);
  if (std.some((x) => x === 0)) fail('std must not be 0');
  const dims = layout === 'NCHW' ? [1, c, height, width] : [1, height, width, c];
  return { input: info.name, height, width, resize, layout, channels, colour, scale, mean, std, extra, dims };
}

/** Bilinear sample of channel k at (x, y) in source pixel coordinates (centres at +0.5), edges clamped. */
function sample(img, x, y, k) {
  const { width: w, height: h, data } = img;
  const fx = Math.min(Math.max(x - 0.5, 0), w - 1);
  const fy = Math.min(Math.max(y - 0.5, 0), h - 1);
  const x0 = Math.floor(fx);
  const y0 = Math.floor(fy);
  const x1 = Math.min(x0 + 1, w - 1);
  const y1 = Math.min(y0 + 1, h - 1);
  const ax = fx - x0;
  const ay = fy - y0;
  const p = (xx, yy) => data[(yy * w + xx) * 4 + k];
  return (p(x0, y0) * (1 - ax) + p(x1, y0) * ax) * (1 - ay) + (p(x0, y1) * (1 - ax) + p(x1, y1) * ax) * ay;
}

/**
 * One decoded image ({width, height, data: RGBA bytes, 4 per pixel}) as the
 * input tensor {data: Float32Array, dims} of a resolved spec.
 */
export function imageToTensor(img, spec) {
  const { width: W, height: H, colour, layout, scale, mean, std, extra } = spec;
  if (!(img && img.width > 0 && img.height > 0 && img.data && img.data.length >= img.width * img.height * 4)) fail('an image must be {width, height, data: RGBA bytes}');
  // Source rectangle mapped onto the W x H output.
  let sx = img.width / W;
  let sy = img.height / H;
  let ox = 0;
  let oy = 0;
  if (spec.resize === 'crop') {
    const s = Math.min(sx, sy);
    ox = (img.width - W * s) / 2;
    oy = (img.height - H * s) / 2;
    sx = sy = s;
  } else if (spec.resize === 'pad') {
    const s = Math.max(sx, sy);
    ox = (img.width - W * s) / 2;
    oy = (img.height - H * s) / 2;
    sx = sy = s;
  }
  const C = colour + extra.length;
  const out = new Float32Array(C * H * W);
  const order = CHANNELS[spec.channels];
  const at = layout === 'NCHW' ? (c, y, x) => (c * H + y) * W + x : (c, y, x) => (y * W + x) * C + c;
  for (let y = 0; y < H; y++) {
    for (let x = 0; x < W; x++) {
      const px = ox + (x + 0.5) * sx;
      const py = oy + (y + 0.5) * sy;
      const outside = px < 0 || py < 0 || px > img.width || py > img.height;
      for (let c = 0; c < colour; c++) {
        let v;
        if (outside) v = 0;
        else if (order) v = sample(img, px, py, order[c]);
        else v = 0.299 * sample(img, px, py, 0) + 0.587 * sample(img, px, py, 1) + 0.114 * sample(img, px, py, 2);
        out[at(c, y, x)] = (v * scale - mean[c]) / std[c];
      }
      for (let e = 0; e < extra.length; e++) out[at(colour + e, y, x)] = extra[e];
    }
  }
  return { data: out, dims: spec.dims };
}

/**
 * Decodes an image in a page (a Blob, File or encoded bytes) with the
 * browser's own decoder: {width, height, data: RGBA bytes}. Node reads
 * image files through `npx wasmq quantize --calib DIR` instead.
 */
export async function decodeImage(source) {
  if (typeof createImageBitmap !== 'function' || typeof OffscreenCanvas !== 'function') {
    throw new WasmqError('decodeImage needs a browser (createImageBitmap, OffscreenCanvas); in Node give --calib a folder of images', { code: 'WQ_ERR_UNSUPPORTED' });
  }
  const blob = source instanceof Blob ? source : new Blob([source]);
  const bitmap = await createImageBitmap(blob, { premultiplyAlpha: 'none', colorSpaceConversion: 'none' });
  const canvas = new OffscreenCanvas(bitmap.width, bitmap.height);
  const g = canvas.getContext('2d');
  g.drawImage(bitmap, 0, 0);
  bitmap.close();
  const { data } = g.getImageData(0, 0, canvas.width, canvas.height);
  return { width: canvas.width, height: canvas.height, data };
}
