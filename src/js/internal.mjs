// 'wasmq/internal': the package's tooling and test entry points, not its
// API (they may change without notice): the shared wasm core itself,
// dropping it, and one ONNX conformance case judged by the core (what
// `wasmq check` and the conformance runner use).
import { WasmqError } from './errors.mjs';
import { getCore, resetCore, guardCore } from './core.mjs';
import { allocBytes, allocInt32, readString } from './bridge.mjs';
import { asBytes } from './source.mjs';

export { getCore, resetCore };

const CASE_RESULTS = ['PASS', 'FAIL', 'SKIP'];

/**
 * Runs one ONNX conformance data set in the core (wq_case_check): model
 * bytes plus serialized TensorProto inputs and expected outputs. Returns
 * {result: 'PASS'|'FAIL'|'SKIP', reason}. Used by the conformance runner.
 */
export async function checkCase(modelBytes, inputs, outputs) {
  const core = await getCore();
  return guardCore(core, 'checkCase', () => checkCaseOnCore(core, modelBytes, inputs, outputs));
}

function checkCaseOnCore(core, modelBytes, inputs, outputs) {
  const ctx = core._wqx_ctx_new();
  if (!ctx) throw new WasmqError('out of wasm memory', { code: 'WQ_ERR_OUT_OF_MEMORY' });
  const allocations = [];
  try {
    const put = (b) => {
      const p = allocBytes(core, b);
      allocations.push(p);
      return p;
    };
    const putInt32 = (values) => {
      const p = allocInt32(core, values);
      allocations.push(p);
      return p;
    };
    // Lengths as copied (asBytes reads them from the arrays' internal slots).
    const bytesOf = (b) => asBytes(b, 'checkCase') ?? new Uint8Array(0);
    const model = bytesOf(modelBytes);
    const ins = inputs.map(bytesOf);
    const outs = outputs.map(bytesOf);
    const modelPtr = put(model);
    const inPtrs = putInt32(ins.map(put));
    const inLens = putInt32(ins.map((b) => b.byteLength));
    const outPtrs = putInt32(outs.map(put));
    const outLens = putInt32(outs.map((b) => b.byteLength));
    const r = core._wqx_case_check(ctx, modelPtr, model.byteLength, inPtrs, inLens, ins.length, outPtrs, outLens, outs.length);
    return { result: CASE_RESULTS[r] ?? 'FAIL', reason: readString(core, core._wqx_case_report(ctx)) };
  } finally {
    for (const p of allocations) core._wqx_free(p);
    core._wqx_ctx_free(ctx);
  }
}
