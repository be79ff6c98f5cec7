// Source rules of the kernel layer (src/core/kernels/config.h): only the
// kernels choose between instruction sets, and the kernel folders depend on
// each other in one direction (common/ types below the variants in ref/ and
// simd/, the selection and dispatch in kernels/ above them).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cSources as sources } from './helpers.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const KERNELS = join(ROOT, 'src/core/kernels');

// The first cycle of a directed graph (Map node -> Set of nodes) as a path
// [a, b, ..., a], or null.
export function findCycle(graph) {
  const state = new Map(); // 1 on the stack, 2 done
  const stack = [];
  const visit = (n) => {
    state.set(n, 1);
    stack.push(n);
    for (const m of graph.get(n) ?? []) {
      if (state.get(m) === 1) return [...stack.slice(stack.indexOf(m)), m];
      if (!state.has(m)) {
        const c = visit(m);
        if (c) return c;
      }
    }
    stack.pop();
    state.set(n, 2);
    return null;
  };
  for (const n of [...graph.keys()].sort()) {
    if (state.has(n)) continue;
    const c = visit(n);
    if (c) return c;
  }
  return null;
}

// Every quoted #include of a kernel file that resolves inside
// src/core/kernels: [from, to] as paths relative to it.
function kernelIncludes() {
  const edges = [];
  for (const file of sources(KERNELS)) {
    for (const m of readFileSync(file, 'utf8').matchAll(/^\s*#\s*include\s+"([^"]+)"/gm)) {
      const target = resolve(dirname(file), m[1]);
      if (target.startsWith(KERNELS + '/')) edges.push([relative(KERNELS, file), relative(KERNELS, target)]);
    }
  }
  return edges;
}

const folderOf = (p) => (dirname(p) === '.' ? 'kernels' : `kernels/${dirname(p)}`);

test('the cycle finder finds cycles (and none where there is none)', () => {
  assert.deepEqual(findCycle(new Map([['a', new Set(['b'])], ['b', new Set(['c'])], ['c', new Set(['a'])]])), ['a', 'b', 'c', 'a']);
  assert.equal(findCycle(new Map([['a', new Set(['b', 'c'])], ['b', new Set(['c'])], ['c', new Set()]])), null);
});

test('no __wasm_simd128__ test outside src/core/kernels/', () => {
  const found = [];
  for (const file of sources(join(ROOT, 'src'))) {
    if (file.startsWith(KERNELS + '/')) continue;
    readFileSync(file, 'utf8').split('\n').forEach((line, i) => {
      if (line.includes('__wasm_simd128__')) found.push(`${relative(ROOT, file)}:${i + 1}`);
    });
  }
  assert.deepEqual(found, [], 'ops, passes and the API choose kernels through kernels/config.h only');
});

test('no include cycle among the kernel folders, nor among kernel files', () => {
  const edges = kernelIncludes();
  assert.ok(edges.length > 50, `only ${edges.length} includes found: the scan is broken`);
  const folders = new Map();
  const files = new Map();
  for (const [from, to] of edges) {
    if (!files.has(from)) files.set(from, new Set());
    files.get(from).add(to);
    const a = folderOf(from), b = folderOf(to);
    if (a === b) continue;
    if (!folders.has(a)) folders.set(a, new Set());
    folders.get(a).add(b);
  }
  const folderCycle = findCycle(folders);
  const why = folderCycle &&
    folderCycle.slice(1).map((b, i) => {
      const a = folderCycle[i];
      const e = edges.find(([f, t]) => folderOf(f) === a && folderOf(t) === b);
      return `${a} -> ${b} (${e[0]} includes ${e[1]})`;
    }).join('; ');
  assert.equal(folderCycle, null, `folder cycle: ${why}`);
  assert.equal(findCycle(files), null, 'file include cycle');
  // The shared types are a leaf: nothing below them among the kernels.
  assert.deepEqual([...(folders.get('kernels/common') ?? [])], []);
});
