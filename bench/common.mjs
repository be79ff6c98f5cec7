// Helpers shared by the benchmark's orchestrator (run.mjs) and its
// per-measurement worker processes (worker.mjs).

import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const BENCH_DIR = dirname(fileURLToPath(import.meta.url));

/**
 * One measurement in its own worker.mjs process on the given Node binary:
 * resolves to the worker's BENCH_RESULT, or { error } with its last stderr line.
 */
export function runWorker(spec, node = process.execPath) {
  return new Promise((resolve) => {
    const child = spawn(node, [join(BENCH_DIR, 'worker.mjs'), JSON.stringify(spec)], { cwd: join(BENCH_DIR, '..'), stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    child.on('close', (code) => {
      const line = out.split('\n').reverse().find((l) => l.startsWith('BENCH_RESULT '));
      resolve(line ? JSON.parse(line.slice(13)) : { error: err.trim().split('\n').pop() || `worker exit code ${code}` });
    });
  });
}

/** mulberry32: the same seeded generator as the CLIs' random:SEED inputs. */
export function mulberry32(seed) {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let z = state;
    z = Math.imul(z ^ (z >>> 15), z | 1);
    z ^= z + Math.imul(z ^ (z >>> 7), z | 61);
    return (z ^ (z >>> 14)) >>> 0;
  };
}

const ARRAYS = {
  float32: Float32Array,
  float64: Float64Array,
  int8: Int8Array,
  uint8: Uint8Array,
  int16: Int16Array,
  uint16: Uint16Array,
  int32: Int32Array,
  uint32: Uint32Array,
  int64: BigInt64Array,
  bool: Uint8Array,
};

/**
 * Seeded random data for one input: floats uniform in [-1, 1), integers
 * over their whole range (int64 small), booleans 0/1. Never all zeros —
 * onnxruntime-web's int8 kernels run faster on zeros.
 */
export function randomInput(dtype, dims, seed) {
  const Array = ARRAYS[dtype];
  if (!Array) throw new Error(`cannot make random data for dtype ${dtype}`);
  const count = dims.reduce((a, b) => a * b, 1);
  const data = new Array(count);
  const next = mulberry32(seed);
  for (let i = 0; i < count; i++) {
    const r = next();
    switch (dtype) {
      case 'float32':
      case 'float64':
        data[i] = (r >>> 8) / 8388608 - 1;
        break;
      case 'int64':
        data[i] = BigInt((r % 201) - 100);
        break;
      case 'bool':
        data[i] = r & 1;
        break;
      default:
        data[i] = r; // typed arrays wrap to their width
    }
  }
  return data;
}

/** Median and nearest-rank p10/p90 of a list of milliseconds. */
export function summarize(times) {
  const sorted = [...times].sort((a, b) => a - b);
  const at = (q) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
  const mid = sorted.length >> 1;
  const median = sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
  return { median, p10: at(0.1), p90: at(0.9), min: sorted[0], max: sorted[sorted.length - 1], runs: sorted.length };
}

/** Up to n evenly spaced elements of a numeric array, as plain numbers. */
export function sample(data, n = 4096) {
  const step = Math.max(1, Math.floor(data.length / n));
  const out = [];
  for (let i = 0; i < data.length && out.length < n; i += step) out.push(Number(data[i]));
  return out;
}

/** Reads the dims of a serialized ONNX TensorProto (field 1, packed or not). */
export function tensorProtoDims(path) {
  const b = readFileSync(path);
  const dims = [];
  let i = 0;
  const varint = () => {
    let v = 0;
    let scale = 1;
    for (;;) {
      if (i >= b.length) throw new Error(`${path}: truncated varint`);
      const c = b[i++];
      v += (c & 0x7f) * scale;
      scale *= 128;
      if (!(c & 0x80)) return v;
    }
  };
  while (i < b.length) {
    const key = varint();
    const field = Math.floor(key / 8);
    const wire = key & 7;
    if (wire === 0) {
      const v = varint();
      if (field === 1) dims.push(v);
    } else if (wire === 2) {
      const len = varint();
      if (field === 1) {
        const end = i + len;
        while (i < end) dims.push(varint());
      } else i += len;
    } else if (wire === 5) i += 4;
    else if (wire === 1) i += 8;
    else throw new Error(`${path}: unexpected wire type ${wire}`);
  }
  return dims;
}
