// Progress lines for the CLI's long steps, as the native CLI prints them:
// once a step has run for 2 s, "wasmq: WHAT (N s)" on stderr, again every
// 2 s until it ends, also when stderr is not a terminal. A step is often one
// long synchronous call into the wasm core, which blocks this thread's
// timers, so a worker thread watches the clock and writes the lines itself.
import { Worker } from 'node:worker_threads';

const FIRST_LINE_MS = 2000;
const EVERY_MS = 2000;
const TEXT_BYTES = 512;

// Shared with the watcher: [active, text length] as Int32, [start, next line] as Float64 (Date.now() ms), then the text.
const WATCHER = `
const { workerData } = require('node:worker_threads');
const { writeSync } = require('node:fs');
const flags = new Int32Array(workerData, 0, 4);
const times = new Float64Array(workerData, 16, 2);
const text = new Uint8Array(workerData, 32);
for (;;) {
  Atomics.wait(flags, 3, 0, 200);
  if (Atomics.load(flags, 0) !== 1 || Date.now() < times[1]) continue;
  const line = new TextDecoder().decode(text.slice(0, Atomics.load(flags, 1)));
  try {
    writeSync(2, 'wasmq: ' + line + ' (' + Math.round((Date.now() - times[0]) / 1000) + ' s)\\n');
  } catch {}
  times[1] += ${EVERY_MS};
}
`;

let shared = null;

function state() {
  if (!shared) {
    const buffer = new SharedArrayBuffer(32 + TEXT_BYTES);
    shared = { flags: new Int32Array(buffer, 0, 4), times: new Float64Array(buffer, 16, 2), text: new Uint8Array(buffer, 32) };
    // The watcher never keeps the process alive.
    new Worker(WATCHER, { eval: true, workerData: buffer }).unref();
  }
  return shared;
}

function setText(s, what) {
  const bytes = new TextEncoder().encode(what).subarray(0, TEXT_BYTES);
  s.text.set(bytes);
  Atomics.store(s.flags, 1, bytes.length);
}

/** Starts a step (ending the previous one). */
export function step(what) {
  const s = state();
  setText(s, what);
  s.times[0] = Date.now();
  s.times[1] = s.times[0] + FIRST_LINE_MS;
  Atomics.store(s.flags, 0, 1);
}

/** Changes the current step's text (e.g. "calibrating 5/16"), keeping its clock. */
export function stepUpdate(what) {
  if (shared) setText(shared, what);
}

/** Ends the current step. */
export function stepEnd() {
  if (shared) Atomics.store(shared.flags, 0, 0);
}
