// Node-only services of the loader, chosen through package.json "imports"
// (#platform: "node" condition). The browser build gets ./browser.mjs, so no
// bundler ever sees a node: import on the browser path.
import { open, stat } from 'node:fs/promises';
import { constants } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';

export const IS_NODE = true;

function fileKind(st) {
  if (st.isDirectory()) return 'a directory';
  if (st.isCharacterDevice()) return 'a character device';
  if (st.isBlockDevice()) return 'a block device';
  if (st.isFIFO()) return 'a FIFO';
  if (st.isSocket()) return 'a socket';
  return 'not a regular file';
}

/**
 * Bytes of a file: URL or a path: regular files only (a device or FIFO
 * would be read without end, or block), and at most maxBytes, checked
 * before anything is read. Throws an Error (with .code from the system
 * where there is one) saying which.
 */
export async function readLocalFile(pathOrUrl, maxBytes = Infinity) {
  const path = pathOrUrl instanceof URL ? fileURLToPath(pathOrUrl) : pathOrUrl;
  const check = (st) => {
    if (!st.isFile()) throw new Error(`not a regular file (${fileKind(st)})`);
    if (st.size > maxBytes) throw new Error(`the file is ${st.size} bytes, more than the limit of ${maxBytes}`);
  };
  check(await stat(path)); // never opens a FIFO, so never waits for its writer
  // Non-blocking: a path swapped for a FIFO since the stat does not hang the open.
  const handle = await open(path, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0));
  try {
    const st = await handle.stat();
    check(st);
    const bytes = new Uint8Array(st.size);
    let n = 0;
    while (n < bytes.length) {
      const { bytesRead } = await handle.read(bytes, n, bytes.length - n, n);
      if (bytesRead === 0) break; // truncated meanwhile
      n += bytesRead;
    }
    return n < bytes.length ? bytes.subarray(0, n) : bytes;
  } finally {
    await handle.close();
  }
}

/**
 * The CLI's cap on a file it reads whole: WASMQ_MAX_FILE_BYTES (as the
 * native CLI reads it) or 2 GiB. Throws for a malformed value.
 */
export function maxFileBytesFromEnv() {
  const env = process.env.WASMQ_MAX_FILE_BYTES;
  if (!env) return 2 ** 31;
  const v = Number(env);
  if (!/^[0-9]+$/.test(env) || !Number.isSafeInteger(v) || v < 1) {
    throw new Error(`WASMQ_MAX_FILE_BYTES must be a byte count >= 1, got '${env}'`);
  }
  return v;
}

export const cpuCount = () => availableParallelism?.() ?? 1;

// Node has no Web Worker: the threaded glue's pthread workers run as
// worker_threads given the globals its worker script expects.
const NODE_WORKER_BOOT = `
const { parentPort, workerData } = require('node:worker_threads');
const { readFileSync } = require('node:fs');
const { fileURLToPath } = require('node:url');
globalThis.self = globalThis;
globalThis.location = { href: workerData.url };
globalThis.importScripts = () => { throw new Error('importScripts is not available in a wasmq worker'); };
globalThis.postMessage = (message, transfer) => parentPort.postMessage(message, transfer);
parentPort.on('message', (data) => globalThis.onmessage({ data }));
(0, eval)(readFileSync(fileURLToPath(workerData.url), 'utf8'));
`;

/** A Web Worker stand-in on worker_threads (for the threaded core's pool). */
export function workerClass() {
  return class NodeWebWorker {
    static created = [];
    #worker;
    constructor(url) {
      this.#worker = new Worker(NODE_WORKER_BOOT, { eval: true, workerData: { url: String(url) } });
      this.#worker.on('message', (data) => this.onmessage?.({ data }));
      this.#worker.on('error', (e) => this.onerror?.(e));
      NodeWebWorker.created.push(this.#worker);
    }
    postMessage(message, transfer) {
      this.#worker.postMessage(message, transfer);
    }
    terminate() {
      return this.#worker.terminate();
    }
  };
}
