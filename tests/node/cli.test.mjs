// The `wasmq` CLI (src/js/cli.mjs): info, run with .npy in/out and seeded
// random inputs, check, and one-line errors with exit code 2 for usage errors.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import os from 'node:os';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync, rmSync, existsSync } from 'node:fs';
import { parseNpy, encodeNpy } from '../../src/js/npy.mjs';
import { formatG, formatResultLine, safeFileName } from '../../src/js/cli.mjs';
import { mulberry32, randomArray } from '../../src/js/random.mjs';
import { CLI, MODELS, NATIVE_CLI, SHARED, readDataSet, compareClose } from './helpers.mjs';

const MNIST_DIR = path.join(MODELS, 'mnist-8');
const MNIST = path.join(MNIST_DIR, 'model.onnx');

function wasmq(...args) {
  const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8' });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** A usage or model error: one stderr line (plus usage text), no stack trace. */
function assertOneLineError(r, code, pattern) {
  assert.equal(r.code, code, `exit code (stderr: ${r.stderr})`);
  const first = r.stderr.split('\n')[0];
  assert.match(first, /^wasmq: /);
  assert.match(first, pattern);
  assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack trace');
  assert.equal(r.stdout, '');
}

const tmp = mkdtempSync(path.join(os.tmpdir(), 'wasmq-cli-'));
process.on('exit', () => rmSync(tmp, { recursive: true, force: true }));

test('formatG matches C printf("%.6g")', () => {
  // Expected strings are what glibc prints for these doubles.
  const cases = [
    [0, '0'], [-0, '-0'], [1, '1'], [-2.5, '-2.5'], [0.1, '0.1'], [100000, '100000'], [123456, '123456'],
    [1234567, '1.23457e+06'], [0.0001, '0.0001'], [0.00001234, '1.234e-05'], [3.14159265, '3.14159'],
    [6574.568359375, '6574.57'], [-1e-30, '-1e-30'], [1e100, '1e+100'], [999999.5, '1e+06'],
    [0.000999999, '0.000999999'], [NaN, 'nan'], [Infinity, 'inf'], [-Infinity, '-inf'],
  ];
  for (const [x, want] of cases) assert.equal(formatG(x), want, `formatG(${x})`);
});

test('result line format and output file names', () => {
  assert.equal(
    formatResultLine('y', { dtype: 'float32', dims: [1, 8], data: new Float32Array([0.5, -1, 2, 3, 0, 7, 7, 1]) }),
    'y float32 [1,8] [0.5 -1 2 3 0 7 ...] argmax=5',
  );
  assert.equal(formatResultLine('z', { dtype: 'int64', dims: [2], data: new BigInt64Array([3n, -4n]) }), 'z int64 [2] [3 -4] argmax=0');
  assert.equal(formatResultLine('s', { dtype: 'float32', dims: [], data: new Float32Array([1.25]) }), 's float32 [] [1.25] argmax=0');
  assert.equal(formatResultLine('e', { dtype: 'uint8', dims: [0, 3], data: new Uint8Array(0) }), 'e uint8 [0,3] []');
  assert.equal(safeFileName('/model/conv:0\\x'), '_model_conv_0_x');
});

test('seeded random inputs follow the documented mulberry32 recipe', () => {
  const next = mulberry32(0);
  // First draws of mulberry32(0), computed independently with 32-bit C arithmetic.
  const draws = [next(), next(), next()];
  const reference = (seed, n) => {
    let state = BigInt(seed);
    const out = [];
    const m = (x) => x & 0xffffffffn;
    for (let i = 0; i < n; i++) {
      state = m(state + 0x6d2b79f5n);
      let z = state;
      z = m((z ^ (z >> 15n)) * (z | 1n));
      z ^= m(z + m((z ^ (z >> 7n)) * (z | 61n)));
      out.push(Number(m(z ^ (z >> 14n))));
    }
    return out;
  };
  assert.deepEqual(draws, reference(0, 3));
  const f = randomArray('float32', 1000, 7);
  assert.ok(f.every((v) => v >= 0 && v < 1));
  assert.equal(f[0], (reference(7, 1)[0] >>> 8) / 16777216);
  const i8 = randomArray('int8', 2000, 1);
  assert.equal(Math.min(...i8), -128);
  assert.equal(Math.max(...i8), 127);
  const u8 = randomArray('uint8', 2000, 1);
  assert.deepEqual(Array.from(u8.slice(0, 5)), reference(1, 5).map((r) => r & 0xff));
  assert.deepEqual(Array.from(randomArray('int64', 4, 3)), reference(3, 4).map((r) => BigInt(r % 10)));
  assert.deepEqual(Array.from(randomArray('float32', 50, 9)), Array.from(randomArray('float32', 50, 9)));
});

test('info prints the core description', () => {
  const r = wasmq('info', MNIST);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /Input3/);
  assert.match(r.stdout, /Plus214_Output_0/);
});

