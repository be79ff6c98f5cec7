#!/usr/bin/env node
// ONNX conformance runner for both targets.
//
//   node tests/conformance/run.mjs --target native|wasm [--dir DIR] [--filter TEXT] [--timeout SEC]
//   npm run conformance -- --target wasm
//
// Every subfolder of DIR (default: ../shared/onnx-node-tests next to the repo,
// or $WQ_SHARED_DIR/onnx-node-tests) holding model.onnx and test_data_set_*
// folders is one case. Each data set is judged by the C core's
// wq_case_check, so both targets compare identically:
//   native: spawns `$WQ_NATIVE_BUILD/wasmq check CASE_DIR` (default build/),
//           which prints `PASS|FAIL|SKIP <reason>` per data set;
//   wasm:   reads the files and calls the exported case check in-process.
// Prints one line per case (PASS name / FAIL name: reason / SKIP name:
// reason), then `N passed, N failed, N skipped`; exits 1 on any failure.

import { readdir, readFile, stat } from 'node:fs/promises';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

function parseArgs(argv) {
  const opts = {
    target: null,
    dir: process.env.WQ_SHARED_DIR
      ? path.join(process.env.WQ_SHARED_DIR, 'onnx-node-tests')
      : path.resolve(REPO, '../shared/onnx-node-tests'),
    filter: null,
    timeoutSec: 120,
  };
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = argv[i].split(/=(.*)/s, 2);
    const value = () => {
      if (inline !== undefined) return inline;
      if (i + 1 >= argv.length) usage(`${flag} needs a value`);
      return argv[++i];
    };
    if (flag === '--target') opts.target = value();
    else if (flag === '--dir') opts.dir = path.resolve(value());
    else if (flag === '--filter') opts.filter = value();
    else if (flag === '--timeout') opts.timeoutSec = Number(value());
    else usage(`unknown option ${argv[i]}`);
  }
  if (opts.target !== 'native' && opts.target !== 'wasm') usage('--target must be native or wasm');
  if (!(opts.timeoutSec > 0)) usage('--timeout must be a positive number of seconds');
  return opts;
}

function usage(message) {
  console.error(`run.mjs: ${message}`);
  console.error('usage: node tests/conformance/run.mjs --target native|wasm [--dir DIR] [--filter TEXT] [--timeout SEC]');
  process.exit(2);
}

async function isFile(p) {
  try {
    return (await stat(p)).isFile();
  } catch {
    return false;
  }
}

/** [{name, dir, sets: ['test_data_set_0', ...]}] sorted by name. */
async function findCases(root) {
  const cases = [];
  for (const entry of (await readdir(root, { withFileTypes: true })).sort((a, b) => (a.name < b.name ? -1 : 1))) {
    if (!entry.isDirectory()) continue;
    const dir = path.join(root, entry.name);
    if (!(await isFile(path.join(dir, 'model.onnx')))) continue;
    const sets = (await readdir(dir, { withFileTypes: true }))
      .filter((e) => e.isDirectory() && e.name.startsWith('test_data_set_'))
      .map((e) => e.name)
      .sort((a, b) => Number(a.slice(14)) - Number(b.slice(14)) || (a < b ? -1 : 1));
    if (sets.length > 0) cases.push({ name: entry.name, dir, sets });
  }
  return cases;
}

async function readNumbered(dir, prefix) {
  const files = [];
  for (let n = 0; ; n++) {
    try {
      files.push(await readFile(path.join(dir, `${prefix}_${n}.pb`)));
    } catch (e) {
      if (e.code === 'ENOENT') return files;
      throw e;
    }
  }
}

// --- targets: each returns [{result, reason}] with one entry per data set ---

