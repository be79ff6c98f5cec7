// Finding and instantiating the wasm core: the single-threaded build, or the
// threaded build (wasm threads + SharedArrayBuffer) where the environment
// allows it, and the quant build (the runtime plus the post-training
// quantizer), which only quantize() loads. One core of each kind is shared.
// The runtime builds come in two kernel flavours: SIMD128 and relaxed SIMD
// (build.sh --relaxed; only where relaxed_probe.mjs passed, see index.mjs).
//
// Layout (same in the repository and in the published package):
//   src/js/core.mjs  ->  ../../wasm_build/out/wasmq.{mjs,wasm}, ../../wasm_build/out/mt/,
//                        ../../wasm_build/out/{,mt/}wasmq-relaxed.{mjs,wasm},
//                        ../../wasm_build/out/wasmq-quant.{mjs,wasm}

import { IS_NODE, readLocalFile, cpuCount, workerClass } from '#platform';
import { WasmqError } from './errors.mjs';

// The defaults are literal `new URL('…', import.meta.url)` so bundlers that
// rewrite that pattern (vite, webpack) emit the files as assets.
const DEFAULT_GLUE_URL = new URL('../../wasm_build/out/wasmq.mjs', import.meta.url);
const DEFAULT_WASM_URL = new URL('../../wasm_build/out/wasmq.wasm', import.meta.url);
// The threaded variant (build.sh --threads): wasmq.mjs, wasmq.wasm, wasmq.worker.js.
// A folder: bundlers cannot copy it (a bundled page sets baseUrl or threadedDir for threads).
const DEFAULT_THREADED_DIR = new URL(/* @vite-ignore */ '../../wasm_build/out/mt/', import.meta.url);
// The quant variant (build.sh --quant).
const DEFAULT_QUANT_GLUE_URL = new URL('../../wasm_build/out/wasmq-quant.mjs', import.meta.url);
const DEFAULT_QUANT_WASM_URL = new URL('../../wasm_build/out/wasmq-quant.wasm', import.meta.url);
// The relaxed-SIMD variant (build.sh --relaxed [--threads]).
const DEFAULT_RELAXED_GLUE_URL = new URL('../../wasm_build/out/wasmq-relaxed.mjs', import.meta.url);
const DEFAULT_RELAXED_WASM_URL = new URL('../../wasm_build/out/wasmq-relaxed.wasm', import.meta.url);

// Each core's files relative to configure({ baseUrl }), the package's
// wasm_build/out/ folder as served: the one setting that finds every core.
const BASE_FILES = {
  glueUrl: 'wasmq.mjs',
  wasmUrl: 'wasmq.wasm',
  threadedDir: 'mt/',
  quantGlueUrl: 'wasmq-quant.mjs',
  quantWasmUrl: 'wasmq-quant.wasm',
  relaxedGlueUrl: 'wasmq-relaxed.mjs',
  relaxedWasmUrl: 'wasmq-relaxed.wasm',
};
const DEFAULTS = {
  glueUrl: DEFAULT_GLUE_URL,
  wasmUrl: DEFAULT_WASM_URL,
  threadedDir: DEFAULT_THREADED_DIR,
  quantGlueUrl: DEFAULT_QUANT_GLUE_URL,
  quantWasmUrl: DEFAULT_QUANT_WASM_URL,
  relaxedGlueUrl: DEFAULT_RELAXED_GLUE_URL,
  relaxedWasmUrl: DEFAULT_RELAXED_WASM_URL,
};

/**
 * Where one of a core's files is, and which setting said so: the setting
 * itself, else baseUrl, else the package's own folder.
 */
function located(key) {
  const page = globalThis.location?.href ?? import.meta.url;
  if (coreOptions[key] !== undefined) return { url: new URL(coreOptions[key], page), setting: key };
  if (coreOptions.baseUrl !== undefined) return { url: new URL(BASE_FILES[key], new URL(coreOptions.baseUrl, page)), setting: 'baseUrl' };
  return { url: DEFAULTS[key], setting: null };
}

/**
 * What to do when a core's file cannot be fetched: name the setting that
 * pointed there, or the one to add.
 */
function locationHint(setting, file) {
  if (setting === 'baseUrl') {
    return `configure({ baseUrl: ${JSON.stringify(String(coreOptions.baseUrl))} }) points there: serve the package's wasm_build/out/ folder (with ${file}) at that URL`;
  }
  if (setting) return `configure({ ${setting} }) points there: fix that URL`;
  if (IS_NODE) return "in a source checkout, build it with `npm run build:wasm`; or call configure({ baseUrl: '<the folder holding the package's wasm_build/out/ files>/' })";
  return (
    `if your bundler or server did not copy the package's wasm_build/out/ folder, serve it and call ` +
    `configure({ baseUrl: '<where that folder is served>/' }) before the first load()`
  );
}

