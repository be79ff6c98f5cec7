// The JS boundary as a trust boundary: what callers hand the package is
// read from the bytes actually there (never past them), model files are
// read only when they are regular files under a size cap, and every failure
// is a WasmqError with a non-OK code after which the package still works.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync, execFileSync } from 'node:child_process';
import { createServer } from 'node:http';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { load, quantize, WasmqError } from '../../src/js/index.mjs';
import { getCore } from '../../src/js/internal.mjs';
import { buildModel, CLI, MODELS, NATIVE_CLI } from './helpers.mjs';

const N = 4000;
const reluModel = (n = N, inputs = ['x']) =>
  buildModel({
    nodes: inputs.length === 1 ? [{ op: 'Relu', name: 'relu', inputs, outputs: ['y'] }] : [{ op: 'Add', name: 'add', inputs, outputs: ['y'] }],
    inputs: inputs.map((name) => ({ name, dtype: 'float32', shape: [n] })),
    outputs: [{ name: 'y', dtype: 'float32', shape: [n] }],
  });

// Model A's input: values no honest run of model B produces.
const SECRET = Float32Array.from({ length: N }, (_, i) => 70001 + i);
const SECRET_SET = new Set(SECRET);
const honest = () => Float32Array.from({ length: N }, (_, i) => (i % 97) + 0.5);

async function rejectsWasmq(promise, what, code) {
  let error;
  try {
    await promise;
  } catch (e) {
    error = e;
  }
  assert.ok(error, `${what}: was accepted`);
  assert.ok(error instanceof WasmqError, `${what}: threw ${error?.name}: ${error?.message}`);
  assert.match(error.code, /^WQ_ERR_[A-Z_]+$/, `${what}: code ${error.code}`);
  if (code) assert.equal(error.code, code, `${what}: ${error.message}`);
  return error;
}

const KINDS = [Int8Array, Uint8Array, Uint8ClampedArray, Int16Array, Uint16Array, Int32Array, Uint32Array, Float32Array, Float64Array, BigInt64Array, BigUint64Array];
if (typeof globalThis.Float16Array === 'function') KINDS.push(globalThis.Float16Array);

/**
 * Arrays that claim to be N float32 values but are something else or
 * hold fewer bytes: [description, array]. Built fresh for each use.
 */
function lyingArrays() {
  const out = [];
  for (const K of KINDS) {
    const short = K === Float32Array ? 1000 : Math.floor((N * 4) / K.BYTES_PER_ELEMENT / 4); // a quarter of the bytes
    // Tagged as a Float32Array on the instance and through a subclass.
    const tagged = new K(K === Float32Array ? short : N);
    Object.defineProperty(tagged, Symbol.toStringTag, { value: 'Float32Array' });
    out.push([`${K.name} tagged Float32Array`, tagged]);
    class Posing extends K {
      get [Symbol.toStringTag]() {
        return 'Float32Array';
      }
      get length() {
        return N;
      }
      get byteLength() {
        return N * 4;
      }
      get byteOffset() {
        return 0;
      }
    }
    out.push([`${K.name} subclass lying tag/length/byteLength`, new Posing(short)]);
    // Its prototype swapped for Float32Array's: the constructor chain lies.
    const swapped = new K(K === Float32Array ? short : N);
    Object.setPrototypeOf(swapped, Float32Array.prototype);
    out.push([`${K.name} with Float32Array.prototype`, swapped]);
    const ctorLie = new K(short);
    Object.defineProperty(ctorLie, 'constructor', { value: Float32Array });
    out.push([`${K.name} with constructor Float32Array`, ctorLie]);
  }
  class LongerThanItIs extends Float32Array {
    get length() {
      return N;
    }
  }
  out.push(['Float32Array subclass with lying length', new LongerThanItIs(1000)]);
  class BiggerBuffer extends Float32Array {
    get buffer() {
      return new ArrayBuffer(N * 4);
    }
    get byteLength() {
      return N * 4;
    }
  }
  out.push(['Float32Array subclass with lying buffer', new BiggerBuffer(1000)]);
  out.push(['short Float32Array', new Float32Array(N - 1)]);
  out.push(['Float32Array view of a larger buffer, short', new Float32Array(new ArrayBuffer(N * 8), 4, N - 1)]);
  out.push(['DataView of the right size', new DataView(new ArrayBuffer(N * 4))]);
  out.push(['Proxy of a Float32Array', new Proxy(new Float32Array(N), {})]);
  out.push(['plain array', Array.from({ length: N }, () => 1)]);
  out.push(['array-like object', { length: N, 0: 1, [Symbol.toStringTag]: 'Float32Array' }]);
  const detached = new Float32Array(N);
  structuredClone(detached.buffer, { transfer: [detached.buffer] });
  out.push(['detached Float32Array', detached]);
  if (typeof ArrayBuffer.prototype.resize === 'function') {
    const rab = new ArrayBuffer(N * 4, { maxByteLength: N * 8 });
    const tracking = new Float32Array(rab);
    rab.resize(N); // a quarter: the length-tracking view shrinks with it
    out.push(['length-tracking view of a shrunk resizable buffer', tracking]);
    const rab2 = new ArrayBuffer(N * 4, { maxByteLength: N * 8 });
    const fixed = new Float32Array(rab2, 0, N);
    rab2.resize(16); // the fixed-length view is now out of bounds
    out.push(['fixed view past a shrunk resizable buffer', fixed]);
  }
  return out;
}