test('run: .npy input in, .npy output out, matching the reference', () => {
  const { inputs, outputs } = readDataSet(path.join(MNIST_DIR, 'test_data_set_0'));
  const inFile = path.join(tmp, 'digit.npy');
  writeFileSync(inFile, encodeNpy({ dtype: 'float32', dims: inputs[0].dims, data: inputs[0].data }));
  const outDir = path.join(tmp, 'out0');
  const r = wasmq('run', MNIST, '--input', `Input3=${inFile}`, '--out', outDir);
  assert.equal(r.code, 0, r.stderr);
  const lines = r.stdout.trim().split('\n');
  assert.equal(lines.length, 1);
  assert.match(lines[0], /^Plus214_Output_0 float32 \[1,10\] \[(\S+ ){6}\.\.\.\] argmax=2$/);
  const written = parseNpy(readFileSync(path.join(outDir, 'Plus214_Output_0.npy')));
  assert.equal(written.dtype, 'float32');
  assert.deepEqual(written.dims, [1, 10]);
  const cmp = compareClose(written.data, outputs[0].data, { rtol: 1e-3, atol: 1e-4 });
  assert.ok(cmp.ok, JSON.stringify(cmp.worst));
  // The printed values are the written values.
  const printed = lines[0].match(/\[([^\]]*) \.\.\.\]/)[1].split(' ');
  assert.deepEqual(printed, Array.from(written.data.slice(0, 6), (v) => formatG(v)));
});

test('run: inputs default to random:0 and random runs are deterministic', () => {
  const a = wasmq('run', MNIST);
  const b = wasmq('run', MNIST, '--input', 'Input3=random:0');
  const c = wasmq('run', MNIST, '--input', 'Input3=random:5', '--shape', 'Input3=1x1x28x28');
  assert.equal(a.code, 0, a.stderr);
  assert.equal(a.stdout, b.stdout);
  assert.equal(c.code, 0, c.stderr);
  assert.notEqual(a.stdout, c.stdout);
});

test('check runs one conformance case', () => {
  const caseDir = path.join(SHARED, 'onnx-node-tests', 'test_add');
  if (!existsSync(caseDir)) return;
  const r = wasmq('check', caseDir);
  assert.match(r.stdout, /^(PASS|FAIL|SKIP)/);
  assert.equal(r.code, r.stdout.startsWith('FAIL') ? 1 : 0);
});

test('usage errors exit 2 with one line and no stack trace', () => {
  const badNpy = path.join(tmp, 'bad.npy');
  writeFileSync(badNpy, 'not numpy at all');
  const fortran = path.join(tmp, 'fortran.npy');
  const good = encodeNpy({ dtype: 'float32', dims: [1, 1, 28, 28], data: new Float32Array(784) });
  writeFileSync(fortran, Buffer.from(Buffer.from(good).toString('latin1').replace("'fortran_order': False", "'fortran_order': True "), 'latin1'));
  const bare = wasmq();
  assert.equal(bare.code, 2);
  assert.match(bare.stderr, /^usage:\n  wasmq info MODEL /);
  assertOneLineError(wasmq('frobnicate'), 2, /unknown command frobnicate/);
  assertOneLineError(wasmq('info'), 2, /info expects exactly one MODEL/);
  assertOneLineError(wasmq('info', path.join(tmp, 'missing.onnx')), 2, /cannot read .*missing\.onnx: No such file/);
  assertOneLineError(wasmq('run', MNIST, '--bogus'), 2, /^wasmq: run: unknown or incomplete option --bogus$/);
  assertOneLineError(wasmq('info', '--bogus', MNIST), 2, /^wasmq: info: unknown or incomplete option --bogus$/);
  assertOneLineError(wasmq('run', MNIST, '--input'), 2, /--input expects NAME=FILE.npy or NAME=random:SEED/);
  assertOneLineError(wasmq('run', MNIST, '--input', 'Input3'), 2, /--input expects/);
  assertOneLineError(wasmq('run', MNIST, '--input', 'Input3=random:x'), 2, /seed must be an integer/);
  assertOneLineError(wasmq('run', MNIST, '--shape', 'Input3=1xAx3'), 2, /--shape expects NAME=D0xD1x/);
  assertOneLineError(wasmq('run', MNIST, '--input', 'Nope=random:1'), 2, /the model has no input named Nope/);
  assertOneLineError(wasmq('run', MNIST, '--input', `Input3=${path.join(tmp, 'absent.npy')}`), 2, /cannot read .*absent\.npy/);
  assertOneLineError(wasmq('run', MNIST, '--input', `Input3=${badNpy}`), 2, /bad\.npy: npy: not a \.npy file/);
  assertOneLineError(wasmq('run', MNIST, '--input', `Input3=${fortran}`), 2, /fortran_order=True is not supported/);
});

