// The JS API fuzzer (tests/fuzz/fuzz_js.mjs), a short deterministic run:
// fixed seeds, a fixed number of calls, so every run tries the same calls.
// Long campaigns: tests/fuzz/README.md.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fuzzJs } from '../fuzz/fuzz_js.mjs';

test('fuzz_js: 2 seeds x 2,000 calls, every call exact or a WasmqError, no secret leaked', async () => {
  for (const seed of [1, 2]) {
    const r = await fuzzJs({ seed, runs: 2000 });
    assert.deepEqual(r.findings, [], `seed ${seed}`);
    assert.ok(r.executions >= 2000);
    // Both outcomes were exercised: hostile calls refused, honest ones run.
    assert.ok(r.rejected > 400 && r.rejected < r.executions - 400, `${r.rejected} of ${r.executions} rejected`);
  }
});