test('lying arrays never make a run read past the bytes copied: another model\'s data never appears', async () => {
  const a = await load(reluModel());
  const b = await load(reluModel());
  const two = await load(reluModel(N, ['x', 'z']));
  try {
    const check = (out, what) => {
      for (const v of out.y.data) assert.ok(!SECRET_SET.has(v), `${what}: model A's value ${v} came out of model B`);
    };
    const cases = lyingArrays();
    assert.ok(cases.length >= 50, `${cases.length} cases`);
    for (const [what, data] of cases) {
      // A's secret sits in wasm memory (its staging buffer) every time.
      assert.deepEqual((await a.run({ x: SECRET })).y.data, SECRET);
      await rejectsWasmq(b.run({ x: data }), what);
      await rejectsWasmq(b.run({ x: { data, dims: [N] } }), `${what} with dims`);
      check(await b.run({ x: honest() }), `after ${what}`);
    }
    // Honest views at an offset are read from their offset, exactly.
    const big = Float32Array.from({ length: 2 * N }, (_, i) => i);
    const view = new Float32Array(big.buffer, 400, N);
    assert.deepEqual((await b.run({ x: view })).y.data, big.slice(100, 100 + N));
    // A getter of one feed detaching another feed's buffer after it was read.
    const x = honest();
    await rejectsWasmq(
      two.run({
        x,
        get z() {
          structuredClone(x.buffer, { transfer: [x.buffer] });
          return honest();
        },
      }),
      'detached by a later getter',
    );
    // ... or shrinking it (resizable buffers).
    if (typeof ArrayBuffer.prototype.resize === 'function') {
      const rab = new ArrayBuffer(N * 4, { maxByteLength: N * 4 });
      const tracking = new Float32Array(rab);
      await rejectsWasmq(
        two.run({
          x: tracking,
          get z() {
            rab.resize(8);
            return honest();
          },
        }),
        'shrunk by a later getter',
      );
    }
    // Dims read through a Proxy answer once: a second, larger answer is never used.
    let reads = 0;
    const dims = new Proxy([N], { get: (t, k) => (k === '0' ? (reads++ ? 4 * N : N) : t[k]) });
    check(await b.run({ x: { data: honest(), dims } }), 'proxy dims');
    assert.equal(reads, 1);
  } finally {
    a.dispose();
    b.dispose();
    two.dispose();
  }
});

