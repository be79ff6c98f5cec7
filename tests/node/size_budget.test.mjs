// The shipped .wasm files against their size budgets, in one place: a page
// downloads the runtime before it can run anything, so growth is a cost every
// user pays. The budgets cover the op families the runtime carries today
// (control flow, recurrence with GRU, the int8 activations and bilinear Resize
// included); the quantizer build also carries cross-layer equalization and the
// dynamic int8 lowering. The files are measured as shipped: their read-only
// data (mostly message text) LZ-packed by wasm_build/pack_data.mjs. A change
// that needs more says so here, with its reason.
import test from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

const BUDGETS = [
  // [file under wasm_build/out, budget in bytes, the build command that writes it]
  ['wasmq.wasm', 350000, 'bash wasm_build/build.sh'],
  ['mt/wasmq.wasm', 370000, 'bash wasm_build/build.sh --threads'],
  ['wasmq-quant.wasm', 430000, 'bash wasm_build/build.sh --quant'],
  // The relaxed-SIMD twins: the same code with the int8 GEMM on the relaxed dot.
  ['wasmq-relaxed.wasm', 350000, 'bash wasm_build/build.sh --relaxed'],
  ['mt/wasmq-relaxed.wasm', 370000, 'bash wasm_build/build.sh --relaxed --threads'],
];

for (const [file, budget, build] of BUDGETS) {
  test(`${file} stays within ${budget.toLocaleString('en-US')} bytes`, () => {
    const full = path.join(REPO, 'wasm_build/out', file);
    assert.ok(existsSync(full), `${file} is missing (${build})`);
    const bytes = statSync(full).size;
    assert.ok(bytes <= budget, `${file}: ${bytes} bytes, over its ${budget}-byte budget`);
  });
}
