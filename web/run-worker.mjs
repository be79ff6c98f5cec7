// Models live and run here, so a long run never freezes the page; the page
// cancels a run by terminating this worker. Messages: {id, type: 'load' |
// 'run' | 'compare' | 'dispose' | 'quantize', ...}; replies {id, ok, ...} or
// {id, error}, and {id, progress} during profiled repeats and calibration.
// The page quantizes in a worker of its own (a second instance of this
// script), so cancelling a calibration never drops the loaded models.
import { load, configure, compare, quantize, quantizeDynamic } from '../src/js/index.mjs';
import { randomArray } from '../src/js/random.mjs';

const models = new Map();
let configured = false;

/**
 * Seeded calibration sample k: the CLI's `--calib random:N` inputs (seed
 * k * inputs + i, src/core/cli/calib_data; the same bytes for static
 * shapes), symbolic dims from `shapes` (the dims the page runs with) or 1.
 */
function randomSample(inputs, shapes, k) {
  const feeds = {};
  inputs.forEach((info, i) => {
    const given = shapes?.[info.name];
    const dims = (info.shape ?? []).map((d, j) => (typeof d === 'number' && d >= 0 ? d : (given?.[j] ?? 1)));
    feeds[info.name] = { data: randomArray(info.dtype, dims.reduce((a, b) => a * b, 1), k * inputs.length + i), dims };
  });
  return feeds;
}

/**
 * Quantizes msg.bytes: observes msg.samples (feeds, e.g. a demo's bundled
 * input) then msg.random seeded samples, posting {done, total} after each;
 * replies with the QDQ model, the report and the times.
 */
async function quantizeModel({ id, bytes, samples = [], random = 0, shapes, config, notes = [], dynamic = false }) {
  if (dynamic) {
    // onnxruntime's dynamic form in one call: no samples, no report of ranges.
    const t0 = performance.now();
    const { onnx, summary } = await quantizeDynamic(bytes);
    return { onnx, reportJson: JSON.stringify({ mode: 'dynamic', summary, warnings: [] }), summary, samples: 0, calibrateMs: 0, finishMs: performance.now() - t0 };
  }
  const total = samples.length + random;
  if (total < 1) throw new Error('quantize: calibration needs at least one sample');
  const t0 = performance.now();
  const q = await quantize(bytes, { config, total, onProgress: (p) => self.postMessage({ id, progress: p }) });
  try {
    // Random inputs in [0, 1) only fit a model that takes that range: the report says so.
    for (const n of notes) q.note(n);
    if (random > 0) q.note('calibrated on random data (uniform [0, 1)), not on real inputs: the ranges fit that distribution; calibrate on real samples for accuracy');
    for (const feeds of samples) await q.observe(feeds);
    for (let k = 0; k < random; k++) await q.observe(randomSample(q.inputs, shapes, k));
    const t1 = performance.now();
    const { onnx, reportJson, summary } = await q.finish();
    const t2 = performance.now();
    return { onnx, reportJson, summary, samples: total, calibrateMs: t1 - t0, finishMs: t2 - t1 };
  } finally {
    q.dispose();
  }
}

async function handle(msg) {
  if (msg.type === 'quantize') return quantizeModel(msg);
  if (msg.type === 'load') {
    // The page says where the threaded core is served (before the first load).
    // Demos hold up to three models at once (float, int8, quantized in the page).
    if (!configured && msg.threadedDir) configure({ threadedDir: msg.threadedDir, threadPoolSize: 3 * Math.max(1, (msg.options?.threads ?? 1) - 1) });
    configured = true;
    models.get(msg.key)?.dispose();
    const model = await load(msg.bytes, msg.options ?? {});
    models.set(msg.key, model);
    return { inputs: model.inputs, outputs: model.outputs, graph: model.graph(), info: model.info };
  }
  const model = models.get(msg.key);
  if (!model) throw new Error(`no model '${msg.key}' loaded`);
  if (msg.type === 'dispose') {
    model.dispose();
    models.delete(msg.key);
    return {};
  }
  if (msg.type === 'compare') {
    const floatModel = models.get(msg.floatKey);
    if (!floatModel) throw new Error(`no model '${msg.floatKey}' loaded`);
    return { rows: await compare(floatModel, model, msg.feeds) };
  }
  if (msg.type === 'run') {
    // Timing, the one method of the page, `wasmq run --repeats N` and the
    // demo: the wall clock of run(), the median of `repeats` runs after a
    // warm-up run (a single run is timed as it is). Profiled runs (per-node
    // times) come after, untimed, so profiling never inflates the figure.
    const repeats = msg.repeats ?? 1;
    const steps = repeats * (msg.profile ? 2 : 1);
    let results;
    if (repeats > 1) await model.run(msg.feeds);
    const times = [];
    for (let r = 0; r < repeats; r++) {
      const t0 = performance.now();
      results = await model.run(msg.feeds);
      times.push(performance.now() - t0);
      self.postMessage({ id: msg.id, progress: (r + 1) / steps });
    }
    times.sort((a, b) => a - b);
    const ms = times[(repeats - 1) >> 1];
    let profile = null;
    if (msg.profile) {
      const samples = [];
      for (let r = 0; r < repeats; r++) {
        samples.push((await model.run(msg.feeds, { profile: true })).profile);
        self.postMessage({ id: msg.id, progress: (repeats + r + 1) / steps });
      }
      profile = samples[0].map((n, i) => {
        const nodeMs = samples.map((s) => s[i].ms).sort((a, b) => a - b);
        return { name: n.name, op: n.op, ms: nodeMs[(nodeMs.length - 1) >> 1] };
      });
    }
    const method = repeats > 1 ? `median of ${repeats} runs after a warm-up run, wall clock` : 'one run, wall clock';
    return { results: { ...results }, profile, ms, method, memory: { ...model.memory } };
  }
  throw new Error(`unknown message ${msg.type}`);
}

self.onmessage = async ({ data }) => {
  try {
    self.postMessage({ id: data.id, ok: true, ...(await handle(data)) });
  } catch (e) {
    self.postMessage({ id: data.id, error: String(e?.message ?? e), code: e?.code });
  }
};
