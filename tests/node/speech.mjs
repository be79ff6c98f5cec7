// A speech recording for the voice-activity tests (not a test file itself):
// sentences spoken by Debian's espeak-ng, resampled to 16 kHz mono float by
// sox, put between silences, with faint noise over everything. Generated
// into a temporary folder at test time; no audio is kept in the repository.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export const RATE = 16000;

const SENTENCES = [
  'The quick brown fox jumps over the lazy dog.',
  'Voice activity detection tells speech from silence in every chunk.',
  'Please call Stella and ask her to bring these things with her from the store.',
  'Six spoons of fresh snow peas, five thick slabs of blue cheese.',
];

/** True when espeak-ng and sox are on the PATH. */
export function haveSpeechTools() {
  try {
    execFileSync('espeak-ng', ['--version'], { stdio: 'ignore' });
    execFileSync('sox', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

function speak(dir, text, i, voice) {
  const wav = path.join(dir, `s${i}.wav`);
  const raw = path.join(dir, `s${i}.f32`);
  execFileSync('espeak-ng', ['-s', '150', '-v', voice, '-w', wav, text]);
  execFileSync('sox', ['-V1', wav, '-r', String(RATE), '-c', '1', '-e', 'floating-point', '-b', '32', '-t', 'raw', raw]);
  const b = readFileSync(raw);
  return new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength));
}

/** Other sentences in another voice: a recording the default one was not made from. */
export const OTHER = {
  sentences: [
    'A rainbow is a division of white light into many beautiful colors.',
    'When the sunlight strikes raindrops in the air, they act as a prism.',
    'Seven silent sailors counted the distant lights of the harbor.',
  ],
  voice: 'en-us+f3',
  seed: 11,
};

/**
 * The recording: 1.5 s of silence, then each sentence (espeak-ng voice
 * `voice`) followed by 1.2-2 s of silence, with noise of amplitude `noise`
 * (deterministic).
 * Returns { samples: Float32Array, speech: [[start, end], ...] in samples }.
 */
export function synthesizeRecording({ noise = 0.002, seed = 7, sentences = SENTENCES, voice = 'en' } = {}) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'wasmq-speech-'));
  try {
    const parts = [];
    const speech = [];
    let at = 0;
    const silence = (s) => {
      parts.push(new Float32Array(Math.round(s * RATE)));
      at += Math.round(s * RATE);
    };
    silence(1.5);
    sentences.forEach((text, i) => {
      const s = speak(dir, text, i, voice);
      parts.push(s);
      speech.push([at, at + s.length]);
      at += s.length;
      silence(1.2 + 0.25 * i);
    });
    const samples = new Float32Array(at);
    let o = 0;
    for (const p of parts) {
      samples.set(p, o);
      o += p.length;
    }
    let state = seed >>> 0;
    for (let i = 0; i < samples.length; i++) {
      state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
      samples[i] += noise * (state / 2 ** 32 - 0.5) * 2;
    }
    return { samples, speech };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * A Silero VAD model quantized by quantize() with its defaults, calibrated on
 * the OTHER recording in 1536-sample chunks (every 5th); a model with h0/c0
 * state inputs (v3.1) gets the float stream's own state at each sample.
 * Returns the quantized ONNX bytes and the quantizer's report.
 */
export async function quantizeVad(file, { chunk = 1536 } = {}) {
  const { load, quantize } = await import('../../src/js/index.mjs');
  const calib = synthesizeRecording(OTHER).samples;
  const float = await load(file, { inputShapes: { input: [1, chunk] } });
  const stateful = float.inputs.some((i) => i.name === 'h0');
  const stream = stateful ? float.stream({ hn: 'h0', cn: 'c0' }) : null;
  const samples = [];
  for (let o = 0, k = 0; o + chunk <= calib.length; o += chunk, k++) {
    const x = calib.slice(o, o + chunk);
    if (k % 5 === 0) samples.push({ input: { data: x, dims: [1, chunk] }, ...(stream ? stream.state() : {}) });
    if (stream) await stream.push(x);
  }
  float.dispose();
  const q = await quantize(file, { inputShapes: { input: [1, chunk] } });
  try {
    await q.observeAll(samples);
    const { onnx, report } = await q.finish();
    return { onnx, report };
  } finally {
    q.dispose();
  }
}
