// Silero VAD (v2 micro: conv front end and attention; v3.1: plus two LSTM
// layers whose h/c state is carried from chunk to chunk) against
// onnxruntime-node, chunk by chunk over a synthesized recording: espeak-ng
// speech between silences with faint noise (tests/node/speech.mjs).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import path from 'node:path';
import ort from 'onnxruntime-node';
import { MODELS, NATIVE_CLI } from './helpers.mjs';
import { haveSpeechTools, synthesizeRecording, RATE } from './speech.mjs';
import { load } from '../../src/js/index.mjs';

const CHUNK = 1536; // 96 ms at 16 kHz, the chunk v3.1 was exported for
const TOL = 1e-5;
const V3 = path.join(MODELS, 'silero-vad-v3.1', 'model.onnx');
const V2 = path.join(MODELS, 'silero-vad-v2-micro', 'model.onnx');
const skip = !haveSpeechTools() ? 'espeak-ng and sox are needed (scripts/setup.sh)' : !existsSync(V3) || !existsSync(V2) ? 'shared Silero models missing' : false;

let recording;
const speechFraction = (o) => {
  const { speech } = recording;
  let inside = 0;
  for (const [a, b] of speech) inside += Math.max(0, Math.min(b, o + CHUNK) - Math.max(a, o));
  return inside / CHUNK;
};

function maxAbsDiff(got, want) {
  assert.equal(got.length, want.length);
  let m = 0;
  for (let i = 0; i < want.length; i++) m = Math.max(m, Math.abs(got[i] - want[i]));
  return m;
}

/** Chunks' speech probabilities: speech chunks mostly > 0.5, silent ones all below. */
function assertDetects(probs, label) {
  let speechHits = 0, speechChunks = 0, silentMax = 0;
  probs.forEach((p, k) => {
    const f = speechFraction(k * CHUNK);
    if (f === 1) {
      speechChunks++;
      if (p > 0.5) speechHits++;
    } else if (f === 0 && k * CHUNK > RATE / 2) {
      silentMax = Math.max(silentMax, p);
    }
  });
  assert.ok(speechHits >= 0.6 * speechChunks, `${label}: ${speechHits} of ${speechChunks} speech chunks above 0.5`);
  assert.ok(silentMax < 0.5, `${label}: a silent chunk reached ${silentMax}`);
}

// Two comparisons per chunk: the stream carrying our own state, and a run
// from onnxruntime's state (the error of one chunk alone). The STFT front
// end feeds Log with magnitudes near zero in quiet bins, where float
// summation order shows: v2-micro, without a state to settle it, is held to
// 1e-5 against onnxruntime-web (wasm SIMD, no FMA, as ours) and to 1e-4
// against onnxruntime-node, whose FMA GEMM differs from onnxruntime-web's by
// as much (about 3e-5 on this recording).
test('silero-vad-v3.1 streams with carried h/c within 1e-5 of onnxruntime per chunk, decisions equal', { skip }, async () => {
  recording ??= synthesizeRecording();
  const { samples } = recording;
  assert.ok(samples.length >= 15 * RATE, `${samples.length / RATE} s recording`);
  const model = await load(V3);
  const session = await ort.InferenceSession.create(V3);
  const stream = model.stream({ hn: 'h0', cn: 'c0' });
  let h = new Float32Array(128), c = new Float32Array(128);
  let perChunk = 0, drift = 0, flips = 0;
  const probs = [];
  for (let o = 0; o + CHUNK <= samples.length; o += CHUNK) {
    const x = samples.subarray(o, o + CHUNK);
    const got = await stream.push(x);
    assert.deepEqual(Object.keys(got), ['output'], 'state outputs stay in wasm memory');
    const forced = await model.run({ input: { data: x, dims: [1, CHUNK] }, h0: { data: h, dims: [2, 1, 64] }, c0: { data: c, dims: [2, 1, 64] } });
    const want = await session.run({
      input: new ort.Tensor('float32', x.slice(), [1, CHUNK]),
      h0: new ort.Tensor('float32', h, [2, 1, 64]),
      c0: new ort.Tensor('float32', c, [2, 1, 64]),
    });
    assert.deepEqual(got.output.dims, want.output.dims);
    perChunk = Math.max(perChunk, maxAbsDiff(forced.output.data, want.output.data));
    drift = Math.max(drift, maxAbsDiff(got.output.data, want.output.data));
    if (got.output.data[1] > 0.5 !== want.output.data[1] > 0.5) flips++;
    h = want.hn.data;
    c = want.cn.data;
    probs.push(got.output.data[1]);
  }
  console.log(`# v3.1: ${probs.length} chunks, per chunk ${perChunk.toExponential(2)}, carried-state drift ${drift.toExponential(2)}, decision flips ${flips}`);
  assert.ok(perChunk <= TOL, `per chunk max |ours - onnxruntime| = ${perChunk}`);
  assert.ok(drift <= TOL, `carried state: max |ours - onnxruntime| = ${drift}`);
  assert.equal(flips, 0, 'speech decisions (p > 0.5) equal on every chunk');
  const state = stream.state();
  assert.deepEqual(state.h0.dims, [2, 1, 64]);
  assert.ok(maxAbsDiff(state.h0.data, h) <= 0.05, 'the carried h is onnxruntime\'s');
  assertDetects(probs, 'v3.1');
  // Restarting gives the first chunk's answer again.
  stream.reset();
  const again = await stream.push(samples.subarray(0, CHUNK));
  assert.equal(again.output.data[1], probs[0]);
  model.dispose();
});