// One slot per kind of core: the promise of its instantiation and, once
// resolved, the core it gave (to retire the right one).
const slots = {
  single: { promise: null, resolved: null },
  threaded: { promise: null, resolved: null },
  quant: { promise: null, resolved: null },
  singleRelaxed: { promise: null, resolved: null },
  threadedRelaxed: { promise: null, resolved: null },
};
let coreOptions = {};
// Cores that trapped, with why; their models report it (WQ_ERR_DISPOSED).
const retiredCores = new WeakMap();
// Test hook (tests/node/recovery.test.mjs): a trap kind the next guarded
// core call triggers first, as a real trap would happen inside it.
let armedTestTrap = null;

/**
 * Optional: baseUrl, where the package's wasm_build/out/ folder is served
 * (every core is found from it: wasmq.{mjs,wasm}, mt/, wasmq-quant.*);
 * or each file on its own (overriding baseUrl) or the
 * .wasm bytes themselves, the threaded build's folder, the thread count
 * load() uses when its options give none (default 1), and how many workers
 * the threaded core starts with (threadPoolSize; every model with N threads
 * holds N-1 of them while it lives), and where quantize() finds the quant
 * build (quantGlueUrl, quantWasmUrl or quantWasmBinary), and the relaxed-SIMD
 * build (relaxedGlueUrl, relaxedWasmUrl or relaxedWasmBinary; the threaded
 * one is wasmq-relaxed.* in threadedDir). Must be called before the first
 * load() or quantize(). Calls add up: each sets only the options it names.
 */
export function configure({ baseUrl, glueUrl, wasmUrl, wasmBinary, threadedDir, threads, threadPoolSize, quantGlueUrl, quantWasmUrl, quantWasmBinary, relaxedGlueUrl, relaxedWasmUrl, relaxedWasmBinary } = {}) {
  if (Object.values(slots).some((slot) => slot.promise)) throw new WasmqError('configure() must be called before the core is instantiated');
  if (threads !== undefined && !(Number.isInteger(threads) && threads >= 1)) {
    throw new WasmqError(`configure: threads must be an integer >= 1 (got ${threads})`);
  }
  if (threadPoolSize !== undefined && !(Number.isInteger(threadPoolSize) && threadPoolSize >= 1 && threadPoolSize <= 64)) {
    throw new WasmqError(`configure: threadPoolSize must be an integer from 1 to 64 (got ${threadPoolSize})`);
  }
  const given = { baseUrl, glueUrl, wasmUrl, wasmBinary, threadedDir, threads, threadPoolSize, quantGlueUrl, quantWasmUrl, quantWasmBinary, relaxedGlueUrl, relaxedWasmUrl, relaxedWasmBinary };
  // Each call sets what it names; earlier calls' other settings stay.
  for (const [key, value] of Object.entries(given)) if (value !== undefined) coreOptions[key] = value;
}

/**
 * Whether the threaded build can run here: shared wasm memory needs
 * SharedArrayBuffer, which Node always has and a browser only gives an
 * isolated page (crossOriginIsolated: COOP/COEP headers).
 */
export function threadsSupported() {
  if (typeof SharedArrayBuffer === 'undefined' || typeof Atomics === 'undefined') return false;
  return IS_NODE || globalThis.crossOriginIsolated === true;
}

