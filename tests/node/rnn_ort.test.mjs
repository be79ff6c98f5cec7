// LSTM and GRU against onnxruntime-node on models built here: directions,
// batches, sequence_lens, clip, initial states, weights as constants (packed
// once at plan time) and as graph inputs, in wasm (load) and natively
// (`wasmq run`, the scalar kernels).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import ort from 'onnxruntime-node';
import { buildModel, compareClose, NATIVE_CLI } from './helpers.mjs';
import { mulberry32 } from '../../src/js/random.mjs';
import { encodeNpy, parseNpy } from '../../src/js/npy.mjs';
import { load } from '../../src/js/index.mjs';

const random = (n, seed, scale = 1) => {
  const r = mulberry32(seed);
  return Float32Array.from({ length: n }, () => (r() / 2 ** 32 * 2 - 1) * scale);
};

/**
 * One recurrent node: op LSTM or GRU, seq x batch x input -> hidden, with
 * bias, initial state(s) and optionally sequence_lens; W/R/B as initializers
 * when `constant`, else graph inputs.
 */
function recurrentCase({ op, dir = 'forward', seq, batch, input, hidden, lens = null, constant = true, attrs = {}, seed = 1 }) {
  const D = dir === 'bidirectional' ? 2 : 1, G = (op === 'LSTM' ? 4 : 3) * hidden;
  const tensors = {
    X: [[seq, batch, input], random(seq * batch * input, seed)],
    W: [[D, G, input], random(D * G * input, seed + 1, 0.5)],
    R: [[D, G, hidden], random(D * G * hidden, seed + 2, 0.5)],
    B: [[D, 2 * G], random(D * 2 * G, seed + 3, 0.3)],
    initial_h: [[D, batch, hidden], random(D * batch * hidden, seed + 4)],
  };
  if (op === 'LSTM') tensors.initial_c = [[D, batch, hidden], random(D * batch * hidden, seed + 5)];
  const names = ['X', 'W', 'R', 'B', lens ? 'sequence_lens' : '', 'initial_h', ...(op === 'LSTM' ? ['initial_c'] : [])];
  const weights = ['W', 'R', 'B'];
  const inputs = Object.entries(tensors).filter(([n]) => !(constant && weights.includes(n)));
  const outNames = op === 'LSTM' ? ['Y', 'Y_h', 'Y_c'] : ['Y', 'Y_h'];
  const model = buildModel({
    nodes: [{ op, name: `${op}_0`, inputs: names, outputs: outNames, attrs: { hidden_size: hidden, direction: dir, ...attrs } }],
    inputs: [...inputs.map(([name, [dims]]) => ({ name, dtype: 'float32', shape: dims })), ...(lens ? [{ name: 'sequence_lens', dtype: 'int32', shape: [batch] }] : [])],
    outputs: outNames.map((name) => ({ name, dtype: 'float32', shape: name === 'Y' ? [seq, D, batch, hidden] : [D, batch, hidden] })),
    initializers: constant ? weights.map((n) => ({ name: n, dims: tensors[n][0], data: tensors[n][1] })) : [],
    opset: 14,
  });
  const feeds = Object.fromEntries(inputs.map(([name, [dims, data]]) => [name, { dims, data }]));
  if (lens) feeds.sequence_lens = { dims: [batch], data: Int32Array.from(lens) };
  return { model, feeds, outNames };
}

async function reference({ model, feeds }) {
  const session = await ort.InferenceSession.create(model);
  const ortFeeds = Object.fromEntries(Object.entries(feeds).map(([n, f]) => [n, new ort.Tensor(f.data instanceof Int32Array ? 'int32' : 'float32', f.data, f.dims)]));
  return session.run(ortFeeds);
}

function runNative({ model, feeds, outNames }) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'wasmq-rnn-'));
  try {
    writeFileSync(path.join(dir, 'model.onnx'), model);
    const args = ['run', path.join(dir, 'model.onnx'), '--out', dir];
    for (const [name, f] of Object.entries(feeds)) {
      writeFileSync(path.join(dir, `${name}.npy`), encodeNpy({ dtype: f.data instanceof Int32Array ? 'int32' : 'float32', dims: f.dims, data: f.data }));
      args.push('--input', `${name}=${path.join(dir, `${name}.npy`)}`);
    }
    execFileSync(NATIVE_CLI, args, { stdio: 'pipe' });
    return Object.fromEntries(outNames.map((n) => [n, parseNpy(readFileSync(path.join(dir, `${n}.npy`)))]));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// Our gate activations (a polynomial e^x) and onnxruntime's differ by float
// rounding; 1e-5 over sequences of up to 24 steps.
const TOL = { rtol: 0, atol: 1e-5 };

const CASES = [
  { name: 'forward, batch 1 (the streaming case)', seq: 7, batch: 1, input: 8, hidden: 16 },
  { name: 'reverse, batch 3, sequence_lens', dir: 'reverse', seq: 6, batch: 3, input: 5, hidden: 12, lens: [6, 3, 1] },
  { name: 'bidirectional, 24 steps (input projection as one GEMM)', dir: 'bidirectional', seq: 24, batch: 2, input: 10, hidden: 9 },
  { name: 'forward, weights as graph inputs', seq: 5, batch: 2, input: 4, hidden: 6, constant: false },
  { name: 'bidirectional with clip', dir: 'bidirectional', seq: 4, batch: 1, input: 3, hidden: 5, attrs: { clip: 0.7 } },
];
// GRU's two forms of the reset gate (onnxruntime's default is 0; PyTorch exports 1).
const GRU_CASES = [
  { name: 'linear_before_reset, batch 1', seq: 7, batch: 1, input: 8, hidden: 16, attrs: { linear_before_reset: 1 } },
  { name: 'linear_before_reset, bidirectional, sequence_lens', dir: 'bidirectional', seq: 6, batch: 3, input: 5, hidden: 12, lens: [6, 2, 4], attrs: { linear_before_reset: 1 } },
  { name: 'linear_before_reset, weights as graph inputs', dir: 'reverse', seq: 5, batch: 2, input: 4, hidden: 6, constant: false, attrs: { linear_before_reset: 1 } },
];

for (const op of ['LSTM', 'GRU']) {
  for (const [k, c] of [...CASES, ...(op === 'GRU' ? GRU_CASES : [])].entries()) {
    test(`${op} ${c.name}: wasm and native within ${TOL.atol} of onnxruntime`, async () => {
      const built = recurrentCase({ op, ...c, seed: 10 * k + 1 });
      const want = await reference(built);
      const model = await load(built.model);
      const got = await model.run(built.feeds);
      model.dispose();
      const native = existsSync(NATIVE_CLI) ? runNative(built) : null;
      for (const n of built.outNames) {
        assert.deepEqual(got[n].dims, [...want[n].dims], `${n} dims`);
        const r = compareClose(got[n].data, want[n].data, TOL);
        assert.ok(r.ok, `wasm ${n}: max |diff| ${r.maxAbs} ${JSON.stringify(r.worst)}`);
        if (native) {
          const rn = compareClose(native[n].data, want[n].data, TOL);
          assert.ok(rn.ok, `native ${n}: max |diff| ${rn.maxAbs} ${JSON.stringify(rn.worst)}`);
        }
      }
    });
  }
}
