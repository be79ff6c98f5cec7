// Source rules of the core's layers: the IR, the kernels, the ops and the
// runtime sit below the passes and the API. An op reports what it chose
// (its plan hook's kernel) as data; the pipeline writes the node's decision
// record (src/core/ir/decision.h). So nothing below the passes includes a
// pass, API or CLI header, and only the pipeline and the passes write the
// record.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cSources as sources } from './helpers.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const CORE = join(ROOT, 'src/core');
const LOWER = ['ir', 'kernels', 'ops', 'runtime'];
const UPPER = ['passes', 'api', 'cli'];

const layerOf = (file) => relative(CORE, file).split('/')[0];

// [file, included file] for every quoted #include resolving inside src/core.
export function coreIncludes(files) {
  const edges = [];
  for (const file of files) {
    for (const m of readFileSync(file, 'utf8').matchAll(/^\s*#\s*include\s+"([^"]+)"/gm)) {
      const target = resolve(dirname(file), m[1]);
      if (target.startsWith(CORE + '/')) edges.push([file, target]);
    }
  }
  return edges;
}

test('the layer rule finds an upward include (and the scan sees the tree)', () => {
  const files = LOWER.flatMap((d) => sources(join(CORE, d)));
  const edges = coreIncludes(files);
  assert.ok(edges.length > 100, `only ${edges.length} includes found: the scan is broken`);
  const upward = ([from, to]) => LOWER.includes(layerOf(from)) && UPPER.includes(layerOf(to));
  assert.equal(upward([join(CORE, 'ops/x.c'), join(CORE, 'passes/lower.h')]), true);
  assert.equal(upward([join(CORE, 'passes/x.c'), join(CORE, 'ops/op.h')]), false);
});

test('ir/, kernels/, ops/ and runtime/ include nothing from passes/, api/ or cli/', () => {
  const files = LOWER.flatMap((d) => sources(join(CORE, d)));
  const found = coreIncludes(files)
    .filter(([from, to]) => UPPER.includes(layerOf(to)))
    .map(([from, to]) => `${relative(ROOT, from)} includes ${relative(ROOT, to)}`);
  assert.deepEqual(found, [], 'a plan hook returns its kernel as data (ops/op.h wq_op_kernel)');
});

test('ops and kernels never write a node\'s decision record', () => {
  const found = [];
  for (const file of [...sources(join(CORE, 'ops')), ...sources(join(CORE, 'kernels'))]) {
    readFileSync(file, 'utf8').split('\n').forEach((line, i) => {
      if (/->rec\b|\.rec\./.test(line)) found.push(`${relative(ROOT, file)}:${i + 1}`);
    });
  }
  assert.deepEqual(found, [], 'the pipeline stores what an op returns (api/model.c plan_nodes)');
});