test('silero-vad-v2-micro per chunk (If run at run time), within 1e-5 of onnxruntime-web, 1e-4 of onnxruntime-node', { skip }, async () => {
  recording ??= synthesizeRecording();
  const { samples } = recording;
  const model = await load(V2);
  assert.ok(model.graph().nodes.some((n) => n.op === 'If'), 'the If on the output shape is left to run time');
  const session = await ort.InferenceSession.create(V2);
  const ortWeb = await import('onnxruntime-web');
  ortWeb.env.wasm.numThreads = 1;
  const web = await ortWeb.InferenceSession.create(V2);
  let worst = 0, worstWeb = 0, between = 0;
  const probs = [];
  for (let o = 0; o + CHUNK <= samples.length; o += CHUNK) {
    const x = samples.slice(o, o + CHUNK);
    const got = await model.run({ input: { data: x, dims: [1, CHUNK] } });
    const want = await session.run({ input: new ort.Tensor('float32', x, [1, CHUNK]) });
    const wantWeb = await web.run({ input: new ortWeb.Tensor('float32', x, [1, CHUNK]) });
    assert.deepEqual(got.output.dims, want.output.dims);
    worst = Math.max(worst, maxAbsDiff(got.output.data, want.output.data));
    worstWeb = Math.max(worstWeb, maxAbsDiff(got.output.data, wantWeb.output.data));
    between = Math.max(between, maxAbsDiff(wantWeb.output.data, want.output.data));
    probs.push(got.output.data[1]);
  }
  console.log(`# v2-micro: ${probs.length} chunks, max diff vs onnxruntime-web ${worstWeb.toExponential(2)}, ` +
    `vs onnxruntime-node ${worst.toExponential(2)} (onnxruntime-web vs -node ${between.toExponential(2)})`);
  assert.ok(worstWeb <= TOL, `max |ours - onnxruntime-web| = ${worstWeb} over ${probs.length} chunks`);
  assert.ok(worst <= 1e-4, `max |ours - onnxruntime-node| = ${worst} over ${probs.length} chunks`);
  assertDetects(probs, 'v2-micro');
  model.dispose();
});

