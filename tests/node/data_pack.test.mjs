// The shipped .wasm files carry their read-only data LZ-packed
// (wasm_build/pack_data.mjs) and unpack it in place when the core starts
// (src/core/api/wasm_data_pack.c). The packer checks at build time that its
// stream unpacks in place to the linked bytes, with a JS twin of the C
// loop; these tests check the packer's code on hard inputs and that the C
// loop, in each running core, leaves in memory exactly what that twin does.
import test from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { pack, readModule, unpackInPlace } from '../../wasm_build/pack_data.mjs';
import { getCore, getQuantCore, getThreadedCore } from '../../src/js/core.mjs';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

// Packs data, then unpacks it in place the way the module does: the stream
// at the end of the range (followed by the bytes left as they are).
function roundTrip(data) {
  const { stream, n } = pack(data);
  assert.ok(n <= data.length && stream.length <= n);
  const region = new Uint8Array(data.length);
  region.set(stream, n - stream.length);
  region.set(data.subarray(n), n);
  return { out: unpackInPlace(region, n - stream.length, stream.length), stream, n };
}

test('pack: text, bytes above 0x7f, long runs, far and overlapping matches come back exactly', () => {
  let seed = 7;
  const rand = () => ((seed = (seed * 1103515245 + 12345) >>> 0) >>> 16) & 0xff;
  const words = ['node ', "'%s' ", 'must be ', 'int8 ', '%lld ', 'the ', 'QLinearConv: ', '\0'];
  const text = [];
  for (let i = 0; i < 20000; i++) for (const c of Buffer.from(words[rand() % words.length])) text.push(c);
  const cases = {
    text: Uint8Array.from(text),
    random: Uint8Array.from({ length: 5000 }, rand), // nothing to gain; escapes everywhere
    zeros: new Uint8Array(70000), // one long overlapping run
    // longer than the farthest distance a match can reach (65,536)
    far: Uint8Array.from([...Array.from({ length: 300 }, rand), ...new Uint8Array(70000).map((_, i) => (i * 7) & 0x7f), ...Array.from({ length: 300 }, rand)]),
    high: Uint8Array.from({ length: 4000 }, (_, i) => 0x80 | (i % 5)), // repeats of bytes that need escapes
    short: Uint8Array.from([0xff, 0x00, 0x80]),
  };
  for (const [name, data] of Object.entries(cases)) {
    const { out, stream, n } = roundTrip(data);
    assert.deepEqual(Buffer.from(out), Buffer.from(data), name);
    if (name === 'text' || name === 'zeros') assert.ok(stream.length < n / 3, `${name}: ${n} -> ${stream.length}`);
  }
});

// The data the module's C loop unpacked, compared with the JS twin's result
// on the file's stream; and the descriptor marked as done.
function checkCore(core, file) {
  const bytes = readFileSync(file);
  const { segs, desc } = readModule(bytes);
  const [dst, src, packed, n] = desc.fields;
  assert.notEqual(n, 0xffffffff, `${file} is not packed`);
  const seg = segs[0];
  assert.equal(seg.offset, src, 'the stream is where the first segment starts');
  const region = new Uint8Array(n);
  region.set(seg.bytes.subarray(0, n - (src - dst)), src - dst);
  const want = unpackInPlace(region, src - dst, packed);
  const mem = core.HEAPU8;
  assert.deepEqual(Buffer.from(mem.subarray(dst, dst + n)), Buffer.from(want));
  assert.equal(new DataView(mem.buffer).getUint32(desc.addr + 20, true), 0xffffffff, 'the descriptor is marked unpacked');
  // Text the core formats comes out whole.
  assert.match(Buffer.from(mem.subarray(dst, dst + n)).toString('latin1'), /is not a graph input, an initializer or any node's output/);
}

const BUILDS = [
  ['wasmq.wasm', () => getCore()],
  ['wasmq-quant.wasm', () => getQuantCore()],
  ['mt/wasmq.wasm', () => getThreadedCore(2)],
];
for (const [file, start] of BUILDS) {
  const full = path.join(REPO, 'wasm_build/out', file);
  test(`${file}: the running core holds exactly the unpacked data`, { skip: !existsSync(full) && `${file} is not built` }, async () => {
    checkCore(await start(), full);
  });
}
