// Models live and run here, so a long run never freezes the page; the page
// cancels a run by terminating this worker. Messages: {id, type: 'load' |
// 'run' | 'compare' | 'dispose', ...}; replies {id, ok, ...} or {id, error}, and
// {id, progress} during profiled repeats.
import { load, configure, compare } from '../src/js/index.mjs';

const models = new Map();
let configured = false;

async function handle(msg) {
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
    const repeats = msg.repeats ?? 1;
    const t0 = performance.now();
    let results;
    let profile = null;
    if (msg.profile) {
      // One repeat at a time, so progress can be shown.
      const samples = [];
      for (let r = 0; r < repeats; r++) {
        results = await model.run(msg.feeds, { profile: true });
        samples.push(results.profile);
        self.postMessage({ id: msg.id, progress: (r + 1) / repeats });
      }
      profile = samples[0].map((n, i) => {
        const ms = samples.map((s) => s[i].ms).sort((a, b) => a - b);
        return { name: n.name, op: n.op, ms: ms[(ms.length - 1) >> 1] };
      });
    } else {
      for (let r = 0; r < repeats; r++) results = await model.run(msg.feeds);
    }
    const ms = (performance.now() - t0) / repeats;
    return { results: { ...results }, profile, ms, memory: { ...model.memory } };
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
