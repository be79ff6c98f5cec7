// Streaming: a model run chunk after chunk (voice activity detection, any
// recurrent model) whose state outputs become the next run's state inputs.
// The state never leaves wasm memory: each stream owns one buffer per state
// input, which the run reads in place and which the bound output is copied
// into (inside wasm memory) after the run. Plain run() calls on the same
// model in between do not touch it.

import { WasmqError } from './errors.mjs';
import { DTYPES, numel } from './dtypes.mjs';

export class ModelStream {
  #model;
  #io;
  #pairs; // [{o: outputIndex, i: inputIndex, ptr, capacity, dims}]
  #initial;
  #chunks = 0;
  #disposed = false;

  /**
   * bindings: {outputName: inputName}; options.initial: {inputName:
   * TypedArray | {data, dims}} for the first chunk (default zeros of the
   * input's declared shape, which must then be static).
   */
  constructor(model, bindings, options, io) {
    this.#model = model;
    this.#io = io;
    if (bindings === null || typeof bindings !== 'object' || Object.keys(bindings).length === 0) {
      throw new WasmqError("stream: bindings must be an object {outputName: inputName}, e.g. { hn: 'h0', cn: 'c0' }");
    }
    const index = (list, name, what) => {
      const i = list.findIndex((t) => t.name === name);
      if (i < 0) throw new WasmqError(`stream: unknown ${what} '${name}' (model ${what}s: ${list.map((t) => t.name).join(', ')})`);
      return i;
    };
    this.#initial = options?.initial ?? {};
    this.#pairs = Object.entries(bindings).map(([out, inp]) => {
      const o = index(model.outputs, out, 'output');
      const i = index(model.inputs, inp, 'input');
      const info = model.inputs[i];
      if (model.outputs[o].dtype !== info.dtype || !DTYPES[info.dtype]) {
        throw new WasmqError(`stream: output '${out}' is ${model.outputs[o].dtype}, input '${inp}' ${info.dtype}`, { code: 'WQ_ERR_SHAPE' });
      }
      return { o, i, ptr: 0, capacity: 0, dims: null };
    });
    if (new Set(this.#pairs.map((p) => p.i)).size !== this.#pairs.length) throw new WasmqError('stream: an input is bound twice');
  }

  /** Chunks pushed since the start or the last reset(). */
  get chunks() {
    return this.#chunks;
  }

  /** The names of the inputs a chunk feeds (every input not bound to a state output). */
  get inputs() {
    const bound = new Set(this.#pairs.map((p) => p.i));
    return this.#model.inputs.filter((_, i) => !bound.has(i)).map((t) => t.name);
  }

  #live() {
    if (this.#disposed) throw new WasmqError('stream was disposed', { code: 'WQ_ERR_DISPOSED' });
  }

  /** Puts the initial state in each state buffer. */
  #start() {
    for (const p of this.#pairs) {
      const info = this.#model.inputs[p.i];
      const T = DTYPES[info.dtype].array;
      let given = this.#initial[info.name];
      if (ArrayBuffer.isView(given)) given = { data: given, dims: info.shape };
      const dims = given?.dims ?? info.shape;
      if (!dims.every((d) => Number.isInteger(d) && d >= 0)) {
        throw new WasmqError(`stream: state input '${info.name}' has shape [${dims.join(',')}]; give options.initial {data, dims}`);
      }
      const data = given?.data ?? new T(numel(dims));
      if (!(data instanceof T) || data.length !== numel(dims)) {
        throw new WasmqError(`stream: options.initial['${info.name}'] must be a ${T.name} of ${numel(dims)} elements`, { code: 'WQ_ERR_SHAPE' });
      }
      if (data.byteLength > p.capacity) {
        if (p.ptr) this.#io.free(p.ptr);
        p.ptr = 0;
        p.ptr = this.#io.alloc(data.byteLength);
        p.capacity = data.byteLength;
      }
      this.#io.write(p.ptr, new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
      p.dims = dims.slice();
    }
  }

  /**
   * Runs one chunk. chunk: feeds {inputName: {data, dims} | TypedArray} for
   * the unbound inputs, or a bare TypedArray when there is one unbound input
   * (its symbolic dims are taken as 1 except the last, which gets the rest).
   * Resolves to the outputs not bound to a state, as run() returns them.
   */
  async push(chunk) {
    this.#live();
    const model = this.#model;
    const names = this.inputs;
    let feeds = chunk;
    if (ArrayBuffer.isView(chunk)) {
      if (names.length !== 1) throw new WasmqError(`stream: push a feeds object for the inputs ${names.join(', ')}`);
      feeds = { [names[0]]: { data: chunk, dims: chunkDims(model.inputs.find((t) => t.name === names[0]), chunk.length) } };
    }
    if (feeds === null || typeof feeds !== 'object') throw new WasmqError('stream: push(chunk) takes a TypedArray or a feeds object');
    if (this.#chunks === 0) this.#start();
    // Stand-ins for the state inputs so validation checks every input (their
    // dims too); the run reads the state buffers instead.
    const full = { ...feeds };
    for (const p of this.#pairs) {
      const info = model.inputs[p.i];
      if (Object.hasOwn(feeds, info.name)) throw new WasmqError(`stream: input '${info.name}' is carried from a state output; do not feed it`);
      full[info.name] = { data: new (DTYPES[info.dtype].array)(numel(p.dims)), dims: p.dims };
    }
    const staged = this.#io.validate(full);
    for (const p of this.#pairs) {
      staged[p.i] = { ...staged[p.i], carried: true, nbytes: numel(p.dims) * DTYPES[model.inputs[p.i].dtype].size, ptr: p.ptr };
    }
    const skip = new Set(this.#pairs.map((p) => p.o));
    const { results, carried } = this.#io.run(staged, this.#pairs.map((p) => [p.o, p.ptr, p.capacity]), skip);
    carried.forEach(({ dims }, k) => {
      this.#pairs[k].dims = dims;
    });
    this.#chunks++;
    return results;
  }

  /** Copies of the state the next push reads: {inputName: {data, dims}}. */
  state() {
    this.#live();
    if (this.#chunks === 0) this.#start();
    const out = {};
    for (const p of this.#pairs) {
      const info = this.#model.inputs[p.i];
      const T = DTYPES[info.dtype].array;
      const n = numel(p.dims);
      const bytes = this.#io.read(p.ptr, n * T.BYTES_PER_ELEMENT);
      out[info.name] = { data: new T(bytes.buffer, 0, n), dims: p.dims.slice() };
    }
    return out;
  }

  /** Starts over from the initial state. */
  reset() {
    this.#live();
    this.#chunks = 0;
  }

  /** Frees the state buffers (also done by the model's dispose()). Idempotent. */
  dispose() {
    if (this.#disposed) return;
    this.#disposed = true;
    for (const p of this.#pairs) if (p.ptr) this.#io.free(p.ptr);
  }
}

/** Dims of a bare chunk of `length` elements for input `info`. */
function chunkDims(info, length) {
  const known = info.shape.slice(0, -1).map((d) => (typeof d === 'number' ? d : 1));
  const last = info.shape[info.shape.length - 1];
  const rest = length / Math.max(1, known.reduce((a, b) => a * b, 1));
  return [...known, typeof last === 'number' ? last : rest];
}
