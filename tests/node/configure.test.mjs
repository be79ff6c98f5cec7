// configure() calls add up: each sets only the options it names, and a
// rejected call changes nothing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { configure } from '../../src/js/index.mjs';
import { configuredThreads } from '../../src/js/core.mjs';

test('configure merges options across calls', () => {
  configure({ threads: 3 });
  configure({ threadPoolSize: 2 });
  assert.equal(configuredThreads(), 3);
  assert.throws(() => configure({ threads: 0, threadPoolSize: 4 }), /threads must be an integer >= 1/);
  assert.equal(configuredThreads(), 3);
  configure({ threads: 1 });
  assert.equal(configuredThreads(), 1);
});
