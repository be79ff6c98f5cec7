#!/usr/bin/env node
// Structure-aware fuzzer of the JS API (the boundary the C fuzzers do not
// reach): random call orders over load / run (plain, capture, profile) /
// quantize / observe / observeAll / finish / dispose / graph / describe,
// with feeds built from the declared inputs and then mutated the ways a
// hostile or careless caller would: other TypedArray kinds, lying tags,
// lengths and prototypes, subclasses, short or long data, detached and
// shrunk buffers, odd dims (negative, fractional, BigInt, huge, Proxy),
// getters that throw, dispose the model, detach another feed or re-enter
// the package, and junk in place of feeds and options.
//
// Oracles, checked on every call:
//   - a call resolves only if its feeds were truly valid (kind, element
//     count, dims), and then returns exactly the reference result computed
//     here from the bytes the arrays really hold;
//   - otherwise it rejects with a WasmqError whose code is a WQ_ERR_* name;
//   - a "secret" model is run between calls on recognisable values that no
//     other input holds: they must never appear in any other output;
//   - every few calls an honest run must still give exact results.
// A violation is a finding: printed with the seed and call number (the
// same seed replays the same calls), exit status 1.
//
//   node tests/fuzz/fuzz_js.mjs --runs 5000 --seed 1     # the suite's short run
//   nice node tests/fuzz/fuzz_js.mjs --time 3600         # a long campaign
import { load, quantize, WasmqError } from '../../src/js/index.mjs';
import { mulberry32 } from '../../src/js/random.mjs';
import { pathToFileURL } from 'node:url';
import { buildModel } from '../node/helpers.mjs';

const SECRET_BASE = 90001; // secret values: SECRET_BASE + i; honest values stay within [-64, 64]

const MODELS = {
  relu: {
    bytes: buildModel({
      nodes: [{ op: 'Relu', name: 'relu', inputs: ['x'], outputs: ['y'] }],
      inputs: [{ name: 'x', dtype: 'float32', shape: [2, 3] }],
      outputs: [{ name: 'y', dtype: 'float32', shape: [2, 3] }],
    }),
    inputs: [{ name: 'x', dtype: 'float32', shape: [2, 3] }],
    ref: ({ x }) => ({ y: x.map((v) => Math.max(v, 0)) }),
  },
  add: {
    bytes: buildModel({
      nodes: [{ op: 'Add', name: 'add', inputs: ['a', 'b'], outputs: ['y'] }],
      inputs: [
        { name: 'a', dtype: 'float32', shape: ['n', 4] },
        { name: 'b', dtype: 'float32', shape: ['n', 4] },
      ],
      outputs: [{ name: 'y', dtype: 'float32', shape: ['n', 4] }],
    }),
    inputs: [
      { name: 'a', dtype: 'float32', shape: ['n', 4] },
      { name: 'b', dtype: 'float32', shape: ['n', 4] },
    ],
    ref: ({ a, b }) => ({ y: a.map((v, i) => Math.fround(v + b[i])) }),
  },
  ids: {
    bytes: buildModel({
      nodes: [{ op: 'Identity', name: 'id', inputs: ['i'], outputs: ['o'] }],
      inputs: [{ name: 'i', dtype: 'int64', shape: [3] }],
      outputs: [{ name: 'o', dtype: 'int64', shape: [3] }],
    }),
    inputs: [{ name: 'i', dtype: 'int64', shape: [3] }],
    ref: ({ i }) => ({ o: i }),
  },
  bools: {
    bytes: buildModel({
      nodes: [{ op: 'Identity', name: 'copy', inputs: ['p'], outputs: ['q'] }],
      inputs: [{ name: 'p', dtype: 'bool', shape: [5] }],
      outputs: [{ name: 'q', dtype: 'bool', shape: [5] }],
    }),
    inputs: [{ name: 'p', dtype: 'bool', shape: [5] }],
    ref: ({ p }) => ({ q: p }),
  },
};
const SECRET_MODEL = buildModel({
  nodes: [{ op: 'Relu', name: 'secret', inputs: ['s'], outputs: ['t'] }],
  inputs: [{ name: 's', dtype: 'float32', shape: [64] }],
  outputs: [{ name: 't', dtype: 'float32', shape: [64] }],
});
const SECRET = Float32Array.from({ length: 64 }, (_, i) => SECRET_BASE + i);

