// Node-only services of the loader, chosen through package.json "imports"
// (#platform: "node" condition). The browser build gets ./browser.mjs, so no
// bundler ever sees a node: import on the browser path.
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';

export const IS_NODE = true;

/** Bytes of a file: URL or a path. */
export async function readLocalFile(pathOrUrl) {
  return new Uint8Array(await readFile(pathOrUrl instanceof URL ? fileURLToPath(pathOrUrl) : pathOrUrl));
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
