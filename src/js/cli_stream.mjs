// `wasmq run MODEL --stream`: a long input cut into chunks along its last
// dim, run one after another with state outputs bound to state inputs
// (--state OUT=IN, kept in wasm memory between chunks: Model.stream). Prints
// one line per chunk and output ("chunk K: " then run's line); --out DIR
// writes each output stacked over the chunks as DIR/NAME.npy ([chunks, ...]).

import { writeFile, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { encodeNpy } from './npy.mjs';
import { safeFileName } from './calib.mjs';

/** helpers: { formatResultLine, usageError(msg), runError(what, e), outputError(msg) }. */
export async function runStream(model, arrays, opts, helpers) {
  const { formatResultLine, usageError, runError, outputError } = helpers;
  const bindings = Object.fromEntries(opts.states);
  // A state input given by --input is the first chunk's state (else zeros).
  const initial = Object.fromEntries([...opts.states.values()].filter((n) => arrays.has(n)).map((n) => [n, arrays.get(n)]));
  const stream = model.stream(bindings, { initial });
  const names = stream.inputs;
  for (const name of names) {
    if (!arrays.has(name)) throw usageError(`--stream: give the long input as --input ${name}=FILE.npy`);
  }
  const chunk = opts.chunk;
  const length = arrays.get(names[0]).dims.at(-1);
  for (const name of names) {
    if (arrays.get(name).dims.at(-1) !== length) throw usageError('--stream: the inputs differ in their last dim');
  }
  const count = Math.floor(length / chunk);
  if (count < 1) throw usageError(`--stream: ${length} steps hold no chunk of ${chunk}`);
  const stacked = new Map();
  for (let k = 0; k < count; k++) {
    const feeds = {};
    for (const name of names) {
      const { data, dims } = arrays.get(name);
      const rows = data.length / length;
      const part = new data.constructor(rows * chunk);
      for (let r = 0; r < rows; r++) part.set(data.subarray(r * length + k * chunk, r * length + (k + 1) * chunk), r * chunk);
      feeds[name] = { data: part, dims: [...dims.slice(0, -1), chunk] };
    }
    let results;
    try {
      results = await stream.push(feeds);
    } catch (e) {
      throw runError(`chunk ${k}`, e);
    }
    for (const [name, result] of Object.entries(results)) {
      console.log(`chunk ${k}: ${formatResultLine(name, result)}`);
      if (!stacked.has(name)) stacked.set(name, []);
      stacked.get(name).push(result);
    }
  }
  if (!opts.outDir) return;
  try {
    await mkdir(opts.outDir, { recursive: true });
    for (const [name, parts] of stacked) {
      const per = parts[0].data.length;
      const data = new parts[0].data.constructor(per * parts.length);
      parts.forEach((p, k) => data.set(p.data, k * per));
      const file = path.join(opts.outDir, `${safeFileName(name)}.npy`);
      await writeFile(file, encodeNpy({ dtype: parts[0].dtype, dims: [parts.length, ...parts[0].dims], data }));
    }
  } catch (e) {
    throw outputError(`writing output: ${e.message}`);
  }
}