test('the core refuses a byte count that disagrees with dims x dtype before reading (exports called directly)', async () => {
  const core = await getCore();
  const bytes = reluModel();
  const ctx = core._wqx_ctx_new();
  const bytesPtr = core._wqx_malloc(bytes.length);
  core.HEAPU8.set(bytes, bytesPtr);
  const handle = core._wqx_load(ctx, bytesPtr, bytes.length, 0, 0, 0, 0, 0, 0);
  core._wqx_free(bytesPtr);
  assert.ok(handle);
  const dimsPtr = core._wqx_malloc(4);
  const dataPtr = core._wqx_malloc(N * 4);
  try {
    new Int32Array(core.HEAPU8.buffer, dimsPtr, 1)[0] = N;
    for (const nbytes of [N, N * 4 - 1, N * 4 + 1, 0, -1, 0x7fffffff]) {
      assert.equal(core._wqx_set_input(ctx, handle, 0, 1, 1, dimsPtr, dataPtr, nbytes), 4, `nbytes ${nbytes}`); // WQ_ERR_SHAPE
      assert.match(core.UTF8ToString(core._wqx_error_message(ctx)), /input 'x' dims \[4000\] of float need 16000 bytes/);
      assert.equal(core._wqx_run(ctx, handle), 5); // nothing staged: WQ_ERR_INVALID_ARG, nothing read
    }
    assert.equal(core._wqx_set_input(ctx, handle, 0, 1, 1, dimsPtr, dataPtr, N * 4), 0);
    assert.equal(core._wqx_run(ctx, handle), 0);
  } finally {
    core._wqx_free(dimsPtr);
    core._wqx_free(dataPtr);
    core._wqx_model_free(handle);
    core._wqx_ctx_free(ctx);
  }
});

test('quantizer observe(): lying arrays refused, observe after finish refused, dispose from a getter is clean', async () => {
  const q = await quantize(reluModel());
  try {
    for (const [what, data] of lyingArrays()) await rejectsWasmq(q.observe({ x: data }), `observe ${what}`);
    assert.equal(q.samples, 0);
    await q.observe({ x: honest() });
    assert.equal(q.samples, 1);
    await rejectsWasmq(q.observeAll(42), 'observeAll(42)', 'WQ_ERR_INVALID_ARG');
    await rejectsWasmq(q.observeAll(null), 'observeAll(null)', 'WQ_ERR_INVALID_ARG');
    await rejectsWasmq(q.observe({ x: null }), 'observe({x: null})');
    const first = await q.finish();
    const e = await rejectsWasmq(q.observe({ x: honest() }), 'observe after finish', 'WQ_ERR_INVALID_ARG');
    assert.match(e.message, /finish\(\) was already called/);
    assert.equal(q.samples, 1);
    assert.deepEqual((await q.finish()).onnx, first.onnx); // finish again: the same model
  } finally {
    q.dispose();
  }
  const q2 = await quantize(reluModel());
  const e = await rejectsWasmq(
    q2.observe({
      get x() {
        q2.dispose();
        return honest();
      },
    }),
    'dispose from a getter',
    'WQ_ERR_DISPOSED',
  );
  assert.match(e.message, /disposed/);
});

test('dispose() from inside a feed getter: a clean WQ_ERR_DISPOSED, nothing allocated after it', async () => {
  const core = await getCore();
  const m = await load(reluModel());
  const malloc = core._wqx_malloc;
  let allocatedAfterDispose = 0;
  let disposed = false;
  core._wqx_malloc = (n) => {
    if (disposed) allocatedAfterDispose++;
    return malloc(n);
  };
  try {
    const e = await rejectsWasmq(
      m.run({
        get x() {
          m.dispose();
          disposed = true;
          return honest();
        },
      }),
      'dispose in getter',
      'WQ_ERR_DISPOSED',
    );
    assert.match(e.message, /disposed/);
    assert.equal(allocatedAfterDispose, 0);
    m.dispose(); // idempotent
  } finally {
    core._wqx_malloc = malloc;
  }
});

