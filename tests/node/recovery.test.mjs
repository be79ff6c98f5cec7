// Recovery from a wasm trap: the call in which the core traps throws
// WasmqError WQ_ERR_INTERNAL, models loaded on that core then report
// WQ_ERR_DISPOSED saying why, and the next load() transparently starts a
// fresh core on which a good model loads and runs with the right result.
// The trap comes from a test-only hook (armTrapForTest: the next call into
// the core traps first, exactly as a kernel fault would), unreachable
// through the package's exports. Both builds: single-threaded and threaded.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { readFileSync } from 'node:fs';
import { load, WasmqError } from '../../src/js/index.mjs';
import { armTrapForTest } from '../../src/js/core.mjs';
import { randomArray } from '../../src/js/random.mjs';
import { MODELS } from './helpers.mjs';

const MNIST = readFileSync(path.join(MODELS, 'mnist-8/model.onnx'));
const feed = { Input3: { data: randomArray('float32', 784, 3), dims: [1, 1, 28, 28] } };
const TRAP_KINDS = { unreachable: 0, abort: 1, 'out-of-bounds read': 2 };

const isInternal = (err) => {
  assert.ok(err instanceof WasmqError, `not a WasmqError: ${err}`);
  assert.equal(err.code, 'WQ_ERR_INTERNAL', err.message);
  assert.match(err.message, /trapped/);
  return true;
};

async function reference(threads) {
  const m = await load(MNIST, { threads });
  const out = Array.from(Object.values(await m.run(feed))[0].data);
  m.dispose();
  return out;
}

for (const threads of [1, 2]) {
  for (const [kind, code] of Object.entries(TRAP_KINDS)) {
    test(`threads ${threads}: a trap (${kind}) in run() -> WQ_ERR_INTERNAL, then a fresh core runs`, async () => {
      const want = await reference(threads);
      const victim = await load(MNIST, { threads });
      const bystander = await load(MNIST, { threads });
      armTrapForTest(code);
      await assert.rejects(victim.run(feed), isInternal);
      // Every model on the trapped core says why it cannot run.
      for (const m of [victim, bystander]) {
        assert.throws(
          () => m.describe(),
          (err) => err.code === 'WQ_ERR_DISPOSED' && /trapped/.test(err.message),
        );
        await assert.rejects(m.run(feed), (err) => err.code === 'WQ_ERR_DISPOSED' && /load the model again/.test(err.message));
        m.dispose(); // nothing to free on the dead core; must not throw
      }
      const fresh = await load(MNIST, { threads });
      assert.equal(fresh.info.threads, threads);
      assert.deepEqual(Array.from(Object.values(await fresh.run(feed))[0].data), want);
      fresh.dispose();
    });
  }

  test(`threads ${threads}: a trap inside load() -> WQ_ERR_INTERNAL, the next load() works`, async () => {
    const want = await reference(threads);
    armTrapForTest(2);
    await assert.rejects(load(MNIST, { threads }), isInternal);
    const m = await load(MNIST, { threads });
    assert.deepEqual(Array.from(Object.values(await m.run(feed))[0].data), want);
    m.dispose();
  });
}

test('a trap on the threaded core leaves single-threaded models running', async () => {
  const single = await load(MNIST, { threads: 1 }); // one thread even when the suite runs with 2 (with-threads.mjs)
  const want = Array.from(Object.values(await single.run(feed))[0].data);
  const threaded = await load(MNIST, { threads: 2 });
  armTrapForTest(0);
  await assert.rejects(threaded.run(feed), isInternal);
  assert.deepEqual(Array.from(Object.values(await single.run(feed))[0].data), want);
  single.dispose();
  threaded.dispose();
});

test('the trap hook is not part of the package API', async () => {
  const api = await import('../../src/js/index.mjs');
  assert.equal(api.armTrapForTest, undefined);
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url)));
  assert.ok(!Object.keys(pkg.exports).some((k) => k.includes('core')), 'core.mjs must not be exported');
});
