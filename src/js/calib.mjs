// Calibration samples for `npx wasmq quantize --calib SPEC` (Node only: it
// reads folders). The same layouts, order, checks and messages as the native
// reader (src/core/cli/calib_data.c):
//
//   random:N:LO..HI  N seeded samples from the declared inputs: sample k
//             fills input i as `wasmq run --input NAME=random:SEED` does with
//             SEED = k * nInputs + i, float inputs mapped from [0, 1) to
//             [LO, HI); a symbolic batch dim becomes 1, another symbolic dim
//             is an error naming --shape. Without LO..HI it is an error.
//   DIR       DIR/test_data_set_N/input_K.pb (TensorProto; input K is the
//             model's K-th input), one sample per folder;
//   DIR       DIR/<input>.npy (one sample) or DIR/<sample>/<input>.npy (one
//             sample per folder); '/', '\' and ':' in an input name are '_'.
//   DIR       DIR/*.png|jpg|jpeg only: one sample per image, decoded with
//             pngjs / jpeg-js and preprocessed by the config's "images" spec
//             (Node only; the native reader refuses image folders).
//
// Folders go in natural order (test_data_set_2 before _10); samples are read
// one at a time. Every sample must match the inputs' dtype, rank and fixed
// dims, and float data must be finite.

import { readdir, stat } from 'node:fs/promises';
import { readLocalFile, maxFileBytesFromEnv } from '#platform';
import path from 'node:path';
import { DTYPES, numel } from './dtypes.mjs';
import { parseNpy } from './npy.mjs';
import { randomArray } from './random.mjs';
import { decodeTensorProto } from './tensor_proto.mjs';
import { resolveImageSpec, imageToTensor } from './images.mjs';
import { PNG } from 'pngjs';
import jpeg from 'jpeg-js';

/** Bad calibration data or layout; `code` mirrors the core's status. */
export class CalibError extends Error {
  constructor(message, code = 'WQ_ERR_INVALID_ARG') {
    super(message);
    this.name = 'CalibError';
    this.code = code;
  }
}

const RANDOM_MAX = 1000000;

/** A tensor's file name: '/', '\' and ':' (legal in ONNX names) become '_'. */
export function safeFileName(name) {
  return name.replace(/[/\\:]/g, '_');
}

/** String order in which runs of digits compare as numbers. */
export function naturalCompare(a, b) {
  let i = 0;
  let j = 0;
  const isDigit = (c) => c >= '0' && c <= '9';
  while (i < a.length && j < b.length) {
    if (isDigit(a[i]) && isDigit(b[j])) {
      while (a[i] === '0') i++;
      while (b[j] === '0') j++;
      let ei = i;
      let ej = j;
      while (ei < a.length && isDigit(a[ei])) ei++;
      while (ej < b.length && isDigit(b[ej])) ej++;
      if (ei - i !== ej - j) return ei - i < ej - j ? -1 : 1;
      const runA = a.slice(i, ei);
      const runB = b.slice(j, ej);
      if (runA !== runB) return runA < runB ? -1 : 1;
      i = ei;
      j = ej;
    } else {
      if (a[i] !== b[j]) return a[i] < b[j] ? -1 : 1;
      i++;
      j++;
    }
  }
  if (i < a.length) return 1;
  if (j < b.length) return -1;
  return a < b ? -1 : a > b ? 1 : 0;
}

const sortNatural = (names) => names.sort(naturalCompare);

async function kindOf(file) {
  try {
    const s = await stat(file);
    return s.isDirectory() ? 'dir' : s.isFile() ? 'file' : 'other';
  } catch {
    return 'none';
  }
}

const IMAGE_FILE = /\.(png|jpe?g)$/i;