test('model errors exit 1 with the core error code', () => {
  const garbage = path.join(tmp, 'garbage.onnx');
  writeFileSync(garbage, Buffer.from([0xde, 0xad, 0xbe, 0xef, 0x01]));
  assertOneLineError(wasmq('info', garbage), 1, /garbage\.onnx: .*\[WQ_ERR_PARSE\]$/);
  const wrongShape = path.join(tmp, 'wrong.npy');
  writeFileSync(wrongShape, encodeNpy({ dtype: 'float32', dims: [1, 1, 28, 27], data: new Float32Array(28 * 27) }));
  const r = wasmq('run', MNIST, '--input', `Input3=${wrongShape}`);
  assert.equal(r.code, 1, r.stderr);
  assert.match(r.stderr, /^wasmq: .*\[WQ_ERR_(SHAPE|INVALID_ARG)\]\n$/);
});

test('run --threads N: the same output lines as one thread, in both CLIs; bad counts are usage errors', () => {
  const model = path.join(MODELS, 'synthetic', 'smallcnn_qdq.onnx');
  const one = wasmq('run', model, '--input', 'X=random:9');
  assert.equal(one.code, 0, one.stderr);
  for (const threads of ['2', '3']) {
    const many = wasmq('run', model, '--input', 'X=random:9', '--threads', threads);
    assert.equal(many.code, 0, many.stderr);
    assert.equal(many.stdout, one.stdout, `--threads ${threads}`);
  }
  if (existsSync(NATIVE_CLI)) {
    const native = spawnSync(NATIVE_CLI, ['run', model, '--input', 'X=random:9', '--threads', '2'], { encoding: 'utf8' });
    assert.equal(native.status, 0, native.stderr);
    assert.equal(native.stdout, one.stdout, 'native --threads 2');
  }
  for (const bad of ['0', 'two', '1.5']) assertOneLineError(wasmq('run', model, '--threads', bad), 2, /--threads expects an integer/);
});

// Both CLIs: the npm one and, when built, the native one.
const CLIS = [['npx', (...args) => wasmq(...args)]];
if (existsSync(NATIVE_CLI)) {
  CLIS.push(['native', (...args) => {
    const r = spawnSync(NATIVE_CLI, args, { encoding: 'utf8' });
    return { code: r.status, stdout: r.stdout, stderr: r.stderr };
  }]);
}

test('every subcommand answers --help (and -h) with its usage on stdout, exit 0; both CLIs print the same text', () => {
  const texts = {};
  for (const [which, cli] of CLIS) {
    for (const command of ['info', 'run', 'inspect', 'check', 'quantize', ...(which === 'npx' ? ['render'] : ['rewrite'])]) {
      for (const flag of ['--help', '-h']) {
        // Also after other arguments: a user adds --help to the line that failed.
        const r = cli(command, MNIST, flag);
        assert.equal(r.code, 0, `${which} ${command} ${flag}: ${r.stderr}`);
        assert.match(r.stdout, new RegExp(`^usage:( |\n  )wasmq ${command} `), `${which} ${command} ${flag}`);
        assert.equal(r.stderr, '');
        texts[`${which} ${command}`] = r.stdout;
      }
    }
    const top = cli('--help');
    assert.equal(top.code, 0);
    assert.match(top.stdout, /wasmq COMMAND --help/);
  }
  if (CLIS.length > 1) for (const c of ['info', 'run', 'inspect', 'check', 'quantize']) assert.equal(texts[`native ${c}`], texts[`npx ${c}`], c);
});