/** Calls that must each fail as a WasmqError with a non-OK code: [description, () => promise]. */
function hostileCalls(m, q, modelBytes) {
  const calls = [];
  const add = (what, fn) => calls.push([what, fn]);
  const throwing = (what) =>
    new Proxy({}, {
      get() {
        throw new TypeError(what);
      },
      ownKeys() {
        throw new RangeError(what);
      },
    });
  const feedValues = [null, undefined, 0, 42, 'x', true, Symbol('s'), 10n, [], [1, 2], {}, () => 1, new ArrayBuffer(N * 4), new Float32Array(0), new Float64Array(N), { data: null }, { data: new Float32Array(N), dims: null }, { data: new Float32Array(N), dims: [N, 1] }, { data: new Float32Array(N), dims: [-N] }, { data: new Float32Array(N), dims: [N + 0.5] }, { data: new Float32Array(N), dims: [`${N}`] }, { data: new Float32Array(N), dims: [BigInt(N)] }, { data: new Float32Array(N), dims: [1, 1, 1, 1, 1, 1, 1, 1, N] }, { data: new Float32Array(N), dims: { length: 1, 0: N } }, { data: new Float32Array(N), dims: new Array(1e6) }, { data: new Float32Array(N), dims: [Infinity] }, { data: new Float32Array(N), dims: [NaN] }, { data: new Float32Array(N), dims: [2 ** 40] }, throwing('feed'), { get data() { throw new Error('data getter'); } }, { data: new Float32Array(N), get dims() { throw new Error('dims getter'); } }];
  for (const v of feedValues) {
    add(`run({x: ${describe(v)}})`, () => m.run({ x: v }));
    add(`observe({x: ${describe(v)}})`, () => q.observe({ x: v }));
  }
  for (const feeds of [null, undefined, 42, 'feeds', [], { y: new Float32Array(N) }, { x: new Float32Array(N), extra: 1 }, throwing('feeds')]) {
    add(`run(${describe(feeds)})`, () => m.run(feeds));
    add(`observe(${describe(feeds)})`, () => q.observe(feeds));
  }
  for (const options of [null, 42, 'opts', throwing('options'), { profile: true, repeats: 0 }, { profile: true, repeats: 1.5 }, { profile: true, repeats: Symbol('r') }]) {
    add(`run(feeds, ${describe(options)})`, () => m.run({ x: new Float32Array(N) }, options));
  }
  for (const samples of [42, null, undefined, true, 'abc', {}, { [Symbol.iterator]: () => { throw new Error('iterator'); } }, [null], [{ x: new Float64Array(N) }], (async function* gen() { yield { x: 5 }; })(), (function* boom() { throw new Error('generator'); })()]) {
    add(`observeAll(${describe(samples)})`, () => q.observeAll(samples));
  }
  const sources = [null, undefined, 42, {}, [], Symbol('m'), new Uint8Array(0), new Uint8Array([1, 2, 3]), '/dev/zero', '/nonexistent/model.onnx', '/', 'file:///dev/zero', 'http://', new URL('file:///nonexistent')];
  for (const s of sources) add(`load(${describe(s)})`, () => load(s));
  for (const options of [null, 42, 'x', throwing('options'), { partition: 'int8' }, { partition: Symbol('p') }, { threads: 0 }, { threads: 1.5 }, { threads: 10n }, { maxMemoryBytes: -1 }, { maxMemoryBytes: Symbol('m') }, { maxMemoryBytes: 1 }, { maxModelBytes: 0 }, { maxModelBytes: 'big' }, { inputShapes: 5 }, { inputShapes: { x: null } }, { inputShapes: { x: [-1] } }, { inputShapes: { x: [1n] } }, { inputShapes: { x: [1, 2, 3, 4, 5, 6, 7, 8, 9] } }, { inputShapes: { x: [5] } }, { inputShapes: throwing('inputShapes') }]) {
    add(`load(model, ${describe(options)})`, () => load(modelBytes, options));
  }
  for (const options of [null, 42, throwing('options'), { onProgress: 5 }, { total: -1 }, { keepFloat: -1 }, { targetSnrDb: 1000 }, { config: 5 }, { config: '{' }, { config: { activation: { dtype: 'int4' } } }, { inputShapes: 7 }, { maxModelBytes: -5 }]) {
    add(`quantize(model, ${describe(options)})`, () => quantize(modelBytes, options));
  }
  for (const s of [null, 42, new Uint8Array([8, 1]), '/dev/zero']) add(`quantize(${describe(s)})`, () => quantize(s));
  return calls;
}