const ARRAY_OF = { float32: Float32Array, int64: BigInt64Array, bool: Uint8Array };
const KINDS = [Int8Array, Uint8Array, Uint8ClampedArray, Int16Array, Uint16Array, Int32Array, Uint32Array, Float32Array, Float64Array, BigInt64Array, BigUint64Array];

class Finding extends Error {}

/** The fuzzer state for one seed. */
class Fuzz {
  constructor(seed) {
    this.next = mulberry32(seed);
    this.models = {};
    this.quantizer = null;
    this.quantizerFinished = false;
    this.executions = 0;
    this.rejected = 0;
    this.call = 0;
  }
  int(n) {
    return this.next() % n;
  }
  chance(p) {
    return this.next() / 2 ** 32 < p;
  }
  pick(list) {
    return list[this.int(list.length)];
  }

  async setup() {
    for (const name of Object.keys(MODELS)) this.models[name] = await load(MODELS[name].bytes);
    this.secret = await load(SECRET_MODEL);
  }

  /** Honest values for an input of `dtype` and `count` elements (never a secret value). */
  values(dtype, count) {
    const A = ARRAY_OF[dtype];
    const out = new A(count);
    for (let i = 0; i < count; i++) {
      const r = this.int(129) - 64;
      out[i] = dtype === 'int64' ? BigInt(r) : dtype === 'bool' ? r & 1 : r / 2;
    }
    return out;
  }

  /**
   * Feeds for `spec.inputs`: {feeds, truth, valid}. truth: per input the
   * values the array really holds (for the reference), valid: whether a
   * correct runtime must accept them.
   */
  feeds(spec) {
    const n = 1 + this.int(3);
    const dimsOf = (shape) => shape.map((d) => (typeof d === 'string' ? n : d));
    const feeds = {};
    const truth = {};
    let valid = true;
    const later = []; // side effects for getters of later inputs
    const mutate = this.chance(0.55);
    const victim = this.int(spec.inputs.length);
    for (let k = 0; k < spec.inputs.length; k++) {
      const info = spec.inputs[k];
      const dims = dimsOf(info.shape);
      const count = dims.reduce((a, b) => a * b, 1);
      let data = this.values(info.dtype, count);
      truth[info.name] = data;
      let feed = info.shape.every((d) => typeof d === 'number') && this.chance(0.3) ? data : { data, dims };
      if (mutate && k === victim) {
        const m = this.mutateFeed(info, data, dims, count, later);
        feed = m.feed;
        valid = valid && m.valid;
        if (m.valid && m.truth) truth[info.name] = m.truth;
      }
      feeds[info.name] = feed;
    }
    if (mutate && this.chance(0.15)) {
      const junk = this.pick([null, undefined, 5, 'feeds', [], new Float32Array(6)]);
      return { feeds: junk, truth, valid: false };
    }
    if (mutate && this.chance(0.1)) {
      feeds.extra = this.values('float32', 2);
      valid = false;
    }
    if (later.length) {
      // A getter on the last input that does the side effect after the others were read.
      const last = spec.inputs[spec.inputs.length - 1].name;
      const value = feeds[last];
      delete feeds[last];
      Object.defineProperty(feeds, last, {
        enumerable: true,
        get: () => {
          for (const f of later) f();
          return value;
        },
      });
    }
    return { feeds, truth, valid };
  }

