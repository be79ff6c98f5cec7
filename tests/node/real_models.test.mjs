// Every real model in ../shared/models (except synthetic/) runs in wasm and
// natively and matches a reference within rtol 1e-3, atol 1e-4:
//   - the model's own test_data_set_* when it ships one;
//   - otherwise onnxruntime-node on a seeded random input (mulberry32 seed 0,
//     uniform [0,1) floats; see src/js/random.mjs).
// Native runs go through the native CLI: `wasmq run MODEL --input NAME=FILE.npy
// --out DIR`, comparing the .npy files it writes. A model the core rejects as
// unsupported (WQ_ERR_UNSUPPORTED: an op not implemented yet) is skipped with
// the reason; any other failure fails. The max abs error per model and target
// is reported as a test diagnostic.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import os from 'node:os';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { load, WasmqError } from '../../src/js/index.mjs';
import { encodeNpy, parseNpy } from '../../src/js/npy.mjs';
import { randomArray } from '../../src/js/random.mjs';
import { numel } from '../../src/js/dtypes.mjs';
import { safeFileName } from '../../src/js/cli.mjs';
import { MODELS, MODEL_INPUT_SHAPES, NATIVE_CLI, readDataSet, dataSetDirs, compareClose } from './helpers.mjs';

const ort = createRequire(import.meta.url)('onnxruntime-node');

const TOL = { rtol: 1e-3, atol: 1e-4 };
const SEED = 0;

// Per-model settings for models without reference data: concrete input shapes
// for symbolic dims, and onnxruntime session options.
// (tests/node/silero_vad.test.mjs streams real speech through the VAD models.)
const SPECS = {
  ...Object.fromEntries(Object.entries(MODEL_INPUT_SHAPES).map(([name, shapes]) => [name, { shapes }])),
  // Exact int8 semantics in ORT on x86 without VNNI (see shared/TOOLCHAIN.md).
  'mnist-8-dynamic-int8': { ort: { extra: { session: { x64quantprecision: '1' } } } },
};

const ORT_TYPES = { float32: 'float32', int8: 'int8', uint8: 'uint8', int16: 'int16', uint16: 'uint16', int32: 'int32', int64: 'int64', uint32: 'uint32', uint64: 'uint64', bool: 'bool' };
const ORT_DTYPES = { float: 'float32', ...ORT_TYPES };

const modelDirs = readdirSync(MODELS, { withFileTypes: true })
  .filter((e) => e.isDirectory() && e.name !== 'synthetic' && existsSync(path.join(MODELS, e.name, 'model.onnx')))
  .map((e) => e.name)
  .sort();

test('the shared model list is what this suite expects', () => {
  for (const name of ['mnist-8', 'mnist-8-dynamic-int8', 'super-resolution-10', 'teams-segmentation-msra190729', ...Object.keys(SPECS)]) {
    assert.ok(modelDirs.includes(name), `missing ../shared/models/${name}`);
  }
});

/**
 * Cases of one model: [{label, feeds: {name: {data, dims, dtype}}, expected: [{name, data, dims}]}]
 * plus the input shapes to bind at load.
 */
async function referenceCases(name) {
  const dir = path.join(MODELS, name);
  const modelPath = path.join(dir, 'model.onnx');
  const spec = SPECS[name] ?? {};
  const session = await ort.InferenceSession.create(modelPath, { logSeverityLevel: 3, ...spec.ort });
  try {
    const sets = dataSetDirs(dir);
    if (sets.length > 0) {
      return sets.map((setDir) => {
        const { inputs, outputs } = readDataSet(setDir);
        // Tensor names in the .pb files when present (old exporters list
        // initializers among ORT's inputNames), else the graph's order.
        const feeds = Object.fromEntries(inputs.map((t, i) => [t.name || session.inputNames[i], { data: t.data, dims: t.dims, dtype: t.dtype }]));
        const expected = outputs.map((t, i) => ({ name: t.name || session.outputNames[i], data: t.data, dims: t.dims }));
        return { label: path.basename(setDir), feeds, expected, reference: 'test data' };
      });
    }
    // No reference data: a seeded random input, judged by onnxruntime-node.
    const feeds = {};
    for (const [i, inputName] of session.inputNames.entries()) {
      const meta = session.inputMetadata?.[i];
      const dtype = ORT_DTYPES[meta?.type ?? 'float32'];
      const dims = spec.shapes?.[inputName] ?? meta?.shape;
      assert.ok(dims && dims.every((d) => typeof d === 'number' && d >= 0), `${name}: give SPECS['${name}'].shapes.${inputName} (declared ${JSON.stringify(dims)})`);
      feeds[inputName] = { data: randomArray(dtype, numel(dims), SEED), dims, dtype };
    }
    const ortFeeds = Object.fromEntries(Object.entries(feeds).map(([k, f]) => [k, new ort.Tensor(ORT_TYPES[f.dtype], f.data, f.dims)]));
    const results = await session.run(ortFeeds);
    const expected = session.outputNames.map((o) => ({ name: o, data: results[o].data, dims: [...results[o].dims] }));
    return [{ label: `random:${SEED}`, feeds, expected, reference: 'onnxruntime-node' }];
  } finally {
    await session.release?.();
  }
}