async function instantiateThreadedCore(poolSize, relaxed) {
  const { url: dir, setting } = located('threadedDir');
  const base = relaxed ? 'wasmq-relaxed' : 'wasmq';
  const glueUrl = new URL(`${base}.mjs`, dir);
  const wasmUrl = new URL(`${base}.wasm`, dir);
  let createCore;
  let wasmBinary;
  try {
    ({ default: createCore } = await import(/* webpackIgnore: true */ /* @vite-ignore */ glueUrl.href));
    wasmBinary = await readUrlBytes(wasmUrl);
  } catch (e) {
    throw new WasmqError(`cannot load the threaded wasm core from ${wasmUrl.href}: ${e.message}; ${locationHint(setting === 'baseUrl' ? 'baseUrl' : setting, relaxed ? 'mt/wasmq-relaxed.wasm' : 'mt/')}`, {
      code: 'WQ_ERR_IO',
    });
  }
  // The pool's workers are all created while the core starts: a Node
  // stand-in for Worker is visible only until then. In a browser they are
  // watched instead: a worker the page may not start (its script blocked,
  // e.g. served without Cross-Origin-Embedder-Policy in an isolated page)
  // would leave the core waiting for it forever, so its error fails the start.
  // In Node the stand-in is used even when something else (another wasm
  // runtime's glue) has put a Worker on globalThis: the glue's workers need
  // the stand-in's environment to start.
  const previousWorker = globalThis.Worker;
  const shim = IS_NODE || previousWorker === undefined ? workerClass() : null;
  const BrowserWorker = shim ? null : previousWorker;
  let workerFailed;
  const failed = new Promise((resolve, reject) => {
    workerFailed = reject;
  });
  failed.catch(() => {});
  if (shim) globalThis.Worker = shim;
  else {
    globalThis.Worker = class WatchedWorker extends BrowserWorker {
      constructor(...args) {
        super(...args);
        // Registered before the glue's own onerror (which rethrows the
        // event and so would kill the calling Worker): that one never runs.
        this.addEventListener('error', (e) => {
          e.stopImmediatePropagation();
          e.preventDefault();
          workerFailed(new Error(`a thread worker (${args[0]}) failed to start${e.message ? `: ${e.message}` : ''}; an isolated page must serve it with Cross-Origin-Embedder-Policy: require-corp`));
        });
      }
    };
  }
  try {
    const started = createCore({
      wasmBinary,
      mainScriptUrlOrBlob: glueUrl.href, // what each worker imports
      wqPoolSize: poolSize,
      print: (text) => console.log(text),
      // The main thread waits for the pool's chunks of a loop (briefly; the
      // workers never need it meanwhile): the glue's warning about that is noise.
      printErr: (text) => {
        if (!text.startsWith('Blocking on the main thread')) console.error(text);
      },
    });
    return await Promise.race([started, failed]);
  } catch (e) {
    throw new WasmqError(`cannot start the threaded wasm core: ${e.message}`, { code: 'WQ_ERR_IO' });
  } finally {
    if (shim) {
      if (previousWorker === undefined) delete globalThis.Worker;
      else globalThis.Worker = previousWorker;
      // Started (they kept the process alive while loading), idle pool
      // threads must not keep it alive any longer.
      for (const w of shim.created) w.unref();
    } else globalThis.Worker = BrowserWorker;
  }
}

/** Workers the threaded core starts with: as configured, else one per other core or as many as first asked for. */
async function threadedPoolSize(requested) {
  return coreOptions.threadPoolSize ?? Math.max(1, requested - 1, cpuCount() - 1);
}

/** The threaded core (internal; shared by every model loaded with threads > 1), the relaxed-SIMD one if asked. */
export async function getThreadedCore(requested, relaxed = false) {
  return cachedCore(relaxed ? slots.threadedRelaxed : slots.threaded, () =>
    threadedPoolSize(requested).then((size) => instantiateThreadedCore(size, relaxed)));
}

/**
 * The slot's core, instantiating it with make() on first use; a failed
 * instantiation empties the slot so a later call can retry (e.g. after
 * building the wasm).
 */
function cachedCore(slot, make) {
  if (!slot.promise) {
    const promise = make();
    slot.promise = promise;
    promise.then(
      (c) => {
        if (slot.promise === promise) slot.resolved = c;
      },
      () => {
        if (slot.promise === promise) slot.promise = null;
      },
    );
  }
  return slot.promise;
}

/**
 * The bytes at a URL, at most maxBytes: a declared Content-Length over it
 * fails before the body is read, and the body is read in chunks that stop
 * at the cap (a server may send more than it declared, or declare nothing).
 */
export async function readUrlBytes(url, maxBytes = Infinity) {
  if (IS_NODE && url.protocol === 'file:') return readLocalFile(url, maxBytes);
  const response = await fetch(url);
  if (!response.ok) throw new Error(`HTTP ${response.status} ${response.statusText}`);
  const tooBig = (n) => new Error(`the response is ${n} bytes or more, more than the limit of ${maxBytes}`);
  const declared = Number(response.headers.get('content-length') ?? NaN);
  if (declared > maxBytes) throw tooBig(declared);
  if (maxBytes === Infinity || !response.body) return new Uint8Array(await response.arrayBuffer());
  const reader = response.body.getReader();
  const chunks = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      await reader.cancel();
      throw tooBig(total);
    }
    chunks.push(value);
  }
  const bytes = new Uint8Array(total);
  let at = 0;
  for (const c of chunks) {
    bytes.set(c, at);
    at += c.byteLength;
  }
  return bytes;
}

async function instantiateCore() {
  return instantiate('glueUrl', 'wasmUrl', coreOptions.wasmBinary, { what: 'the wasm core', binarySetting: 'wasmBinary' });
}

async function instantiateQuantCore() {
  return instantiate('quantGlueUrl', 'quantWasmUrl', coreOptions.quantWasmBinary, { what: 'the quantizer wasm core', binarySetting: 'quantWasmBinary' });
}

/**
 * A single-threaded Emscripten module from its glue and .wasm (or the
 * bytes); a failure names the file that could not be fetched and the
 * setting that decides where it is.
 */
