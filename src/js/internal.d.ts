// Types for 'wasmq/internal' (src/js/internal.mjs): tooling and test entry
// points, not the package's API.

/** One ONNX conformance data set judged by the core. */
export function checkCase(
  model: Uint8Array,
  inputs: Uint8Array[],
  outputs: Uint8Array[],
): Promise<{ result: 'PASS' | 'FAIL' | 'SKIP'; reason: string }>;

/** The instantiated Emscripten module shared by every model. */
export function getCore(): Promise<unknown>;
/** Drops the shared core so the next use instantiates a fresh one (after a wasm trap). */
export function resetCore(): void;
