// .npy reader/writer: round trips for every dtype, the header forms numpy
// writes (v1/v2/v3, '<' and '|', odd spacing), and clear rejections.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseNpy, encodeNpy, NpyError } from '../../src/js/npy.mjs';

/** Builds a .npy file by hand from a header dict literal and raw data bytes. */
function handmade(dict, dataBytes, { major = 1, minor = 0, align = 64, encoding = 'ascii' } = {}) {
  const prefix = major === 1 ? 10 : 12;
  const headerBody = encoding === 'utf8' ? Buffer.from(dict, 'utf8') : Buffer.from(dict, 'latin1');
  const total = Math.ceil((prefix + headerBody.length + 1) / align) * align;
  const header = Buffer.concat([headerBody, Buffer.alloc(total - prefix - headerBody.length - 1, 0x20), Buffer.from('\n')]);
  const lead = Buffer.alloc(prefix);
  Buffer.from([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, major, minor]).copy(lead);
  if (major === 1) lead.writeUInt16LE(header.length, 8);
  else lead.writeUInt32LE(header.length, 8);
  return new Uint8Array(Buffer.concat([lead, header, Buffer.from(dataBytes)]));
}

const f32bytes = (values) => new Uint8Array(new Float32Array(values).buffer);

test('round trip of every dtype keeps dtype, dims and exact elements', () => {
  const cases = [
    ['float32', [2, 3], new Float32Array([1.5, -2.25, 0, 3.4028234663852886e38, -1e-30, Number.NaN])],
    ['int8', [4], new Int8Array([-128, -1, 0, 127])],
    ['uint8', [2, 2], new Uint8Array([0, 1, 254, 255])],
    ['int16', [3], new Int16Array([-32768, 7, 32767])],
    ['uint16', [1, 2], new Uint16Array([0, 65535])],
    ['int32', [2], new Int32Array([-2147483648, 2147483647])],
    ['uint32', [2], new Uint32Array([0, 4294967295])],
    ['int64', [2], new BigInt64Array([-(2n ** 63n), 2n ** 63n - 1n])],
    ['uint64', [1], new BigUint64Array([2n ** 64n - 1n])],
    ['bool', [3], new Uint8Array([1, 0, 1])],
    ['float32', [], new Float32Array([42])],
    ['float32', [0, 5], new Float32Array(0)],
  ];
  for (const [dtype, dims, data] of cases) {
    const bytes = encodeNpy({ dtype, dims, data });
    assert.equal(bytes[6], 1, 'writes format 1.0');
    const headerLen = bytes[8] | (bytes[9] << 8);
    assert.equal((10 + headerLen) % 64, 0, 'data is 64-byte aligned');
    assert.equal(bytes[10 + headerLen - 1], 0x0a, 'header ends with a newline');
    const back = parseNpy(bytes);
    assert.equal(back.dtype, dtype);
    assert.deepEqual(back.dims, dims);
    assert.equal(back.data.constructor, data.constructor);
    assert.deepEqual(Array.from(back.data), Array.from(data));
  }
});

test('writer emits the header numpy writes', () => {
  const text = (bytes) => Buffer.from(bytes.subarray(10, 10 + (bytes[8] | (bytes[9] << 8)))).toString('latin1').trimEnd();
  assert.equal(text(encodeNpy({ dtype: 'float32', dims: [1, 3], data: new Float32Array(3) })),
    "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 3), }");
  assert.equal(text(encodeNpy({ dtype: 'int8', dims: [5], data: new Int8Array(5) })),
    "{'descr': '|i1', 'fortran_order': False, 'shape': (5,), }");
  assert.equal(text(encodeNpy({ dtype: 'bool', dims: [], data: new Uint8Array(1) })),
    "{'descr': '|b1', 'fortran_order': False, 'shape': (), }");
});

