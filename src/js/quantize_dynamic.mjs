// Dynamic quantization in the wasm quantizer core (src/core/quant/dynamic.h):
//
//   const { onnx, summary } = await quantizeDynamic(modelBytes, { perTensor: false, uint8Weights: false });
//
// onnxruntime's quantize_dynamic form: MatMul/Gemm weights int8 (per column
// by default), activations quantized at run time; no calibration samples.

import { WasmqError, readOptions, wasmqErrors } from './errors.mjs';
import { getQuantCore, guardCore } from './core.mjs';
import { allocBytes, heap32, heapU8, errorFromCtx } from './bridge.mjs';
import { readModelSource, maxModelBytesOption } from './source.mjs';

/**
 * Writes a float ONNX model (bytes, a path in Node, or a URL) in the dynamic
 * int8 form. options.perTensor: one weight scale per matrix (default: per
 * output column); options.uint8Weights: uint8 affine weights (default: int8
 * symmetric). Resolves to {onnx: Uint8Array, summary: string}. Fails
 * (WasmqError) for a model already quantized, with no MatMul/Gemm on a
 * constant weight, or below opset 11.
 */
export async function quantizeDynamic(source, options = {}) {
  return wasmqErrors('quantizeDynamic', async () => {
    const o = readOptions(options, 'quantizeDynamic');
    for (const k of ['perTensor', 'uint8Weights']) {
      if (o[k] !== undefined && typeof o[k] !== 'boolean') throw new WasmqError(`quantizeDynamic: ${k} must be a boolean`);
    }
    const bytes = await readModelSource(source, maxModelBytesOption(o, 'quantizeDynamic'), 'quantizeDynamic');
    const core = await getQuantCore();
    return guardCore(core, 'quantizeDynamic', () => {
      const ctx = core._wqx_ctx_new();
      if (!ctx) throw new WasmqError('out of wasm memory', { code: 'WQ_ERR_OUT_OF_MEMORY' });
      const SUMMARY = 160;
      let model = 0, out = 0;
      const scratch = core._wqx_malloc(8 + SUMMARY); // length, then the summary text
      try {
        if (!scratch) throw new WasmqError('out of wasm memory', { code: 'WQ_ERR_OUT_OF_MEMORY' });
        model = allocBytes(core, bytes);
        out = core._wqx_quantize_dynamic(ctx, model, bytes.byteLength, (o.perTensor ? 1 : 0) | (o.uint8Weights ? 2 : 0), scratch, scratch + 8, SUMMARY);
        if (!out) throw errorFromCtx(core, ctx);
        const len = heap32(core)[scratch >> 2];
        return { onnx: heapU8(core).slice(out, out + len), summary: core.UTF8ToString(scratch + 8) };
      } finally {
        for (const p of [model, out, scratch]) if (p) core._wqx_free(p);
        core._wqx_ctx_free(ctx);
      }
    });
  });
}