  /** One mutation of input `info`'s feed: {feed, valid, truth?}. */
  mutateFeed(info, data, dims, count, later) {
    const A = ARRAY_OF[info.dtype];
    const what = this.int(20);
    const wrap = (d, ds = dims) => ({ data: d, dims: ds });
    switch (what) {
      case 0: { // another kind, same element count
        const K = this.pick(KINDS);
        const ok = K === A || (A === Uint8Array && K === Uint8ClampedArray);
        const d = new K(count);
        if (ok) d.set(data);
        return { feed: wrap(d), valid: ok, truth: d };
      }
      case 1: { // another kind tagged as the right one
        const K = this.pick(KINDS.filter((x) => x !== A && !(A === Uint8Array && x === Uint8ClampedArray)));
        const d = new K(Math.max(1, Math.floor((count * A.BYTES_PER_ELEMENT) / K.BYTES_PER_ELEMENT) - this.int(2)));
        Object.defineProperty(d, Symbol.toStringTag, { value: A.name });
        if (this.chance(0.5)) Object.setPrototypeOf(d, A.prototype);
        return { feed: wrap(d), valid: false };
      }
      case 2: { // a subclass whose getters lie about a shorter array
        const real = Math.max(0, count - 1 - this.int(count));
        class Liar extends A {
          get length() {
            return count;
          }
          get byteLength() {
            return count * A.BYTES_PER_ELEMENT;
          }
        }
        return { feed: wrap(new Liar(real)), valid: false };
      }
      case 3: { // an honest subclass (lies only in its tag): fine
        class Tagged extends A {
          get [Symbol.toStringTag]() {
            return 'Float64Array';
          }
        }
        const d = new Tagged(count);
        d.set(data);
        return { feed: wrap(d), valid: true, truth: data };
      }
      case 4: { // short or long
        const len = count + this.pick([-count, -1, 1, count, 1000]);
        return { feed: wrap(new A(Math.max(0, len))), valid: len === count };
      }
      case 5: { // an honest view at an offset into a larger buffer
        const off = 1 + this.int(4);
        const big = new A(count + off + this.int(4));
        big.set(data, off);
        return { feed: wrap(new A(big.buffer, off * A.BYTES_PER_ELEMENT, count)), valid: true, truth: data };
      }
      case 6: { // detached
        structuredClone(data.buffer, { transfer: [data.buffer] });
        return { feed: wrap(data), valid: count === 0 };
      }
      case 7: { // detached by a later getter
        later.push(() => structuredClone(data.buffer, { transfer: [data.buffer] }));
        return { feed: wrap(data), valid: count === 0 };
      }
      case 8: { // a resizable buffer shrunk by a later getter
        const rab = new ArrayBuffer(count * A.BYTES_PER_ELEMENT, { maxByteLength: 2 * count * A.BYTES_PER_ELEMENT + 8 });
        const tracking = new A(rab);
        tracking.set(data);
        later.push(() => rab.resize(this.int(Math.max(1, count * A.BYTES_PER_ELEMENT))));
        return { feed: wrap(tracking), valid: false };
      }
      case 9: { // odd dims
        const bad = this.pick([[-1, ...dims.slice(1)], dims.map((d) => d + 0.5), dims.map(BigInt), dims.map(String), [...dims, 1], dims.slice(1), [2 ** 31, ...dims.slice(1)], [NaN], null, 7, 'dims', new Array(9).fill(1), { length: dims.length }]);
        return { feed: wrap(data, bad), valid: false };
      }
      case 10: { // dims through a Proxy that answers larger on a second read
        let reads = 0;
        const ds = new Proxy(dims.slice(), { get: (t, key) => (key === '0' && reads++ > 0 ? t[0] * 64 : t[key]) });
        return { feed: wrap(data, ds), valid: true, truth: data };
      }
      case 11: // a getter that throws
        return { feed: { get data() { throw new RangeError('data getter'); }, dims }, valid: false };
      case 12: { // a getter that disposes the model under run
        const fuzz = this;
        return {
          feed: {
            get data() {
              fuzz.disposeCurrent?.();
              return data;
            },
            dims,
          },
          valid: false,
        };
      }
      case 13: { // a getter that re-enters the package
        const fuzz = this;
        return {
          feed: {
            get data() {
              fuzz.reenter?.();
              return data;
            },
            dims,
          },
          valid: true,
          truth: data,
        };
      }
      case 14:
        return { feed: this.pick([null, undefined, 0, 'x', true, Symbol('s'), 3n, [], {}, () => data]), valid: false };
      case 15: { // a Proxy around the array, a DataView, a plain array
        const d = this.pick([new Proxy(data, {}), new DataView(data.buffer), Array.from(data)]);
        return { feed: wrap(d), valid: false };
      }
      case 16: { // the wrong dims for a symbolic dim shared with another input
        const ds = dims.slice();
        ds[0] += 1;
        return { feed: wrap(new A(ds.reduce((a, b) => a * b, 1)), ds), valid: false };
      }
      default: // honest after all
        return { feed: wrap(data), valid: true, truth: data };
    }
  }