async function instantiate(glueKey, wasmKey, givenBinary, { what }) {
  const glue = located(glueKey);
  const wasm = located(wasmKey);
  let createCore;
  let wasmBinary;
  let failing = glue;
  try {
    ({ default: createCore } = await import(/* webpackIgnore: true */ /* @vite-ignore */ glue.url.href));
    failing = wasm;
    wasmBinary = givenBinary ?? (await readUrlBytes(wasm.url));
  } catch (e) {
    const file = BASE_FILES[failing === glue ? glueKey : wasmKey];
    throw new WasmqError(`cannot load ${what} from ${failing.url.href}: ${e.message}. ${locationHint(failing.setting, file)}`, {
      code: 'WQ_ERR_IO',
    });
  }
  return createCore({
    wasmBinary,
    // Route the runtime's own diagnostics somewhere visible but quiet.
    print: (text) => console.log(text),
    printErr: (text) => console.error(text),
  });
}

async function instantiateRelaxedCore() {
  return instantiate('relaxedGlueUrl', 'relaxedWasmUrl', coreOptions.relaxedWasmBinary, { what: 'the relaxed-SIMD wasm core', binarySetting: 'relaxedWasmBinary' });
}

/** The instantiated Emscripten module (internal; shared by every model), the relaxed-SIMD one if asked. */
export function getCore(relaxed = false) {
  return relaxed ? cachedCore(slots.singleRelaxed, instantiateRelaxedCore) : cachedCore(slots.single, instantiateCore);
}

/**
 * The quant core (internal): the runtime plus wqx_quantizer_*, loaded on
 * the first quantize() only, so load() never downloads the quantizer.
 */
export function getQuantCore() {
  return cachedCore(slots.quant, instantiateQuantCore);
}

/**
 * Drops the shared core so the next call instantiates a fresh one. Used after
 * a wasm trap, which can leave the C heap inconsistent. Models created from
 * the old core keep working with it until disposed.
 */
export function resetCore() {
  for (const slot of Object.values(slots)) {
    slot.promise = null;
    slot.resolved = null;
  }
}

/**
 * Whether `e`, thrown by a call into the core, is a trap or abort: the wasm
 * instance stopped mid-call and its heap may be inconsistent, so the core
 * must not be used again.
 */
function isTrap(e) {
  if (e instanceof WasmqError) return false;
  return (
    e instanceof WebAssembly.RuntimeError ||
    (e instanceof RangeError && /call stack/i.test(e.message)) || // wasm stack overflow
    e?.name === 'ExitStatus' ||
    (e instanceof Error && /^Aborted\(/.test(e.message))
  );
}

/**
 * Drops a core that trapped: the next load() instantiates a fresh one (of
 * the same kind), and models loaded on it say why they cannot run.
 */
function retireCore(core, reason) {
  if (retiredCores.has(core)) return;
  retiredCores.set(core, reason);
  // slot.resolved is set before any caller gets the core (the promise's first
  // reaction), so a retired core is always recognised here.
  for (const slot of Object.values(slots)) {
    if (core === slot.resolved) {
      slot.promise = null;
      slot.resolved = null;
    }
  }
}

/** Why the core was retired (a trap), or null while it is healthy. */
export function coreRetiredReason(core) {
  return retiredCores.get(core) ?? null;
}

/**
 * Runs fn (calls into `core`); a trap inside it retires the core and becomes
 * a WasmqError WQ_ERR_INTERNAL saying what happened. WasmqErrors and
 * other JS errors pass through unchanged.
 */
export function guardCore(core, what, fn) {
  const retired = retiredCores.get(core);
  if (retired) throw new WasmqError(`${what}: the wasm core was discarded after a trap (${retired})`, { code: 'WQ_ERR_DISPOSED' });
  try {
    if (armedTestTrap !== null) {
      const kind = armedTestTrap;
      armedTestTrap = null;
      core._wqx_test_trap(kind);
    }
    return fn();
  } catch (e) {
    if (!isTrap(e)) throw e;
    const reason = `${e.name}: ${e.message}`;
    retireCore(core, reason);
    throw new WasmqError(
      `${what}: the wasm core trapped (${reason}); it was discarded, models loaded on it can no longer run, and the next load() starts a fresh core`,
      { code: 'WQ_ERR_INTERNAL' },
    );
  }
}

/**
 * Test only (not reachable through the package's exports): the next
 * guarded call into a core traps first (kind 0 unreachable, 1 abort(),
 * 2 out-of-bounds memory access).
 */
export function armTrapForTest(kind) {
  armedTestTrap = kind;
}

/** The thread count configure() set as load()'s default (undefined if none). */
export function configuredThreads() {
  return coreOptions.threads;
}