function inputShapesOf(cases) {
  return Object.fromEntries(Object.entries(cases[0].feeds).map(([k, f]) => [k, f.dims]));
}

/** Compares outputs; returns the max abs error over all of them. */
function assertMatches(target, c, got) {
  let maxAbs = 0;
  for (const want of c.expected) {
    const out = got[want.name];
    assert.ok(out, `${target} ${c.label}: no output '${want.name}'`);
    assert.deepEqual(out.dims, want.dims, `${target} ${c.label}: dims of '${want.name}'`);
    const cmp = compareClose(out.data, want.data, TOL);
    maxAbs = Math.max(maxAbs, cmp.maxAbs);
    assert.ok(
      cmp.ok,
      `${target} ${c.label} '${want.name}' vs ${c.reference}: element ${cmp.worst?.index} is ${cmp.worst?.got}, want ${cmp.worst?.want} (max abs err ${cmp.maxAbs})`,
    );
  }
  return maxAbs;
}

const unsupported = (text) => /WQ_ERR_UNSUPPORTED/.test(text);

for (const name of modelDirs) {
  test(`model ${name}`, async (t) => {
    const modelPath = path.join(MODELS, name, 'model.onnx');
    const cases = await referenceCases(name);
    const inputShapes = inputShapesOf(cases);

    await t.test('wasm', async (tt) => {
      let model;
      try {
        model = await load(modelPath, { inputShapes });
      } catch (e) {
        if (e instanceof WasmqError && e.code === 'WQ_ERR_UNSUPPORTED') {
          tt.skip(`unsupported: ${e.message}`);
          return;
        }
        throw e;
      }
      try {
        let maxAbs = 0;
        for (const c of cases) {
          const feeds = Object.fromEntries(Object.entries(c.feeds).map(([k, f]) => [k, { data: f.data, dims: f.dims }]));
          maxAbs = Math.max(maxAbs, assertMatches('wasm', c, await model.run(feeds)));
        }
        tt.diagnostic(`${name} wasm: max abs err ${maxAbs.toExponential(3)} vs ${cases[0].reference}`);
      } finally {
        model.dispose();
      }
    });

    await t.test('native', async (tt) => {
      assert.ok(existsSync(NATIVE_CLI), `${NATIVE_CLI} missing: build it (npm run build:native) or set WQ_NATIVE_BUILD`);
      const tmp = mkdtempSync(path.join(os.tmpdir(), `wasmq-native-${name}-`));
      try {
        let maxAbs = 0;
        for (const [k, c] of cases.entries()) {
          const args = ['run', modelPath];
          for (const [inputName, f] of Object.entries(c.feeds)) {
            const file = path.join(tmp, `${k}_${safeFileName(inputName)}.npy`);
            writeFileSync(file, encodeNpy({ dtype: f.dtype, dims: f.dims, data: f.data }));
            args.push('--input', `${inputName}=${file}`, '--shape', `${inputName}=${f.dims.join('x')}`);
          }
          const outDir = path.join(tmp, `out${k}`);
          args.push('--out', outDir);
          const r = spawnSync(NATIVE_CLI, args, { encoding: 'utf8' });
          if (r.status !== 0 && unsupported(r.stderr)) {
            tt.skip(`unsupported: ${r.stderr.trim()}`);
            return;
          }
          assert.equal(r.status, 0, `native run failed (${r.signal ?? r.status}): ${r.stderr}`);
          const got = {};
          for (const want of c.expected) {
            const file = path.join(outDir, `${safeFileName(want.name)}.npy`);
            assert.ok(existsSync(file), `native run wrote no ${file}`);
            got[want.name] = parseNpy(readFileSync(file));
          }
          maxAbs = Math.max(maxAbs, assertMatches('native', c, got));
        }
        tt.diagnostic(`${name} native: max abs err ${maxAbs.toExponential(3)} vs ${cases[0].reference}`);
      } finally {
        rmSync(tmp, { recursive: true, force: true });
      }
    });
  });
}