test('wasmq run --stream: one line per chunk, stacked outputs equal to model.stream()', { skip }, async () => {
  recording ??= synthesizeRecording();
  const { execFileSync } = await import('node:child_process');
  const { mkdtempSync, writeFileSync, readFileSync, rmSync } = await import('node:fs');
  const os = await import('node:os');
  const { encodeNpy, parseNpy } = await import('../../src/js/npy.mjs');
  const { CLI } = await import('./helpers.mjs');
  const chunks = 12;
  const x = recording.samples.slice(0, chunks * CHUNK + 100); // a partial chunk at the end is left out
  const dir = mkdtempSync(path.join(os.tmpdir(), 'wasmq-stream-'));
  try {
    writeFileSync(path.join(dir, 'x.npy'), encodeNpy({ dtype: 'float32', dims: [1, x.length], data: x }));
    const out = execFileSync(process.execPath, [CLI, 'run', V3, '--stream', '--chunk', String(CHUNK), '--state', 'hn=h0', '--state', 'cn=c0',
      '--input', `input=${path.join(dir, 'x.npy')}`, '--out', path.join(dir, 'out')], { encoding: 'utf8' });
    const lines = out.trim().split('\n');
    assert.equal(lines.length, chunks);
    assert.match(lines[0], /^chunk 0: output float32 \[1,2,1\] /);
    const stacked = parseNpy(readFileSync(path.join(dir, 'out', 'output.npy')));
    assert.deepEqual(stacked.dims, [chunks, 1, 2, 1]);
    const model = await load(V3);
    const stream = model.stream({ hn: 'h0', cn: 'c0' });
    for (let k = 0; k < chunks; k++) {
      const r = await stream.push(x.subarray(k * CHUNK, (k + 1) * CHUNK));
      assert.deepEqual(Array.from(stacked.data.subarray(2 * k, 2 * k + 2)), Array.from(r.output.data), `chunk ${k}`);
    }
    model.dispose();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

// Quantized by quantize() with its defaults (static QDQ), calibrated on
// another recording (other sentences, another voice, other noise) with the
// float stream's own h/c as v3.1's state inputs, and judged on the test
// recording against float: the speech decision (p > 0.5) of every 96 ms
// chunk and the cosine of the probability sequences.
async function quantizedVsFloat(file, v3) {
  const { quantizeVad } = await import('./speech.mjs');
  recording ??= synthesizeRecording();
  const { onnx, report } = await quantizeVad(file, { chunk: CHUNK });
  const float = await load(file, { inputShapes: { input: [1, CHUNK] } });
  const int8 = await load(onnx);
  assert.ok(int8.graph().nodes.some((n) => n.backend.startsWith('int8')), 'some nodes run in the int8 backend');
  const run = async (model) => {
    const s = v3 ? model.stream({ hn: 'h0', cn: 'c0' }) : null;
    const probs = [];
    for (let o = 0; o + CHUNK <= recording.samples.length; o += CHUNK) {
      const x = recording.samples.slice(o, o + CHUNK);
      const r = v3 ? await s.push(x) : await model.run({ input: { data: x, dims: [1, CHUNK] } });
      probs.push(r.output.data[v3 ? 1 : r.output.data.length - 1]);
    }
    return probs;
  };
  const pf = await run(float), pq = await run(int8);
  float.dispose();
  int8.dispose();
  let same = 0, dot = 0, nf = 0, nq = 0;
  pf.forEach((p, i) => {
    same += (p > 0.5) === (pq[i] > 0.5);
    dot += p * pq[i];
    nf += p * p;
    nq += pq[i] * pq[i];
  });
  return { same: same / pf.length, cosine: dot / Math.sqrt(nf * nq), chunks: pf.length, summary: report.summary };
}

for (const [label, file, v3] of [['v3.1', V3, true], ['v2-micro', V2, false]]) {
  test(`silero-vad-${label} quantized: decisions equal to float on >= 97% of chunks, probability cosine >= 0.99`, { skip }, async () => {
    const r = await quantizedVsFloat(file, v3);
    console.log(`# ${label} int8: ${r.chunks} chunks, decisions equal ${(100 * r.same).toFixed(1)}%, cosine ${r.cosine.toFixed(5)} (${r.summary})`);
    assert.ok(r.same >= 0.97, `decisions equal on ${r.same} of chunks`);
    assert.ok(r.cosine >= 0.99, `cosine ${r.cosine}`);
  });
}

test('native wasmq run --stream: a line per chunk, stacked outputs within 1e-5 of model.stream() in wasm', { skip: skip || (!existsSync(NATIVE_CLI) && 'no native build') }, async () => {
  recording ??= synthesizeRecording();
  const { execFileSync } = await import('node:child_process');
  const { mkdtempSync, writeFileSync, readFileSync, rmSync } = await import('node:fs');
  const os = await import('node:os');
  const { encodeNpy, parseNpy } = await import('../../src/js/npy.mjs');
  const chunks = 30;
  const x = recording.samples.slice(0, chunks * CHUNK + 700);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'wasmq-nstream-'));
  try {
    writeFileSync(path.join(dir, 'x.npy'), encodeNpy({ dtype: 'float32', dims: [1, x.length], data: x }));
    const out = execFileSync(NATIVE_CLI, ['run', V3, '--stream', '--chunk', String(CHUNK), '--state', 'hn=h0', '--state', 'cn=c0',
      '--input', `input=${path.join(dir, 'x.npy')}`, '--out', path.join(dir, 'out')], { encoding: 'utf8' });
    const lines = out.trim().split('\n');
    assert.equal(lines.length, chunks, 'one line per chunk (the bound hn/cn print none)');
    assert.match(lines[0], /^chunk 0: output float32 \[1,2,1\] /);
    const stacked = parseNpy(readFileSync(path.join(dir, 'out', 'output.npy')));
    assert.deepEqual(stacked.dims, [chunks, 1, 2, 1]);
    const model = await load(V3);
    const stream = model.stream({ hn: 'h0', cn: 'c0' });
    let worst = 0;
    for (let k = 0; k < chunks; k++) {
      const r = await stream.push(x.subarray(k * CHUNK, (k + 1) * CHUNK));
      worst = Math.max(worst, maxAbsDiff(stacked.data.subarray(2 * k, 2 * k + 2), r.output.data));
    }
    model.dispose();
    assert.ok(worst <= TOL, `native vs wasm stream: max diff ${worst}`);
    // Misuse is a usage error (exit 2), naming the option.
    for (const [args, re] of [[['--chunk', '16'], /--chunk and --state go with --stream/], [['--stream'], /--stream needs --chunk/], [['--stream', '--chunk', '16', '--state', 'nope=h0'], /--state nope=h0/]]) {
      let e = null;
      try {
        execFileSync(NATIVE_CLI, ['run', V3, ...args, '--input', `input=${path.join(dir, 'x.npy')}`], { stdio: 'pipe' });
      } catch (err) {
        e = err;
      }
      assert.equal(e?.status, 2, args.join(' '));
      assert.match(e.stderr.toString(), re);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
