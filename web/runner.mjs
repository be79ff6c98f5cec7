// A model Worker (run-worker.mjs) behind promises: call() posts a message and
// resolves with the reply, passing {id, progress} messages to onProgress;
// cancel() terminates the Worker (stopping whatever runs in it, and dropping
// every model it holds) and starts a fresh one.
export class Runner {
  #worker = null;
  #seq = 0;
  #waiters = new Map();
  constructor({ lazy = false } = {}) {
    if (!lazy) this.#start();
  }
  #start() {
    this.#worker = new Worker(new URL('./run-worker.mjs', import.meta.url), { type: 'module' });
    this.#worker.onmessage = ({ data }) => {
      const w = this.#waiters.get(data.id);
      if (!w) return;
      if (data.progress !== undefined) return w.onProgress?.(data.progress);
      this.#waiters.delete(data.id);
      if (data.error) w.reject(Object.assign(new Error(data.error), { code: data.code }));
      else w.resolve(data);
    };
    // A Worker whose script cannot start (blocked, missing, a syntax error)
    // never answers: every pending call fails with why instead of waiting.
    this.#worker.onerror = (e) => {
      e.preventDefault();
      const why = `the model Worker failed${e.message ? `: ${e.message}` : ' to start (its script was not served or was blocked)'}`;
      for (const w of this.#waiters.values()) w.reject(new Error(why));
      this.#waiters.clear();
      this.#worker.terminate();
      this.#worker = null;
    };
  }
  get busy() {
    return this.#waiters.size > 0;
  }
  call(msg, onProgress, transfer = []) {
    if (!this.#worker) this.#start();
    const id = ++this.#seq;
    return new Promise((resolve, reject) => {
      this.#waiters.set(id, { resolve, reject, onProgress });
      this.#worker.postMessage({ ...msg, id }, transfer);
    });
  }
  cancel() {
    this.#worker?.terminate();
    for (const w of this.#waiters.values()) w.reject(Object.assign(new Error('cancelled'), { cancelled: true }));
    this.#waiters.clear();
    this.#start();
  }
}