function describe(v) {
  if (typeof v === 'symbol') return 'Symbol';
  if (typeof v === 'bigint') return `${v}n`;
  if (typeof v === 'function') return 'function';
  if (v === null || v === undefined || typeof v !== 'object') return JSON.stringify(v) ?? String(v);
  if (ArrayBuffer.isView(v)) return `${v.constructor.name}(${v.length})`;
  try {
    const s = JSON.stringify(v, (_, x) => (typeof x === 'bigint' ? `${x}n` : x));
    return s && s.length < 60 ? s : v.constructor?.name ?? 'object';
  } catch {
    return 'object';
  }
}

test('a corpus of hostile calls: each a WasmqError with a non-OK code, the package usable after each', async () => {
  const modelBytes = reluModel();
  const m = await load(modelBytes);
  const q = await quantize(modelBytes);
  const x = honest();
  try {
    const calls = hostileCalls(m, q, modelBytes);
    assert.ok(calls.length >= 100, `${calls.length} calls`);
    for (const [what, call] of calls) {
      let promise;
      try {
        promise = call();
      } catch (e) {
        promise = Promise.reject(e); // a synchronous throw counts the same
      }
      await rejectsWasmq(promise, what);
      // Still usable: the same model gives exact results, the quantizer still observes.
      assert.deepEqual((await m.run({ x })).y.data, x, `after ${what}`);
    }
    const before = q.samples;
    await q.observe({ x });
    assert.equal(q.samples, before + 1);
    const fresh = await load(modelBytes);
    assert.deepEqual((await fresh.run({ x })).y.data, x);
    fresh.dispose();
  } finally {
    m.dispose();
    q.dispose();
  }
});

