// Seeded test inputs, identical to the native CLI's (src/core/cli), so
// `--input NAME=random:SEED` feeds the same bytes natively and in wasm.
//
// Generator: mulberry32 (32-bit state, one 32-bit draw per element):
//   state += 0x6D2B79F5; z = state;
//   z = (z ^ z >>> 15) * (z | 1); z ^= z + (z ^ z >>> 7) * (z | 61);
//   return z ^ z >>> 14;
// Element from draw r:
//   float32       (r >>> 8) / 2^24        uniform [0, 1), exact in float32
//   int8 / uint8  low byte of r           full range
//   int16/uint16  low 16 bits of r        full range
//   bool          r & 1
//   int32, uint32, int64, uint64: r % 10  (usually indices or sizes)

import { DTYPES } from './dtypes.mjs';

/** Returns a function yielding successive uint32 draws for `seed`. */
export function mulberry32(seed) {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let z = state;
    z = Math.imul(z ^ (z >>> 15), z | 1);
    z ^= z + Math.imul(z ^ (z >>> 7), z | 61);
    return (z ^ (z >>> 14)) >>> 0;
  };
}

/** A new TypedArray of `count` seeded elements of dtype `name`. */
export function randomArray(name, count, seed) {
  const d = DTYPES[name];
  if (!d) throw new Error(`random: unsupported dtype '${name}'`);
  const next = mulberry32(seed);
  const out = new d.array(count);
  for (let i = 0; i < count; i++) {
    const r = next();
    switch (name) {
      case 'float32': out[i] = (r >>> 8) / 16777216; break;
      case 'int8': case 'uint8': out[i] = r & 0xff; break; // typed array wraps
      case 'int16': case 'uint16': out[i] = r & 0xffff; break;
      case 'bool': out[i] = r & 1; break;
      case 'int64': case 'uint64': out[i] = BigInt(r % 10); break;
      default: out[i] = r % 10; break;
    }
  }
  return out;
}
