// Per-node numeric gap between a float model and an int8 model of it on the
// same inputs: both run with every intermediate captured (dequantized, in
// channels-first order), and each int8 tensor is matched to the float
// tensor it stands for by name. Quantizers name a quantized tensor after
// its float one plus a suffix (onnxruntime: _QuantizeLinear_Output or
// _quantized; wasmq's tests: _q), and the layout pass adds _nhwc/_nchw:
// suffixes are stripped until a float tensor of the same element count is
// found.
const SUFFIXES = ['_QuantizeLinear_Output', '_DequantizeLinear_Output', '_quantized', '_dequantized', '_to_nhwc', '_to_nchw', '_nhwc', '_nchw', '_q', '_dq', '_f'];

/** The float tensor name an int8 tensor stands for, or null. */
function floatTwin(name, floatTensors, count) {
  const seen = new Set();
  const queue = [name];
  while (queue.length) {
    const n = queue.shift();
    if (seen.has(n)) continue;
    seen.add(n);
    const f = floatTensors[n];
    if (f && f.data.length === count) return n;
    for (const s of SUFFIXES) if (n.endsWith(s)) queue.push(n.slice(0, -s.length));
  }
  return null;
}

/** max |a - b|, MSE, SNR (dB) and cosine of b (int8) against a (float). */
export function gap(a, b) {
  let maxAbs = 0, se = 0, signal = 0, dot = 0, na = 0, nb = 0;
  for (let i = 0; i < a.length; i++) {
    const d = b[i] - a[i];
    maxAbs = Math.max(maxAbs, Math.abs(d));
    se += d * d;
    signal += a[i] * a[i];
    dot += a[i] * b[i];
    na += a[i] * a[i];
    nb += b[i] * b[i];
  }
  const n = Math.max(a.length, 1);
  const snr = se === 0 ? Infinity : 10 * Math.log10(signal / se);
  const cosine = na === 0 || nb === 0 ? (na === nb ? 1 : 0) : dot / Math.sqrt(na * nb);
  return { maxAbs, mse: se / n, snr, cosine };
}

/**
 * Runs both models on `feeds` and returns [{node, op, tensor, floatTensor,
 * elements, maxAbs, mse, snr, cosine}] for every int8-graph node output with
 * a float twin, in execution order.
 */
export async function compare(floatModel, int8Model, feeds) {
  const f = (await floatModel.run(feeds, { capture: true })).captured;
  const q = (await int8Model.run(feeds, { capture: true })).captured;
  const rows = [];
  for (const [name, t] of Object.entries(q)) {
    const twin = floatTwin(name, f, t.data.length);
    if (!twin) continue;
    rows.push({ step: t.step, node: t.producer, op: t.op, tensor: name, floatTensor: twin, elements: t.data.length, ...gap(f[twin].data, t.data) });
  }
  return rows.sort((a, b) => a.step - b.step).map(({ step, ...row }) => row);
}