test('a file that is no ONNX model says so; output paths are checked before the work; run prints its time on stderr', () => {
  const notes = path.join(tmp, 'notes.onnx');
  writeFileSync(notes, 'these are my notes, not a model\n');
  const empty = path.join(tmp, 'empty.onnx');
  writeFileSync(empty, '');
  for (const [which, cli] of CLIS) {
    assertOneLineError(cli('info', notes), 1, /notes\.onnx: this is not an ONNX model, or it is cut off \(.*\) \[WQ_ERR_PARSE\]$/);
    assertOneLineError(cli('info', empty), 1, /empty\.onnx: this is not an ONNX model \(the file is empty\)/);
    const t0 = Date.now();
    assertOneLineError(cli('quantize', MNIST, '--calib', 'random:1:0..1', '-o', path.join(tmp, 'no-such-folder', 'q.onnx')), 2, /cannot write .*q\.onnx: No such file or directory \(no folder .*no-such-folder\)$/);
    assertOneLineError(cli('quantize', MNIST, '--calib', 'random:1:0..1', '-o', tmp), 2, /cannot write .*: Is a directory$/);
    assertOneLineError(cli('quantize', MNIST, '--calib', 'random:1:0..1', '-o', path.join(tmp, 'q.onnx'), '--report', path.join(tmp, 'nope', 'r.json')), 2, /cannot write .*r\.json: No such file or directory/);
    // Refused before loading or calibrating: no output file appeared.
    assert.ok(!existsSync(path.join(tmp, 'q.onnx')), which);
    console.log(`${which}: output path refused after ${Date.now() - t0} ms for three commands`);
    const run = cli('run', MNIST, '--repeats', '3');
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stderr, /^run: \d+\.\d{3} ms \(median of 3 runs after a warm-up run, wall clock\)\n$/);
    const once = cli('run', MNIST);
    assert.match(once.stderr, /^run: \d+\.\d{3} ms \(one run, wall clock\)\n$/);
    assert.equal(once.stdout, run.stdout);
  }
  assertOneLineError(wasmq('render', MNIST, '-o', path.join(tmp, 'nope', 'g.svg')), 2, /cannot write .*g\.svg: No such file or directory/);
});

test('a step past 2 s prints progress lines on stderr, also when stderr is not a terminal (here a pipe); stdout unchanged', () => {
  const model = path.join(MODELS, 'super-resolution-10', 'model.onnx');
  if (!existsSync(model)) return;
  for (const [which, cli] of CLIS) {
    // 15 runs of a ~180 ms model (more on a loaded machine): past 2 s.
    const r = cli('run', model, '--shape', 'input=1x1x224x224', '--repeats', '15');
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stderr.trim().split('\n');
    const progress = lines.filter((l) => / \(\d+ s\)$/.test(l));
    console.log(`${which}: ${progress.length} progress lines, first: ${progress[0]}`);
    assert.ok(progress.length >= 1, r.stderr);
    for (const l of progress) assert.match(l, /^wasmq: running .*model\.onnx: (warm-up, 0|run \d+) of 15 \((\d+) s\)$/);
    // Every 2 s from 2 s on (a loaded machine may print a line late, never early).
    progress.forEach((l, i) => assert.ok(Number(/\((\d+) s\)$/.exec(l)[1]) >= 2 * (i + 1), l));
    assert.match(lines.at(-1), /^run: [\d.]+ ms \(median of 15 runs after a warm-up run, wall clock\)$/);
    assert.equal(r.stdout.split('\n').filter(Boolean).length, 1);
  }
});

test('--kernels: both CLIs take it; a variant the build lacks is a one-line load error naming what it has', () => {
  const model = path.join(MODELS, 'synthetic', 'smallcnn_qdq.onnx');
  const want = wasmq('run', model, '--input', 'X=random:9', '--kernels', 'simd128');
  assert.equal(want.code, 0, want.stderr);
  assertOneLineError(wasmq('run', model, '--kernels', 'avx'), 2, /--kernels expects auto, simd128 or relaxed, got avx/);
  if (!existsSync(NATIVE_CLI)) return;
  const native = (...args) => {
    const r = spawnSync(NATIVE_CLI, args, { encoding: 'utf8' });
    return { code: r.status, stdout: r.stdout, stderr: r.stderr.split('\n').filter((l) => !/^run: /.test(l)).join('\n') };
  };
  const ref = native('run', model, '--input', 'X=random:9', '--kernels', 'reference');
  assert.equal(ref.code, 0, ref.stderr);
  assert.equal(ref.stdout, want.stdout, 'the reference kernels give the SIMD128 bytes');
  for (const isa of ['simd128', 'relaxed']) {
    assertOneLineError(native('run', model, '--input', 'X=random:9', '--kernels', isa), 1,
      new RegExp(`kernels '${isa}': this build has no such variant \\(it has ref\\) \\[WQ_ERR_UNSUPPORTED\\]$`));
  }
  assertOneLineError(native('info', model, '--kernels', 'avx'), 2, /--kernels expects auto, reference, simd128 or relaxed, got avx/);
});
