// The real third-party int8 models of ../shared/models-int8 (onnxruntime's
// operator format with com.microsoft contrib ops, per-channel weights,
// uint8 activations) against onnxruntime-node with exact int8 arithmetic
// (x64quantprecision, see shared/TOOLCHAIN.md), on seeded inputs:
//   - outputs identical (0 steps: both compute the contrib ops and the
//     convolutions by the same documented formulas);
//   - loaded as published (dynamic batch unbound), every compute node runs
//     in the int8 backend: what stays outside are the boundary quantize /
//     dequantize and shape plumbing on integers (role data, code SHAPE);
//   - the dynamic batch runs batch 2 as well.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { load } from '../../src/js/index.mjs';
import { randomArray } from '../../src/js/random.mjs';
import { SHARED, NATIVE_CLI } from './helpers.mjs';

const ort = createRequire(import.meta.url)('onnxruntime-node');
const ORT_OPTIONS = { logSeverityLevel: 3, extra: { session: { x64quantprecision: '1' } } };
const INT8_MODELS = path.join(SHARED, 'models-int8');

const CASES = [
  // Published with a dynamic batch.
  { name: 'mobilenetv2-12-int8', item: [3, 224, 224], batches: [1, 2], contrib: ['QLinearAdd', 'QLinearGlobalAveragePool'] },
  // Its global pool is two float ReduceMeans between DequantizeLinear and QuantizeLinear.
  { name: 'mlperftiny-kws-dscnn-int8', item: [1, 49, 10], batches: [1], contrib: ['QLinearAdd'] },
];

async function runOrt(file, name, data, dims) {
  const session = await ort.InferenceSession.create(file, ORT_OPTIONS);
  const out = await session.run({ [name]: new ort.Tensor('float32', data, dims) });
  return Object.values(out)[0].data;
}

for (const c of CASES) {
  const file = path.join(INT8_MODELS, c.name, 'model.onnx');

  test(`${c.name}: identical to onnxruntime-node on seeded inputs (batch ${c.batches.join(', ')})`, async () => {
    const model = await load(file);
    try {
      const name = model.inputs[0].name;
      const itemSize = c.item.reduce((a, b) => a * b, 1);
      for (const batch of c.batches) {
        for (const seed of [0, 1]) {
          const dims = [batch, ...c.item];
          const data = randomArray('float32', batch * itemSize, seed);
          const ours = Object.values(await model.run({ [name]: { data, dims } }))[0].data;
          const theirs = await runOrt(file, name, data, dims);
          assert.equal(ours.length, theirs.length);
          let differ = 0;
          for (let i = 0; i < ours.length; i++) if (ours[i] !== theirs[i]) differ++;
          assert.equal(differ, 0, `batch ${batch} seed ${seed}: ${differ} of ${ours.length} outputs differ from onnxruntime`);
        }
      }
    } finally {
      model.dispose();
    }
  });

  test(`${c.name}: every compute node runs int8 (contrib ops lowered), in wasm and natively`, { todo: c.todo }, async () => {
    const model = await load(file);
    try {
      const { nodes } = model.graph();
      const compute = nodes.filter((n) => n.role === 'compute');
      const float = compute.filter((n) => !n.backend.startsWith('int8'));
      assert.deepEqual(float.map((n) => `${n.op} ${n.name}`), [], 'compute nodes outside the int8 backend');
      assert.ok(compute.some((n) => n.source_ops?.includes('QLinearConv') || n.op.startsWith('QConv')));
      const text = model.describeLowered();
      for (const op of c.contrib) assert.match(text, new RegExp(`from ${op} \\(com\\.microsoft`), `${op} lowered`);
    } finally {
      model.dispose();
    }
    const native = spawnSync(NATIVE_CLI, ['info', file, '--lowered'], { encoding: 'utf8' });
    assert.equal(native.status, 0, native.stderr);
    const floatLines = native.stdout.split('\n').filter((l) => /^\s+\[float\]/.test(l) && !/\b(Shape|Gather|Unsqueeze|Concat)\b/.test(l));
    assert.deepEqual(floatLines, [], 'native: float nodes other than integer shape plumbing');
  });
}

test('mobilenetv2-12-int8: its Shape reads the quantized feature map, so no DequantizeLinear runs only for dims', async () => {
  const model = await load(path.join(INT8_MODELS, 'mobilenetv2-12-int8', 'model.onnx'));
  try {
    const g = model.graph();
    const shapes = g.nodes.filter((n) => n.op === 'Shape');
    assert.equal(shapes.length, 1);
    assert.equal(g.tensors[shapes[0].inputs[0]].dtype, 'uint8', 'Shape reads the codes, not floats');
    const dequantize = g.nodes.filter((n) => n.op === 'DequantizeLinear');
    assert.deepEqual(dequantize.map((n) => g.tensors[n.outputs[0]].kind), ['output'], 'only the graph output is dequantized');
    const fold = g.passes.find((p) => p.name === 'fold_constants');
    assert.equal(fold.stats.shape_reads_rewired, 1);
  } finally {
    model.dispose();
  }
});
