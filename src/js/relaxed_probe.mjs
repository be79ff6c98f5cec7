// Whether this engine runs the relaxed-SIMD int8 kernels exactly.
//
// The relaxed build's GEMM (src/core/kernels/simd/qgemm_usdot.h) relies on
// one reading of i32x4.relaxed_dot_i8x16_i7x16_add_s(w, u, acc): w signed,
// u UNSIGNED 0..255, the four products of a lane summed exactly (no 16-bit
// saturation) and added to acc. The instruction leaves u >= 128 to the
// engine, and engines differ: x86 with VNNI (V8's vpdpbusd) matches; x86
// without VNNI saturates pair sums to int16 (pmaddubsw); ARM's sdot reads u
// as signed; Node 20 with its flag dropped the accumulator in its baseline
// tier. Validating the opcode says nothing about which one runs, so the
// probe EXECUTES a tiny module on known answers, covering exactly those
// differences, and reports what it saw.

// (module (func (export "d") (param i32 i32 i32) (result i32)
//   (i32x4.extract_lane 0 (i32x4.relaxed_dot_i8x16_i7x16_add_s
//     (i32x4.splat (local.get 0)) (i32x4.splat (local.get 1)) (i32x4.splat (local.get 2))))))
// The operands come in as i32 byte patterns (each lane repeats them), so
// nothing is folded at compile time.
const PROBE_MODULE = new Uint8Array([
  0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // magic, version
  0x01, 0x08, 0x01, 0x60, 0x03, 0x7f, 0x7f, 0x7f, 0x01, 0x7f, // type: (i32 i32 i32) -> i32
  0x03, 0x02, 0x01, 0x00, // one function of type 0
  0x07, 0x05, 0x01, 0x01, 0x64, 0x00, 0x00, // export "d"
  0x0a, 0x16, 0x01, 0x14, 0x00, // code: one body of 20 bytes, no locals
  0x20, 0x00, 0xfd, 0x11, 0x20, 0x01, 0xfd, 0x11, 0x20, 0x02, 0xfd, 0x11, // three i32x4.splat
  0xfd, 0x93, 0x02, // i32x4.relaxed_dot_i8x16_i7x16_add_s
  0xfd, 0x1b, 0x00, // i32x4.extract_lane 0
  0x0b,
]);

/** Four signed bytes as the little-endian i32 pattern a lane holds. */
function bytes4(b0, b1, b2, b3) {
  return (b0 & 0xff) | ((b1 & 0xff) << 8) | ((b2 & 0xff) << 16) | ((b3 & 0xff) << 24);
}

// [w bytes, u bytes (unsigned), accumulator]: the expected lane is
// acc + sum w[i] * u[i], exactly.
const CASES = [
  // Every pair sum past int16 (-65,280 each): saturation gives -65,536 + acc.
  [[-128, -128, -128, -128], [255, 255, 255, 255], 7],
  [[127, 127, 127, 127], [255, 255, 255, 255], -3],
  // Mixed signs and magnitudes within a lane, u >= 128 read as unsigned.
  [[-128, 127, -1, 5], [255, 128, 200, 0], 1000],
  [[3, -7, 64, -64], [1, 2, 129, 127], -123456789],
  // In-range operands, the defined part: must hold everywhere.
  [[-2, 3, -4, 5], [6, 7, 8, 9], 11],
];

function expected([w, u, acc]) {
  let sum = acc;
  for (let i = 0; i < 4; i++) sum += w[i] * u[i];
  return sum | 0;
}

// Names for the answers of known wrong engines (lane values of case 0).
function diagnose(got) {
  const [w, u, acc] = CASES[0];
  if (got[0] === -65536 + acc) return 'the engine saturates pair sums to int16 (x86 without VNNI, or an older V8)';
  if (got[0] === 4 * (w[0] * (u[0] << 24 >> 24)) + acc) return 'the engine reads the second operand as signed (sdot)';
  if (got[0] === expected(CASES[0]) - acc) return 'the engine drops the accumulator';
  return 'the engine computes other values';
}

let cached = null;

/**
 * Runs the probe once per realm. Returns {ok, reason, answers}: ok when
 * every case matched; reason says why not (no relaxed SIMD, or which
 * semantics the engine showed); answers lists [got, expected] per case.
 */
export function probeRelaxed() {
  if (cached) return cached;
  let run;
  try {
    run = new WebAssembly.Instance(new WebAssembly.Module(PROBE_MODULE)).exports.d;
  } catch (e) {
    cached = { ok: false, reason: `no relaxed SIMD in this engine (${e.message})`, answers: [] };
    return cached;
  }
  const answers = CASES.map((c) => [run(bytes4(...c[0]), bytes4(...c[1]), c[2]), expected(c)]);
  const ok = answers.every(([got, want]) => got === want);
  const shown = answers.map(([got, want]) => (got === want ? `${got}` : `${got} (want ${want})`)).join(', ');
  cached = {
    ok,
    reason: ok ? 'exact unsigned dot-add' : `${diagnose(answers.map((a) => a[0]))}: ${shown}`,
    answers,
  };
  return cached;
}

/**
 * Test only (not reachable through the package's exports): the answer
 * probeRelaxed() gives from now on ({ok, reason, answers}; null probes
 * again). Lets the tests run the usdot-emulated build (build.sh --relaxed
 * with WQ_USDOT_EMULATE=1) through load() on engines that fail the probe.
 */
export function setProbeForTest(answer) {
  cached = answer;
}