  /** Awaits a call; checks the oracle. Returns the result or undefined. */
  async expect(what, promiseFn, { valid, check }) {
    this.executions++;
    let result;
    let error;
    try {
      result = await promiseFn();
    } catch (e) {
      error = e;
    }
    if (error) {
      if (!(error instanceof WasmqError) || !/^WQ_ERR_[A-Z_]+$/.test(error.code)) {
        throw new Finding(`${what}: threw ${error?.name} ${error?.code ?? ''}: ${error?.message}`);
      }
      if (valid === true && !this.sideEffects) throw new Finding(`${what}: valid call rejected: ${error.code} ${error.message}`);
      this.rejected++;
      return undefined;
    }
    if (valid === false) throw new Finding(`${what}: invalid call accepted`);
    if (check) check(result);
    return result;
  }

  checkOutputs(what, spec, truth, out) {
    const want = spec.ref(truth);
    for (const [name, values] of Object.entries(want)) {
      const got = out[name]?.data;
      if (!got || got.length !== values.length) throw new Finding(`${what}: output ${name} has ${got?.length} values, want ${values.length}`);
      for (let i = 0; i < values.length; i++) {
        if (got[i] !== values[i] && !(Number.isNaN(got[i]) && Number.isNaN(values[i]))) {
          throw new Finding(`${what}: output ${name}[${i}] = ${got[i]}, want ${values[i]}`);
        }
      }
    }
    for (const o of Object.values(out)) {
      if (o.data instanceof Float32Array) for (const v of o.data) if (v >= SECRET_BASE && v < SECRET_BASE + 64) throw new Finding(`${what}: a secret value ${v} leaked`);
    }
  }

  async step() {
    this.call++;
    this.sideEffects = false;
    const name = this.pick(Object.keys(MODELS));
    const spec = MODELS[name];
    let model = this.models[name];
    if (model.disposed) model = this.models[name] = await load(spec.bytes);
    this.disposeCurrent = () => {
      this.sideEffects = true;
      model.dispose();
    };
    this.reenter = () => {
      this.sideEffects = true;
      this.secret.run({ s: SECRET }).catch(() => {});
      model.graph();
    };
    const action = this.int(100);
    if (action < 60) {
      const { feeds, truth, valid } = this.feeds(spec);
      const options = this.chance(0.8) ? undefined : this.pick([{ capture: true }, { profile: true, repeats: 1 + this.int(2) }, { profile: true, repeats: 0 }, null, 5, { capture: 1, profile: 1 }, { timeoutMs: 1e6 }, { timeoutMs: -1 }, { timeoutMs: 'soon' }, { profile: true, timeoutMs: 1e6 }]);
      const repeats = options?.repeats ?? 1;
      const timeout = options?.timeoutMs ?? 0;
      const optionsValid = options === undefined || (options !== null && typeof options === 'object' && !(options.profile && !(Number.isInteger(repeats) && repeats >= 1)) && typeof timeout === 'number' && timeout >= 0);
      await this.expect(`${name}.run`, () => model.run(feeds, options), {
        valid: valid && optionsValid,
        check: (out) => this.checkOutputs(`${name}.run`, spec, truth, out),
      });
    } else if (action < 75) {
      await this.quantizerStep();
    } else if (action < 82) {
      const junk = this.pick([null, 42, '/dev/zero', '/nonexistent', new Uint8Array([8, 1, 18]), {}, Symbol('x')]);
      const options = this.pick([undefined, null, 7, { maxModelBytes: 0 }, { threads: -1 }, { partition: 'x' }, { inputShapes: { n: [-1] } }]);
      await this.expect('load(junk)', () => load(junk, options), { valid: false });
    } else if (action < 88) {
      const extra = this.pick(['graph', 'describe', 'describeLowered', 'memory', 'nodeTimes']);
      await this.expect(`${name}.${extra}`, async () => (extra === 'memory' ? model.memory : model[extra]()), { valid: true });
    } else if (action < 92) {
      model.dispose();
      await this.expect(`${name}.run after dispose`, () => model.run({}), { valid: false });
      this.models[name] = await load(spec.bytes);
    } else {
      // The secret model runs: its values sit in wasm memory for the next calls.
      await this.expect('secret.run', () => this.secret.run({ s: SECRET }), { valid: true });
    }
    if (this.call % 25 === 0) await this.sanity();
  }