/** One PNG or JPEG file as {width, height, data: RGBA bytes}. */
export function decodeImageFile(bytes, file) {
  try {
    if (bytes.length >= 8 && bytes[0] === 0x89 && bytes[1] === 0x50) {
      const png = PNG.sync.read(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
      return { width: png.width, height: png.height, data: png.data };
    }
    if (bytes.length >= 3 && bytes[0] === 0xff && bytes[1] === 0xd8) {
      const j = jpeg.decode(bytes, { useTArray: true, formatAsRGBA: true, maxMemoryUsageInMB: 1024 });
      return { width: j.width, height: j.height, data: j.data };
    }
  } catch (e) {
    throw new CalibError(`${file}: cannot decode the image: ${e.message}`, 'WQ_ERR_PARSE');
  }
  throw new CalibError(`${file}: neither PNG nor JPEG data`, 'WQ_ERR_PARSE');
}

/** Folders and .npy files of `dir` (hidden entries skipped), naturally sorted. */
async function listDir(dir) {
  let names;
  try {
    names = await readdir(dir);
  } catch (e) {
    const reason = e.code === 'ENOENT' ? 'No such file or directory' : e.message;
    throw new CalibError(`cannot open calibration folder ${dir}: ${reason}`, 'WQ_ERR_IO');
  }
  const folders = [];
  const npys = [];
  const images = [];
  for (const name of names) {
    if (name.startsWith('.')) continue;
    const kind = await kindOf(path.join(dir, name));
    if (kind === 'dir') folders.push(name);
    else if (kind === 'file' && name.endsWith('.npy')) npys.push(name);
    else if (kind === 'file' && IMAGE_FILE.test(name)) images.push(name);
  }
  return { folders: sortNatural(folders), npys: sortNatural(npys), images: sortNatural(images) };
}

const formatDeclared = (shape) => `[${shape.map((d) => (typeof d === 'number' ? d : d ?? '?')).join(',')}]`;

/** Throws unless `value` ({dtype, dims, data}) fits input `info`. */
function checkValue(info, value, file) {
  if (value.dtype !== info.dtype) {
    throw new CalibError(`${file}: dtype ${value.dtype}, but the model's input '${info.name}' is ${info.dtype}`, 'WQ_ERR_SHAPE');
  }
  const shape = info.shape;
  if (shape && (value.dims.length !== shape.length || shape.some((d, k) => typeof d === 'number' && d !== value.dims[k]))) {
    throw new CalibError(`${file}: shape [${value.dims.join(',')}], but the model's input '${info.name}' is ${formatDeclared(shape)}`, 'WQ_ERR_SHAPE');
  }
  if (value.dtype === 'float32') {
    const x = value.data;
    for (let k = 0; k < x.length; k++) {
      if (!Number.isFinite(x[k])) {
        throw new CalibError(`${file}: element ${k} of input '${info.name}' is ${Number.isNaN(x[k]) ? 'NaN' : 'infinite'} (calibration data must be finite)`);
      }
    }
  }
}

/** "LO..HI" as [lo, hi] (finite, lo < hi), or null. */
function parseRange(text) {
  const dots = text.indexOf('..');
  if (dots <= 0) return null;
  const num = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;
  const a = text.slice(0, dots);
  const b = text.slice(dots + 2);
  if (!num.test(a) || !num.test(b)) return null;
  const lo = Number(a);
  const hi = Number(b);
  return Number.isFinite(lo) && Number.isFinite(hi) && lo < hi ? [lo, hi] : null;
}

function openRandom(spec, inputs) {
  const colon = spec.indexOf(':');
  const count = colon < 0 ? spec : spec.slice(0, colon);
  const n = /^\d+$/.test(count) ? Number(count) : NaN;
  if (!(n >= 0 && n <= RANDOM_MAX)) throw new CalibError(`--calib random:N:LO..HI expects N in 1..${RANDOM_MAX}, got random:${spec}`);
  if (n === 0) throw new CalibError('empty calibration set: random:0');
  if (colon < 0) {
    throw new CalibError(
      `--calib random:${n} needs the range of the model's float inputs: random:${n}:LO..HI (e.g. random:${n}:0..1, random:${n}:-1..1, random:${n}:0..255); real samples (--calib DIR) calibrate far better`,
    );
  }
  const range = parseRange(spec.slice(colon + 1));
  if (!range) throw new CalibError(`--calib random:N:LO..HI expects a range such as -1..1 (LO < HI), got '${spec.slice(colon + 1)}'`);
  const [lo, hi] = range;
  for (const info of inputs) {
    if (!info.shape || !DTYPES[info.dtype]) {
      throw new CalibError(`input '${info.name}' (${info.dtype}) has no declared shape or a dtype random data cannot fill: give --calib DIR`);
    }
    const d = info.shape.findIndex((x, k) => k > 0 && typeof x !== 'number');
    if (d > 0) {
      throw new CalibError(
        `input '${info.name}' has the symbolic dim '${info.shape[d] ?? '?'}' (dim ${d}): random data needs it bound, e.g. --shape ${info.name}=1x3x224x224 with the size the model expects, or real samples (--calib DIR)`,
      );
    }
  }
  return {
    kind: 'random',
    count: n,
    range,
    async *[Symbol.asyncIterator]() {
      for (let s = 0; s < n; s++) {
        const feeds = {};
        inputs.forEach((info, i) => {
          const dims = info.shape.map((d) => (typeof d === 'number' ? d : 1));
          const data = randomArray(info.dtype, numel(dims), s * inputs.length + i);
          // [0, 1) to [lo, hi) in double, rounded once into float32: the native reader's bytes.
          if (info.dtype === 'float32') for (let k = 0; k < data.length; k++) data[k] = lo + (hi - lo) * data[k];
          feeds[info.name] = { data, dims };
        });
        yield { name: `random sample ${s}`, feeds };
      }
    },
  };
}

/** Throws unless every input has its file in sample folder `dir`, and no stray file claims to be one. */
async function checkSampleFiles(kind, dir, inputs, fileOf) {
  for (let i = 0; i < inputs.length; i++) {
    const file = path.join(dir, fileOf(i));
    if ((await kindOf(file)) !== 'file') {
      throw new CalibError(`calibration sample ${dir} has no data for input '${inputs[i].name}' (no ${file})`);
    }
  }
  if (kind === 'test-data') {
    const extra = path.join(dir, `input_${inputs.length}.pb`);
    if ((await kindOf(extra)) === 'file') {
      throw new CalibError(`calibration sample ${dir} has more inputs than the model's ${inputs.length} (${extra})`);
    }
    return;
  }
  const expected = inputs.map((info) => `${safeFileName(info.name)}.npy`);
  for (const npy of (await listDir(dir)).npys) {
    if (!expected.includes(npy)) {
      throw new CalibError(`${dir}/${npy} is named after no input of the model (expected: ${expected.join(', ')})`);
    }
  }
}

async function readSampleValue(kind, file, inputs, i) {
  let bytes;
  try {
    bytes = await readLocalFile(file, maxFileBytesFromEnv());
  } catch (e) {
    throw new CalibError(`cannot read ${file}: ${e.message}`, 'WQ_ERR_IO');
  }
  let value;
  try {
    value = kind === 'test-data' ? decodeTensorProto(bytes) : parseNpy(bytes);
  } catch (e) {
    throw new CalibError(`${file}: ${e.message}`, 'WQ_ERR_PARSE');
  }
  // Inputs go by position; a tensor named after another input is a mix-up.
  if (kind === 'test-data' && value.name && value.name !== inputs[i].name) {
    const k = inputs.findIndex((info) => info.name === value.name);
    if (k >= 0) {
      throw new CalibError(`${file} holds the tensor '${value.name}', the model's input ${k}, but input_${i}.pb is input ${i} ('${inputs[i].name}')`);
    }
  }
  checkValue(inputs[i], value, file);
  return value;
}

/** A folder of images, one sample each, preprocessed by the config's "images" spec. */
function openImages(dir, files, inputs, imageSpec) {
  let spec;
  try {
    spec = resolveImageSpec(imageSpec ?? {}, inputs);
  } catch (e) {
    throw new CalibError(`${dir}: ${e.message}`);
  }
  return {
    kind: 'images',
    count: files.length,
    spec,
    // Without a spec the model's input range is a guess: [0, 1] RGB.
    guessed: imageSpec === undefined,
    async *[Symbol.asyncIterator]() {
      for (const name of files) {
        const file = path.join(dir, name);
        let bytes;
        try {
          bytes = await readLocalFile(file, maxFileBytesFromEnv());
        } catch (e) {
          throw new CalibError(`cannot read ${file}: ${e.message}`, 'WQ_ERR_IO');
        }
        const img = decodeImageFile(bytes, file);
        yield { name, feeds: { [spec.input]: imageToTensor(img, spec) } };
      }
    },
  };
}

async function openDir(spec, inputs, imageSpec) {
  const dir = spec.length > 1 ? spec.replace(/\/+$/, '') : spec;
  const { folders, npys, images } = await listDir(dir);
  const sets = folders.filter((f) => f.startsWith('test_data_set_'));
  let kind;
  let samples;
  if (images.length > 0 && npys.length === 0 && folders.length === 0) {
    return openImages(dir, images, inputs, imageSpec);
  } else if (sets.length > 0) {
    kind = 'test-data';
    samples = sets.map((s) => path.join(dir, s));
  } else if (npys.length > 0 && folders.length > 0) {
    throw new CalibError(`calibration folder ${dir} holds both .npy files (${npys[0]}) and sample folders (${folders[0]}): use one layout`);
  } else if (npys.length > 0) {
    kind = 'npy';
    samples = [dir];
  } else if (folders.length > 0) {
    kind = 'npy';
    samples = folders.map((f) => path.join(dir, f));
  } else {
    throw new CalibError(`empty calibration set: ${dir} holds no test_data_set_* folder, no .npy file and no sample folder`);
  }
  const fileOf = kind === 'test-data' ? (i) => `input_${i}.pb` : (i) => `${safeFileName(inputs[i].name)}.npy`;
  for (const sample of samples) await checkSampleFiles(kind, sample, inputs, fileOf);
  return {
    kind,
    count: samples.length,
    async *[Symbol.asyncIterator]() {
      for (const sample of samples) {
        const feeds = {};
        for (let i = 0; i < inputs.length; i++) {
          const { dims, data } = await readSampleValue(kind, path.join(sample, fileOf(i)), inputs, i);
          feeds[inputs[i].name] = { data, dims };
        }
        yield { name: sample === dir ? dir : path.basename(sample), feeds };
      }
    },
  };
}

/**
 * Opens calibration data for a model's inputs (`model.inputs`: [{name,
 * dtype, shape}]). Resolves to { kind, count, [Symbol.asyncIterator] }
 * yielding { name, feeds } one sample at a time, feeds as `model.run` takes
 * them. A folder of PNG/JPEG files (and nothing else) is one sample per
 * image, made by options.images (the config's "images" spec, images.mjs). Layout problems (empty set, missing or stray files) reject here;
 * a bad sample throws when it is reached.
 */
export async function openCalibration(spec, inputs, { images } = {}) {
  if (inputs.length === 0) throw new CalibError('the model has no inputs to calibrate with');
  if (spec.startsWith('random:')) return openRandom(spec.slice(7), inputs);
  return openDir(spec, inputs, images);
}
