// The README's main job (scripts/demo.sh runs demo/run.mjs once the wasm
// builds exist): the float model and the int8 model quantized in wasm both
// recognise the ten bundled digits, agree on every one, and no node of the
// int8 model runs in float.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { REPO } from './helpers.mjs';

test('demo: float and wasmq-quantized int8 mnist-8 recognise the 10 digits alike', () => {
  const r = spawnSync(process.execPath, [path.join(REPO, 'demo/run.mjs')], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /^float32 10\/10 recognised/m);
  assert.match(r.stdout, /^int8 {4}10\/10 recognised.*same prediction as float32 on 10\/10$/m);
  assert.match(r.stdout, /partition: int8: \d+ of \d+ nodes in 1 region;.* float: 0 nodes/);
  assert.match(r.stdout, /quantized 9 of 9 compute nodes .*0 float/);
});