test('model files: regular files only, under a size cap checked before reading', async (t) => {
  const dir = mkdtempSync(path.join(tmpdir(), 'wq-trust-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const within = async (ms, promise, what, pattern) => {
    const start = performance.now();
    const e = await rejectsWasmq(promise, what, 'WQ_ERR_IO');
    const took = performance.now() - start;
    assert.ok(took < ms, `${what} took ${took.toFixed(0)} ms`);
    assert.match(e.message, pattern);
  };
  await within(1000, load('/dev/zero'), "load('/dev/zero')", /cannot read model '\/dev\/zero': not a regular file \(a character device\)/);
  await within(1000, load(new URL('file:///dev/zero')), 'load(file:///dev/zero)', /not a regular file/);
  await within(1000, quantize('/dev/zero'), "quantize('/dev/zero')", /not a regular file/);
  await within(1000, load(dir), 'load(a directory)', /not a regular file \(a directory\)/);
  const fifo = path.join(dir, 'fifo');
  execFileSync('mkfifo', [fifo]);
  await within(1000, load(fifo), 'load(a FIFO without a writer)', /not a regular file \(a FIFO\)/);
  const file = path.join(dir, 'model.onnx');
  const bytes = reluModel();
  writeFileSync(file, bytes);
  (await load(file, { maxModelBytes: bytes.length })).dispose();
  await within(1000, load(file, { maxModelBytes: bytes.length - 1 }), 'load over maxModelBytes', new RegExp(`is ${bytes.length} bytes, more than the limit of ${bytes.length - 1}`));
  await within(1000, load(new Blob([bytes]), { maxModelBytes: 10 }), 'Blob over maxModelBytes', /more than maxModelBytes \(10\)/);

  // URLs: a declared length over the cap, and a body streamed past it without one.
  const server = createServer((req, res) => {
    if (req.url === '/declared') {
      res.writeHead(200, { 'content-length': String(bytes.length) });
      res.end(Buffer.from(bytes));
      return;
    }
    res.writeHead(200); // chunked, no length: endless zeros until the client stops
    const chunk = Buffer.alloc(65536);
    const pump = () => {
      while (res.write(chunk));
    };
    res.on('drain', pump);
    res.on('close', () => res.off('drain', pump));
    pump();
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.after(() => server.close());
  const base = `http://127.0.0.1:${server.address().port}`;
  (await load(`${base}/declared`)).dispose();
  await within(1000, load(`${base}/declared`, { maxModelBytes: 10 }), 'declared length over the cap', /more than the limit of 10\b/);
  await within(2000, load(`${base}/endless`, { maxModelBytes: 1 << 20 }), 'endless body', /more than the limit of 1048576/);
  server.closeAllConnections?.();

  // The CLIs, JS and native, on a device: a clear one-line error within a second.
  const start = performance.now();
  const js = spawnSync(process.execPath, [CLI, 'info', '/dev/zero'], { encoding: 'utf8', timeout: 10000 });
  assert.equal(js.status, 2, js.stderr);
  assert.match(js.stderr, /cannot read \/dev\/zero: not a regular file \(a character device\)/);
  const jsCap = spawnSync(process.execPath, [CLI, 'info', file], { encoding: 'utf8', env: { ...process.env, WASMQ_MAX_FILE_BYTES: '10' } });
  assert.equal(jsCap.status, 2);
  assert.match(jsCap.stderr, /more than the limit of 10/);
  if (existsSync(NATIVE_CLI)) {
    const t0 = performance.now();
    const native = spawnSync(NATIVE_CLI, ['info', '/dev/zero'], { encoding: 'utf8', timeout: 10000 });
    assert.ok(performance.now() - t0 < 1000, 'native CLI took over 1 s');
    assert.equal(native.status, 2, native.stderr);
    assert.equal(native.stderr, 'wasmq: cannot read /dev/zero: not a regular file (a character device)\n');
    const nativeFifo = spawnSync(NATIVE_CLI, ['run', fifo], { encoding: 'utf8', timeout: 10000 });
    assert.equal(nativeFifo.status, 2, nativeFifo.stderr);
    assert.match(nativeFifo.stderr, /not a regular file \(a FIFO\)/);
  }
  assert.ok(performance.now() - start < 10000);
  // The model folder itself still loads.
  (await load(path.join(MODELS, 'mnist-8', 'model.onnx'))).dispose();
});

test('maxMemoryBytes bounds calibration: quantize() over the limit fails as WQ_ERR_OUT_OF_MEMORY, within it works', async () => {
  const bytes = reluModel();
  // The float model needs its 16,000-byte input staged plus a 16,000-byte output.
  await rejectsWasmq(
    (async () => {
      const q = await quantize(bytes, { maxMemoryBytes: 4000 });
      try {
        await q.observe({ x: honest() });
      } finally {
        q.dispose();
      }
    })(),
    'quantize with maxMemoryBytes 4000',
    'WQ_ERR_OUT_OF_MEMORY',
  );
  // The config key is the same setting; a limit that fits calibrates.
  const q = await quantize(bytes, { config: { maxMemoryBytes: 1 << 20 } });
  await q.observe({ x: honest() });
  assert.equal(q.samples, 1);
  q.dispose();
  await rejectsWasmq(quantize(bytes, { maxMemoryBytes: -1 }), 'maxMemoryBytes -1', 'WQ_ERR_INVALID_ARG');
  await rejectsWasmq(quantize(bytes, { config: { maxMemoryBytes: 1.5 } }), 'config maxMemoryBytes 1.5', 'WQ_ERR_INVALID_ARG');
});

test('run(feeds, {timeoutMs}) stops between nodes with WQ_ERR_TIMEOUT; the model stays exact afterwards', async () => {
  // 400 chained Relu nodes over a million floats: each a fraction of a millisecond.
  const n = 1 << 20;
  const names = Array.from({ length: 401 }, (_, i) => (i === 0 ? 'x' : i === 400 ? 'y' : `t${i}`));
  const bytes = buildModel({
    nodes: names.slice(1).map((out, i) => ({ op: 'Relu', name: `relu${i}`, inputs: [names[i]], outputs: [out] })),
    inputs: [{ name: 'x', dtype: 'float32', shape: [n] }],
    outputs: [{ name: 'y', dtype: 'float32', shape: [n] }],
  });
  const model = await load(bytes);
  try {
    const x = Float32Array.from({ length: n }, (_, i) => (i % 5) - 2);
    const want = x.map((v) => Math.max(v, 0));
    const start = performance.now();
    const full = await model.run({ x });
    const fullMs = performance.now() - start;
    assert.deepEqual(full.y.data, want);
    const limit = Math.max(1, fullMs / 50);
    const e = await rejectsWasmq(model.run({ x }, { timeoutMs: limit }), 'timeoutMs', 'WQ_ERR_TIMEOUT');
    assert.match(e.message, /run stopped after node \d+ of 400: the time limit of [\d.]+ ms was reached/);
    assert.match(e.node, /^relu\d+$/);
    // The next run (no limit) is exact, and a generous limit does not stop it.
    assert.deepEqual((await model.run({ x })).y.data, want);
    assert.deepEqual((await model.run({ x }, { timeoutMs: 1e9 })).y.data, want);
    await rejectsWasmq(model.run({ x }, { timeoutMs: -1 }), 'timeoutMs -1', 'WQ_ERR_INVALID_ARG');
  } finally {
    model.dispose();
  }
  // The CLIs' run --max-time S: exit 1 with the timeout named; a bad value is a usage error.
  const dir = mkdtempSync(path.join(tmpdir(), 'wq-trust-'));
  try {
    const file = path.join(dir, 'chain.onnx');
    writeFileSync(file, bytes);
    const clis = [[process.execPath, CLI]];
    if (existsSync(NATIVE_CLI)) clis.push([NATIVE_CLI]);
    for (const [cmd, ...pre] of clis) {
      const r = spawnSync(cmd, [...pre, 'run', file, '--max-time', '0.01'], { encoding: 'utf8', timeout: 60000 });
      assert.equal(r.status, 1, `${cmd}: ${r.stderr}`);
      assert.match(r.stderr, /run stopped after node \d+ of 400: the time limit of 10 ms was reached \(node 'relu\d+'\) \[WQ_ERR_TIMEOUT\]/);
      const bad = spawnSync(cmd, [...pre, 'run', file, '--max-time', '0'], { encoding: 'utf8' });
      assert.equal(bad.status, 2);
      assert.match(bad.stderr, /--max-time expects seconds in \(0, 1e6\], got 0/);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

/** X[m, k] x Y[k, n] as one MatMul of two inputs (no weights to build), and seeded inputs for it. */
function bigMatMul(m, k, n) {
  const bytes = buildModel({
    nodes: [{ op: 'MatMul', name: 'big_matmul', inputs: ['x', 'y'], outputs: ['z'] }],
    inputs: [
      { name: 'x', dtype: 'float32', shape: [m, k] },
      { name: 'y', dtype: 'float32', shape: [k, n] },
    ],
    outputs: [{ name: 'z', dtype: 'float32', shape: [m, n] }],
  });
  const x = Float32Array.from({ length: m * k }, (_, i) => ((i * 7) % 13) / 13 - 0.5);
  const y = Float32Array.from({ length: k * n }, (_, i) => ((i * 5) % 11) / 11 - 0.5);
  return { bytes, feeds: { x, y } };
}

test('one long MatMul stops inside the node under timeoutMs; a limit never reached changes no bit', async () => {
  const { bytes, feeds } = bigMatMul(256, 1024, 1024); // 2^28 multiply-adds
  // The threaded build splits a GEMM for a time limit (the single-threaded one checks between nodes).
  const model = await load(bytes, { threads: 2 });
  try {
    let start = performance.now();
    const want = (await model.run(feeds)).z.data;
    const fullMs = performance.now() - start;
    start = performance.now();
    const e = await rejectsWasmq(model.run(feeds, { timeoutMs: fullMs / 20 }), 'timeoutMs', 'WQ_ERR_TIMEOUT');
    const stoppedMs = performance.now() - start;
    assert.match(e.message, /run stopped in node 1 of 1: the time limit of [\d.]+ ms was reached/);
    assert.equal(e.node, 'big_matmul');
    // Checked between column blocks of about 2^23 multiply-adds (1/32 of this product).
    assert.ok(stoppedMs < fullMs / 2, `stopped after ${stoppedMs.toFixed(1)} ms of a ${fullMs.toFixed(1)} ms run`);
    assert.deepEqual((await model.run(feeds, { timeoutMs: 1e9 })).z.data, want);
    assert.deepEqual((await model.run(feeds)).z.data, want);
  } finally {
    model.dispose();
  }
});

test('quantize timeoutMs: past it observe and finish fail with WQ_ERR_TIMEOUT and give no model; both CLIs --timeout write nothing', async () => {
  const { bytes, feeds } = bigMatMul(128, 512, 512);
  // A generous limit changes nothing: the same bytes as without one.
  const free = await quantize(bytes);
  const limited = await quantize(bytes, { timeoutMs: 1e9 });
  for (const q of [free, limited]) for (let s = 0; s < 5; s++) await q.observe(feeds);
  const a = await free.finish();
  const b = await limited.finish();
  assert.deepEqual(b.onnx, a.onnx);
  // A short one: the samples that fit are observed, the next fails, and so does every later call.
  const q = await quantize(bytes, { timeoutMs: 200 });
  let e = null;
  for (let s = 0; s < 10000 && !e; s++) {
    try {
      await q.observe(feeds);
    } catch (err) {
      e = err;
    }
  }
  assert.ok(e instanceof WasmqError, String(e));
  assert.equal(e.code, 'WQ_ERR_TIMEOUT');
  assert.match(e.message, /quantize stopped after \d+ calibration sample\(s\): the time limit of 200 ms was reached/);
  const late = await rejectsWasmq(q.finish(), 'finish after the limit', 'WQ_ERR_TIMEOUT');
  assert.match(late.message, /quantize stopped while writing the int8 model/);
  q.dispose();
  await rejectsWasmq(quantize(bytes, { timeoutMs: -5 }), 'timeoutMs -5', 'WQ_ERR_INVALID_ARG');

  const dir = mkdtempSync(path.join(tmpdir(), 'wq-trust-'));
  try {
    const file = path.join(dir, 'matmul.onnx');
    writeFileSync(file, bytes);
    const clis = [[process.execPath, CLI]];
    if (existsSync(NATIVE_CLI)) clis.push([NATIVE_CLI]);
    for (const [cmd, ...pre] of clis) {
      const out = path.join(dir, 'out.onnx');
      const r = spawnSync(cmd, [...pre, 'quantize', file, '-o', out, '--calib', 'random:100000:0..1', '--timeout', '0.3'], { encoding: 'utf8', timeout: 120000 });
      assert.equal(r.status, 1, `${cmd}: ${r.stderr}`);
      assert.match(r.stderr, /quantize stopped after \d+ calibration sample\(s\): the time limit of 300 ms was reached( \(node 'big_matmul'\))? \[WQ_ERR_TIMEOUT\]/);
      assert.ok(!existsSync(out), 'nothing written');
      const bad = spawnSync(cmd, [...pre, 'quantize', file, '-o', out, '--calib', 'random:1:0..1', '--timeout', '0'], { encoding: 'utf8' });
      assert.equal(bad.status, 2);
      assert.match(bad.stderr, /--timeout takes seconds in \(0, 1e6\], got '0'/);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