function nativeRunner(timeoutSec) {
  const buildDir = path.resolve(REPO, process.env.WQ_NATIVE_BUILD ?? 'build');
  const exe = path.join(buildDir, 'wasmq');
  return async (c) => {
    const { code, signal, stdout, stderr, timedOut } = await spawnCollect(exe, ['check', c.dir], timeoutSec * 1000);
    if (timedOut) return [{ result: 'FAIL', reason: `timed out after ${timeoutSec}s` }];
    const lines = stdout.split('\n').filter((l) => /^(PASS|FAIL|SKIP)\b/.test(l));
    const results = lines.map((l) => {
      const m = /^(PASS|FAIL|SKIP)\s*(.*)$/.exec(l);
      return { result: m[1], reason: m[2] };
    });
    if (signal) {
      return [...results, { result: 'FAIL', reason: `wasmq check crashed (${signal}): ${lastLine(stderr)}` }];
    }
    if (results.length === 0) {
      return [{ result: 'FAIL', reason: `wasmq check printed no result (exit ${code}): ${lastLine(stderr || stdout)}` }];
    }
    if (code !== 0 && !results.some((r) => r.result === 'FAIL')) {
      results.push({ result: 'FAIL', reason: `wasmq check exited ${code}: ${lastLine(stderr)}` });
    }
    return results;
  };
}

function lastLine(text) {
  const lines = text.trim().split('\n');
  return lines[lines.length - 1] || '(no output)';
}

function spawnCollect(exe, args, timeoutMs) {
  return new Promise((resolve) => {
    const child = spawn(exe, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.on('error', (e) => {
      clearTimeout(timer);
      resolve({ code: -1, signal: null, stdout, stderr: `cannot start ${exe}: ${e.message}`, timedOut });
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr, timedOut });
    });
  });
}

async function wasmRunner() {
  const api = await import('../../src/js/internal.mjs');
  await api.getCore(); // fail early, once, if the wasm is not built
  return async (c) => {
    const model = await readFile(path.join(c.dir, 'model.onnx'));
    const results = [];
    for (const set of c.sets) {
      const inputs = await readNumbered(path.join(c.dir, set), 'input');
      const outputs = await readNumbered(path.join(c.dir, set), 'output');
      try {
        results.push(await api.checkCase(model, inputs, outputs));
      } catch (e) {
        // A trap (abort, out-of-bounds access) can leave the C heap
        // inconsistent: continue on a fresh instance.
        api.resetCore();
        results.push({ result: 'FAIL', reason: `wasm trap: ${e?.message ?? e}` });
      }
    }
    return results;
  };
}

/** Folds per-data-set results into one case verdict. */
function verdict(c, results) {
  const label = (i) => (c.sets.length > 1 ? `${c.sets[i]}: ` : '');
  const firstOf = (kind) => results.findIndex((r) => r.result === kind);
  const failed = firstOf('FAIL');
  if (failed >= 0) return { result: 'FAIL', reason: label(failed) + (results[failed].reason || 'failed') };
  if (results.length < c.sets.length) {
    return { result: 'FAIL', reason: `${results.length} results for ${c.sets.length} data sets` };
  }
  const skipped = firstOf('SKIP');
  if (skipped >= 0) return { result: 'SKIP', reason: label(skipped) + (results[skipped].reason || 'skipped') };
  return { result: 'PASS', reason: '' };
}

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  let cases;
  try {
    cases = await findCases(opts.dir);
  } catch (e) {
    console.error(`run.mjs: cannot read ${opts.dir}: ${e.message}`);
    process.exit(2);
  }
  if (opts.filter) cases = cases.filter((c) => c.name.includes(opts.filter));
  let runCase;
  try {
    if (opts.target === 'native') {
      const exe = path.resolve(REPO, process.env.WQ_NATIVE_BUILD ?? 'build', 'wasmq');
      if (!(await isFile(exe))) throw new Error(`${exe} not found (npm run build:native, or set WQ_NATIVE_BUILD)`);
    }
    runCase = opts.target === 'native' ? nativeRunner(opts.timeoutSec) : await wasmRunner();
  } catch (e) {
    console.error(`run.mjs: ${e.message}`);
    process.exit(2);
  }
  const counts = { PASS: 0, FAIL: 0, SKIP: 0 };
  for (const c of cases) {
    const v = verdict(c, await runCase(c));
    counts[v.result]++;
    console.log(v.result === 'PASS' ? `PASS ${c.name}` : `${v.result} ${c.name}: ${v.reason}`);
  }
  console.log(`${counts.PASS} passed, ${counts.FAIL} failed, ${counts.SKIP} skipped`);
  process.exitCode = counts.FAIL > 0 ? 1 : 0;
}

await main();