test('reader accepts v1, v2 and v3 headers, 16-byte alignment and loose spacing', () => {
  const data = f32bytes([1, 2, 3, 4]);
  const variants = [
    handmade("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }", data),
    handmade("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }", data, { major: 2 }),
    handmade("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }", data, { major: 3, encoding: 'utf8' }),
    handmade("{'descr':'<f4','fortran_order':False,'shape':(2,2)}", data, { align: 16 }),
    handmade('{"shape": [2, 2], "fortran_order": False, "descr": "<f4"}', data),
    handmade("{'descr': '<f4', 'fortran_order': False, 'shape': (2L, 2L), }", data),
  ];
  for (const bytes of variants) {
    const back = parseNpy(bytes);
    assert.equal(back.dtype, 'float32');
    assert.deepEqual(back.dims, [2, 2]);
    assert.deepEqual(Array.from(back.data), [1, 2, 3, 4]);
  }
  // '|' and '<' are both fine for one-byte types.
  assert.deepEqual(Array.from(parseNpy(handmade("{'descr': '<i1', 'fortran_order': False, 'shape': (2,), }", [0xff, 1])).data), [-1, 1]);
  assert.deepEqual(Array.from(parseNpy(handmade("{'descr': '|u1', 'fortran_order': False, 'shape': (2,), }", [0xff, 1])).data), [255, 1]);
  // Reading from an unaligned view into a bigger buffer still yields a copy.
  const file = handmade("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", f32bytes([7]));
  const big = new Uint8Array(file.length + 3);
  big.set(file, 3);
  const back = parseNpy(big.subarray(3));
  assert.deepEqual(Array.from(back.data), [7]);
  assert.notEqual(back.data.buffer, big.buffer);
  // A Node Buffer from the shared pool (Buffer.slice does not copy).
  const pooled = Buffer.from(encodeNpy({ dtype: 'int16', dims: [3], data: new Int16Array([-5, 0, 9]) }));
  const fromPool = Buffer.concat([Buffer.from('xyz'), pooled]).subarray(3);
  assert.deepEqual(Array.from(parseNpy(fromPool).data), [-5, 0, 9]);
});

test('reader rejects what it cannot represent, naming the problem', () => {
  const reject = (bytes, pattern) => assert.throws(() => parseNpy(bytes), (e) => e instanceof NpyError && pattern.test(e.message));
  const d4 = f32bytes([1, 2, 3, 4]);
  reject(handmade("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 2), }", d4), /fortran_order=True is not supported/);
  reject(handmade("{'descr': '>f4', 'fortran_order': False, 'shape': (2, 2), }", d4), /big-endian dtype '>f4'/);
  reject(handmade("{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }", d4), /unsupported dtype '<f8'/);
  reject(handmade("{'descr': '<f2', 'fortran_order': False, 'shape': (8,), }", d4), /unsupported dtype '<f2'/);
  reject(handmade("{'descr': '|f4', 'fortran_order': False, 'shape': (4,), }", d4), /unsupported dtype '\|f4'/);
  reject(handmade("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (4,), }", d4), /no 'descr' string/);
  reject(handmade("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), }", d4), /needs 24 data bytes, file has 16/);
  reject(handmade("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", d4), /needs 4 data bytes, file has 16/);
  reject(handmade("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", d4), /bad shape/);
  reject(handmade("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), ", d4), /bad header/);
  reject(handmade("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }", d4, { major: 4 }), /unsupported format version 4\.0/);
  reject(new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]), /not a \.npy file/);
  reject(new Uint8Array(0), /not a \.npy file/);
  // Header length pointing past the end of the file.
  const truncated = handmade("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }", []).subarray(0, 40);
  reject(truncated, /header claims \d+ bytes/);
});

test('writer rejects inconsistent arrays', () => {
  assert.throws(() => encodeNpy({ dtype: 'float32', dims: [3], data: new Float32Array(2) }), /need 3 elements, data has 2/);
  assert.throws(() => encodeNpy({ dtype: 'float32', dims: [2], data: new Float64Array(2) }), /must be a Float32Array, got Float64Array/);
  assert.throws(() => encodeNpy({ dtype: 'float64', dims: [2], data: new Float64Array(2) }), /unsupported dtype 'float64'/);
  assert.throws(() => encodeNpy({ dtype: 'int8', dims: [-1], data: new Int8Array(0) }), /bad dims/);
});