  async quantizerStep() {
    if (!this.quantizer || this.quantizer.disposed || this.chance(0.05)) {
      this.quantizer?.dispose();
      this.quantizer = await quantize(MODELS.relu.bytes);
      this.quantizerFinished = false;
    }
    const q = this.quantizer;
    this.disposeCurrent = () => {
      this.sideEffects = true;
      q.dispose();
    };
    const action = this.int(10);
    if (action < 6) {
      const { feeds, valid } = this.feeds(MODELS.relu);
      await this.expect('observe', () => q.observe(feeds), { valid: this.quantizerFinished ? false : valid });
    } else if (action < 8) {
      const samples = this.pick([42, null, [], [{ x: new Float32Array(6) }], [{ x: new Float64Array(6) }], 'abc']);
      const ok = Array.isArray(samples) && samples.every((s) => s.x instanceof Float32Array) && !this.quantizerFinished;
      await this.expect('observeAll', () => q.observeAll(samples), { valid: ok });
    } else {
      const hasSamples = q.samples > 0;
      const r = await this.expect('finish', () => q.finish(), { valid: hasSamples ? true : false });
      if (r) this.quantizerFinished = true;
    }
  }

  async sanity() {
    for (const [name, spec] of Object.entries(MODELS)) {
      let model = this.models[name];
      if (model.disposed) model = this.models[name] = await load(spec.bytes);
      this.sideEffects = false;
      const { feeds, truth } = (() => {
        const saved = this.chance;
        this.chance = () => false; // no mutation
        try {
          return this.feeds(spec);
        } finally {
          this.chance = saved;
        }
      })();
      await this.expect(`${name} sanity run`, () => model.run(feeds), { valid: true, check: (out) => this.checkOutputs(`${name} sanity`, spec, truth, out) });
    }
  }

  dispose() {
    for (const m of Object.values(this.models)) m.dispose();
    this.secret?.dispose();
    this.quantizer?.dispose();
  }
}

/** Runs `runs` calls (or until `seconds` pass) from `seed`; returns {executions, rejected, findings}. */
export async function fuzzJs({ seed = 1, runs = 1000, seconds = 0, progress = null }) {
  const fuzz = new Fuzz(seed);
  await fuzz.setup();
  const findings = [];
  const deadline = seconds > 0 ? performance.now() + seconds * 1000 : Infinity;
  try {
    while (seconds > 0 ? performance.now() < deadline : fuzz.executions < runs) {
      try {
        await fuzz.step();
        if (progress && fuzz.call % 50000 === 0) progress(fuzz);
      } catch (e) {
        // Anything escaping a step (a trap, a stray exception) is a finding
        // too, and ends the run: the state may be broken.
        findings.push(`seed ${seed} call ${fuzz.call}: ${e instanceof Finding ? '' : `${e?.name}: `}${e?.message}`);
        if (findings.length >= 10 || !(e instanceof Finding)) break;
      }
    }
    if (!findings.length) await fuzz.sanity();
  } finally {
    try {
      fuzz.dispose();
    } catch (e) {
      findings.push(`seed ${seed} dispose: ${e?.name}: ${e?.message}`);
    }
  }
  return { executions: fuzz.executions, rejected: fuzz.rejected, findings };
}

const isMain = process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href;
if (isMain) {
  const args = process.argv.slice(2);
  const opt = (name, dflt) => {
    const i = args.indexOf(name);
    return i >= 0 ? Number(args[i + 1]) : dflt;
  };
  const seed = opt('--seed', 1);
  const seconds = opt('--time', 0);
  const runs = opt('--runs', seconds ? 0 : 5000);
  const started = performance.now();
  const progress = (f) => console.log(`fuzz_js: ${f.executions} executions, ${((performance.now() - started) / 1000).toFixed(0)} s`);
  const r = await fuzzJs({ seed, runs, seconds, progress });
  const s = (performance.now() - started) / 1000;
  for (const f of r.findings) console.log(`finding: ${f}`);
  console.log(`fuzz_js: seed ${seed}, ${r.executions} executions (${r.rejected} rejected as WasmqError) in ${s.toFixed(1)} s, ${(r.executions / s).toFixed(0)}/s, ${r.findings.length} findings`);
  process.exitCode = r.findings.length ? 1 : 0;
}
