// Finding and instantiating the wasm core: the single-threaded build, or the
// threaded build (wasm threads + SharedArrayBuffer) where the environment
// allows it. One core of each kind is shared by every model.
//
// Layout (same in the repository and in the published package):
//   src/js/core.mjs  ->  ../../wasm_build/out/wasmq.{mjs,wasm}, ../../wasm_build/out/mt/

import { IS_NODE, readLocalFile, cpuCount, workerClass } from '#platform';
import { WasmqError } from './errors.mjs';

const DEFAULT_GLUE_URL = new URL('../../wasm_build/out/wasmq.mjs', import.meta.url);
const DEFAULT_WASM_URL = new URL('../../wasm_build/out/wasmq.wasm', import.meta.url);
// The threaded variant (build.sh --threads): wasmq.mjs, wasmq.wasm, wasmq.worker.js.
const DEFAULT_THREADED_DIR = new URL('../../wasm_build/out/mt/', import.meta.url);

let corePromise = null;
let threadedCorePromise = null;
let coreOptions = {};

/**
 * Optional: where to find the build (defaults next to the package) or the
 * .wasm bytes themselves, the threaded build's folder, the thread count
 * load() uses when its options give none (default 1), and how many workers
 * the threaded core starts with (threadPoolSize; every model with N threads
 * holds N-1 of them while it lives). Must be called before the first load().
 */
export function configure({ glueUrl, wasmUrl, wasmBinary, threadedDir, threads, threadPoolSize } = {}) {
  if (corePromise || threadedCorePromise) throw new WasmqError('configure() must be called before the core is instantiated');
  if (threads !== undefined && !(Number.isInteger(threads) && threads >= 1)) {
    throw new WasmqError(`configure: threads must be an integer >= 1 (got ${threads})`);
  }
  if (threadPoolSize !== undefined && !(Number.isInteger(threadPoolSize) && threadPoolSize >= 1 && threadPoolSize <= 64)) {
    throw new WasmqError(`configure: threadPoolSize must be an integer from 1 to 64 (got ${threadPoolSize})`);
  }
  coreOptions = { glueUrl, wasmUrl, wasmBinary, threadedDir, threads, threadPoolSize };
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

async function instantiateThreadedCore(poolSize) {
  const dir = new URL(coreOptions.threadedDir ?? DEFAULT_THREADED_DIR, import.meta.url);
  const glueUrl = new URL('wasmq.mjs', dir);
  const wasmUrl = new URL('wasmq.wasm', dir);
  let createCore;
  let wasmBinary;
  try {
    ({ default: createCore } = await import(glueUrl.href));
    wasmBinary = await readUrlBytes(wasmUrl);
  } catch (e) {
    throw new WasmqError(`cannot load the threaded wasm core from ${wasmUrl.href} (bash wasm_build/build.sh --threads): ${e.message}`, {
      code: 'WQ_ERR_IO',
    });
  }
  // The pool's workers are all created while the core starts: a Node
  // stand-in for Worker is visible only until then.
  const shim = typeof globalThis.Worker === 'undefined' ? workerClass() : null;
  if (shim) globalThis.Worker = shim;
  try {
    return await createCore({
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
  } finally {
    if (shim) {
      delete globalThis.Worker;
      // Started (they kept the process alive while loading), idle pool
      // threads must not keep it alive any longer.
      for (const w of shim.created) w.unref();
    }
  }
}

/** Workers the threaded core starts with: as configured, else one per other core or as many as first asked for. */
async function threadedPoolSize(requested) {
  return coreOptions.threadPoolSize ?? Math.max(1, requested - 1, cpuCount() - 1);
}

/** The threaded core (internal; shared by every model loaded with threads > 1). */
export async function getThreadedCore(requested) {
  if (!threadedCorePromise) {
    threadedCorePromise = threadedPoolSize(requested).then(instantiateThreadedCore);
    threadedCorePromise.catch(() => {
      threadedCorePromise = null;
    });
  }
  return threadedCorePromise;
}

export async function readUrlBytes(url) {
  if (IS_NODE && url.protocol === 'file:') return readLocalFile(url);
  const response = await fetch(url);
  if (!response.ok) throw new Error(`HTTP ${response.status} ${response.statusText}`);
  return new Uint8Array(await response.arrayBuffer());
}

async function instantiateCore() {
  const glueUrl = new URL(coreOptions.glueUrl ?? DEFAULT_GLUE_URL, import.meta.url);
  const wasmUrl = new URL(coreOptions.wasmUrl ?? DEFAULT_WASM_URL, import.meta.url);
  let createCore;
  let wasmBinary;
  try {
    ({ default: createCore } = await import(glueUrl.href));
    wasmBinary = coreOptions.wasmBinary ?? (await readUrlBytes(wasmUrl));
  } catch (e) {
    throw new WasmqError(
      `cannot load the wasm core from ${wasmUrl.href}: ${e.message}. If your bundler or server moved the file, ` +
        "call configure({ wasmUrl: '<where wasmq.wasm is served>' }) (or configure({ wasmBinary })) before load(); " +
        'in a source checkout, build it with `npm run build:wasm`',
      { code: 'WQ_ERR_IO' },
    );
  }
  return createCore({
    wasmBinary,
    // Route the runtime's own diagnostics somewhere visible but quiet.
    print: (text) => console.log(text),
    printErr: (text) => console.error(text),
  });
}

/** The instantiated Emscripten module (internal; shared by every model). */
export function getCore() {
  if (!corePromise) {
    corePromise = instantiateCore();
    corePromise.catch(() => {
      corePromise = null; // allow a retry after e.g. building the wasm
    });
  }
  return corePromise;
}

/**
 * Drops the shared core so the next call instantiates a fresh one. Used after
 * a wasm trap, which can leave the C heap inconsistent. Models created from
 * the old core keep working with it until disposed.
 */
export function resetCore() {
  corePromise = null;
  threadedCorePromise = null;
}

/** The thread count configure() set as load()'s default (undefined if none). */
export function configuredThreads() {
  return coreOptions.threads;
}
