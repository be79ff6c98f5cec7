// Types for the wasmq npm package (src/js/index.mjs).

/** Element types the runtime executes. */
export type DType =
  | 'float32'
  | 'int8'
  | 'uint8'
  | 'int16'
  | 'uint16'
  | 'int32'
  | 'int64'
  | 'uint32'
  | 'uint64'
  | 'bool';

/** The TypedArray holding each dtype's elements. */
export interface DTypeArrayMap {
  float32: Float32Array;
  int8: Int8Array;
  uint8: Uint8Array;
  int16: Int16Array;
  uint16: Uint16Array;
  int32: Int32Array;
  int64: BigInt64Array;
  uint32: Uint32Array;
  uint64: BigUint64Array;
  bool: Uint8Array;
}

export type TensorData = DTypeArrayMap[DType] | Uint8ClampedArray;

/** A declared model input or output. */
export interface TensorInfo {
  readonly name: string;
  /** A DType, or the ONNX name of a type the runtime cannot execute ('float16', 'string'...). */
  readonly dtype: DType | string;
  /**
   * Declared dims: numbers where static, the symbolic name ('batch') where
   * symbolic, null where unknown and unnamed; null for an unknown rank.
   */
  readonly shape: ReadonlyArray<number | string | null> | null;
}

/** One input: the elements (row-major) and their dims. */
export interface Feed {
  data: TensorData;
  /** May be omitted when the input's declared shape is fully static. */
  dims?: readonly number[];
}

/**
 * A result tensor. A union over dtypes: checking `dtype` narrows `data` to
 * its TypedArray (`if (t.dtype === 'float32') t.data` is a Float32Array),
 * no cast needed; Tensor<'int8'> names one dtype's tensor.
 */
export type Tensor<D extends DType = DType> = {
  [K in D]: {
    /** A fresh copy, independent of wasm memory. */
    data: DTypeArrayMap[K];
    dims: number[];
    dtype: K;
  };
}[D];

export type PartitionMode = 'int' | 'int+fp' | 'fp';

export interface LoadOptions {
  /** Binds input dims at load (symbolic dims, shape-dependent folding): {name: [1, 3, 224, 224]}. */
  inputShapes?: Record<string, number[]>;
  /** @deprecated The older spelling of `partition: 'fp'` (false); use `partition`. */
  lowering?: boolean;
  /** @deprecated The older spelling of `partition: 'int'` (true); use `partition`. */
  strictInt8?: boolean;
  /**
   * 'int+fp' (default): int8 where possible, float islands between Quantize/DequantizeLinear;
   * 'int': a quantized node that cannot run in int8 fails the load with its name and reason code;
   * 'fp': everything float (constant weights dequantized once at load), to compare against.
   * Supersedes lowering and strictInt8.
   */
  partition?: PartitionMode;
  /**
   * Threads a run splits its larger kernels over (default 1, or configure()'s). Above 1 the
   * threaded build runs the model where SharedArrayBuffer is usable (Node; a crossOriginIsolated
   * page), else the single-threaded one: model.info tells which. Results are bit-identical.
   */
  threads?: number;
  /**
   * Which int8 kernels run: 'auto' (default) the relaxed-SIMD build where the engine passed a
   * known-answer probe of the relaxed dot product the kernels rely on (and that build is
   * present), else SIMD128; 'simd128' forces SIMD128; 'relaxed' throws WQ_ERR_UNSUPPORTED with
   * the probe's answer where relaxed cannot run. Results are bit-identical either way.
   */
  kernels?: 'auto' | 'simd128' | 'relaxed';
  /**
   * Memory limit in bytes (default 0: none). The weights the loaded graph keeps, its graph outputs,
   * the arena and the intermediates a run allocates may not pass it; checked before allocating.
   * A model whose load-time plan passes it fails to load, a run that would pass it (e.g. larger
   * symbolic input shapes) fails, both with code 'WQ_ERR_OUT_OF_MEMORY' and a message naming the
   * bytes needed and the limit; the model and the package stay usable. The kernels' packed weight
   * copies and the largest scratch one node's kernels allocate in a run (times the threads) count
   * with the weights: int8 conv/GEMM panels and copies, float Conv im2col columns and float GEMM
   * packing at the graph's static shapes (not yet shapes known only at run time). The int8
   * kernels' scratch is one block (a slice per thread) held from load on; their runs allocate none.
   */
  maxMemoryBytes?: number;
  /**
   * Largest model read from a path, URL or Blob (default 2 GiB), checked before reading; a path
   * must name a regular file (not a device or FIFO). Either failure is 'WQ_ERR_IO'.
   */
  maxModelBytes?: number;
}

export interface ModelInfo {
  /** 'simd-threads' (wasm threads, shared memory) or 'simd' (single-threaded). */
  readonly build: 'simd' | 'simd-threads';
  /** Threads runs use (fewer than asked when the environment gives fewer workers). */
  readonly threads: number;
  readonly requestedThreads: number;
  /** False when loaded with lowering: false or partition 'fp' (QDQ graphs run op by op in float). */
  readonly lowering: boolean;
  /** The partition mode the model was loaded with. */
  readonly partition: PartitionMode;
  /** Why the single-threaded build runs although more threads were asked for. */
  readonly fallback?: string;
  /** The int8 kernels that run: 'relaxed' (relaxed SIMD) or 'simd128'. */
  readonly kernels: 'relaxed' | 'simd128';
  /** Why relaxed SIMD was not used (the probe's answer, or why its build did not load). */
  readonly relaxedRefused?: string;
}

export interface ArenaMemory {
  /** False before the first run of a model whose shapes are not all static. */
  readonly planned: boolean;
  /** Peak: bytes of the one buffer all intermediates are placed in. */
  readonly arenaBytes: number;
  /** Largest total of intermediates alive at one step (no plan can use less). */
  readonly lowerBoundBytes: number;
  /** What the intermediates would take without reusing memory. */
  readonly unsharedBytes: number;
  /** Intermediates placed in the arena. */
  readonly tensors: number;
}

export interface NodeTime {
  op: string;
  name: string;
  ms: number;
  kernelMs: number;
}

export interface RunOptions {
  /** Time every node (results carry `profile`, the median over `repeats` runs). */
  profile?: boolean;
  /** Runs to take the per-node median over (default 1); only with profile. */
  repeats?: number;
  /** Keep every intermediate tensor (results carry `captured`). */
  capture?: boolean;
  /**
   * Milliseconds the run may take (default 0: no limit), checked between nodes and (threaded build,
   * threads > 1) inside long float GEMMs: past it the run stops with code 'WQ_ERR_TIMEOUT' naming the node; the model
   * stays usable.
   */
  timeoutMs?: number;
}

/** An intermediate tensor of a captured run, dequantized to float32, channels-first. */
export interface CapturedTensor {
  data: Float32Array;
  dims: number[];
  /** dtype as stored in the executed graph ('uint8', 'int8', 'float32', ...). */
  dtype: string;
  /** 'NHWC' when it was stored channels-last (data is permuted back), else 'plain'. */
  layout: 'NHWC' | 'plain';
  /** Name and op of the executed node that wrote it, and its position. */
  producer: string;
  op: string;
  step: number;
}

/**
 * Outputs by name. A run with {profile: true} or {capture: true} also
 * carries `profile` / `captured` (non-enumerable: iterating the results
 * gives only tensors); see Model.run's overloads.
 */
export type RunResults = Record<string, Tensor>;

/** What a profiled or captured run returns: the outputs, plus the per-node times or the intermediates. */
export type ProfiledRunResults = RunResults & {
  readonly profile?: NodeTime[];
  readonly captured?: Record<string, CapturedTensor>;
};

/** One row of compare(): an int8-graph tensor against its float twin. */
export interface NodeGap {
  node: string;
  op: string;
  tensor: string;
  floatTensor: string;
  elements: number;
  maxAbs: number;
  mse: number;
  /** dB; Infinity when identical. */
  snr: number;
  cosine: number;
}

/**
 * Runs a float model and an int8 model of it on the same feeds with every
 * intermediate captured, and measures each int8 tensor against the float
 * tensor it stands for (matched by name, quantizer and layout suffixes
 * stripped), in execution order.
 */
export function compare(floatModel: Model, int8Model: Model, feeds: Record<string, Feed | TensorData>): Promise<NodeGap[]>;

/** The core's reason codes (src/core/ops/op.h WQ_REASON_LIST, docs/graph-json.md). */
export type ReasonCode =
  | 'NONE'
  | 'INT8'
  | 'INT8_REFERENCE'
  | 'BOUNDARY'
  | 'TRANSITION'
  | 'SHAPE'
  | 'NOT_QUANTIZED'
  | 'MODE_FP'
  | 'UNSUPPORTED_OP'
  | 'UNSUPPORTED_ATTR'
  | 'UNSUPPORTED_DTYPE'
  | 'NO_QPARAMS'
  | 'QPARAMS_MISMATCH'
  | 'PER_CHANNEL_ACTIVATION'
  | 'NOT_CONSTANT'
  | 'UNKNOWN_SHAPE'
  | 'INPUT_NOT_QUANTIZED'
  | 'OUTPUT_NOT_QUANTIZED';

/** How a tensor's elements sit in memory (the core's wq_layout record). */
export interface GraphLayout {
  name: 'NCHW' | 'NHWC' | 'plain' | string;
  /** The logical dim (index into dims) stored at each memory position, outermost first. */
  order: number[];
  /** Logical dim stored in blocks of `block` elements; -1 and 0 when not packed. */
  packed_dim: number;
  block: number;
}

export interface GraphQParams {
  dtype: DType;
  granularity: 'per-tensor' | 'per-channel' | 'per-group' | 'blockwise';
  axis: number;
  scale: number[];
  zero_point: number[];
}

export interface GraphNode {
  id: number;
  name: string;
  op: string;
  domain: string;
  source_ops: string[];
  source_nodes: string[];
  backend: 'int8-simd' | 'int8-ref' | 'float';
  role: 'compute' | 'quantize' | 'dequantize' | 'transition' | 'data';
  region: number;
  reason: { code: ReasonCode; detail: string };
  /** The kernel the node's plan chose ("im2col_gemm", "depthwise", "gemm", "gemv", ...), "" if none. */
  kernel: string;
  /** The instruction set of the kernel variant that runs it, "" if none. */
  kernel_isa: '' | 'ref' | 'simd128' | 'relaxed';
  /** The layout pass's decision for this node (docs/graph-json.md "Layout decision records"). */
  layout: GraphLayoutDecision;
  inputs: number[];
  outputs: number[];
}

/**
 * Why a node got its layout label. NOT_PLANNED: no activation of it may move
 * (no label); DECLARED: fixed channels-first (its op runs only so); KERNEL_CHANNELS_LAST:
 * fixed channels-last (its SIMD kernel); PLANNED: free, the planner's label; FUSED_BOUNDARY:
 * a free Quantize/DequantizeLinear labelled channels-last (the transition fused into it);
 * AS_WRITTEN: reads its activations in any layout and writes none (Shape, same-bytes reshapes; no
 * label); TRANSITION: a ToNHWC/ToNCHW the pass inserted (labelled as it writes).
 */
export type LayoutWhy = 'NOT_PLANNED' | 'DECLARED' | 'KERNEL_CHANNELS_LAST' | 'PLANNED' | 'FUSED_BOUNDARY' | 'AS_WRITTEN' | 'TRANSITION';

export interface GraphLayoutDecision {
  /** The order the node reads the activations that follow its label and writes its result; null: it has none. */
  label: 'NCHW' | 'NHWC' | null;
  /** false: the planner chose the label (a free node). */
  fixed: boolean;
  why: LayoutWhy;
  /** A free node: how many bytes the planner's total would grow by if only this node took the other label (0: a tie, declared preferred); null when fixed. */
  other_bytes: number | null;
  /** The bytes per run the layout planner charged to this node: a transition's tensor, a channels-first Resize/DepthToSpace's gather; 0 otherwise. Their sum is the layout_int8 pass's planned_bytes. */
  planned_bytes: number;
}

/** A layout transition: explicit (a ToNHWC/ToNCHW node) or fused into a boundary Quantize/DequantizeLinear. */
export interface GraphTransition {
  node: number;
  from: 'NCHW' | 'NHWC';
  to: 'NCHW' | 'NHWC';
  tensor_in: number;
  tensor_out: number;
  /** Bytes moved per run (per batch item when the batch is symbolic); 0 when fused. */
  bytes: number;
  /** What the layout planner counted for this transition (its node's layout.planned_bytes); equal to bytes when the planner's model holds. */
  planned_bytes: number;
  region: number;
  fused: boolean;
  /** The nodes that read tensor_out in the `to` order because they needed it (readers of any layout left out). */
  needed_by: number[];
  /** tensor_out is a graph output (declared order). */
  graph_output: boolean;
  /** The node that wrote tensor_in, -1 for a graph input. */
  producer: number;
  /** That node's layout decision (a graph input: declared, fixed). */
  producer_layout: GraphLayoutDecision;
}

export interface GraphTensor {
  id: number;
  name: string;
  kind: 'input' | 'output' | 'constant' | 'intermediate';
  dtype: string;
  dims: number[];
  layout: GraphLayout;
  qparams: GraphQParams | null;
  producer: number;
  consumers: number[];
  bytes: number;
  /** Arena slot of the latest plan (offset null before a plan: symbolic shapes, no run yet) and lifetime in execution steps. */
  arena: { offset: number | null; size: number; first: number; last: number } | null;
}

/** An op's capability record from the core's registry (src/core/ops/op.h, docs/graph-json.md "legend"). */
export interface GraphOpCapability {
  op: string;
  domain: string;
  /** How the int8 backend takes it; 'none': runs float. */
  int8: 'none' | 'conv' | 'gemm' | 'qlinear' | 'integer' | 'contrib' | 'binary' | 'pool' | 'concat' | 'reduce' | 'lookup' | 'move' | 'quantize' | 'dequantize' | 'kernel' | 'softmax';
  /** The wasmq int8 op a node of it becomes ('' : itself, or no int8 form). */
  as: string;
  /** The layouts its arguments accept and its output produces. */
  layout: 'nchw' | 'nhwc-kernel' | 'follow' | 'agnostic' | 'agnostic-binary' | 'agnostic-all' | 'nhwc-float' | 'to-nhwc' | 'to-nchw';
  /** The activation layouts its kernels take: one op per kernel family, the kernel follows its tensors' layouts. */
  layouts: Array<'NCHW' | 'NHWC'>;
}

export interface GraphRecords {
  schema: 1;
  mode: PartitionMode;
  summary: string;
  inputs: number[];
  outputs: number[];
  nodes: GraphNode[];
  tensors: GraphTensor[];
  regions: Array<{ id: number; backend: string; nodes: number[]; transitions: number; transition_bytes: number }>;
  transitions: GraphTransition[];
  memory: { arena_bytes: number; lower_bound_bytes: number; planned: boolean };
  /**
   * The load pipeline's passes in order: whether each ran and its counters. layout_int8's: nodes_nhwc,
   * transitions, transition_bytes, planned_bytes (the planner's minimum), free_labels, exact (1: two
   * labels, solved exactly as a minimum cut).
   */
  passes: Array<{ name: string; ran: boolean; stats: Record<string, number> }>;
  /** The capability record of each op the graph runs, in the registry's order (domain, then op type). */
  legend: { ops: GraphOpCapability[] };
}

export interface Model {
  readonly inputs: ReadonlyArray<TensorInfo>;
  readonly outputs: ReadonlyArray<TensorInfo>;
  /** True after dispose(). */
  readonly disposed: boolean;
  /** Which build runs the model, on how many threads. */
  readonly info: ModelInfo;
  /**
   * Runs the model. Names, dtypes and shapes are checked before the core is
   * called; symbolic dims must bind consistently across inputs.
   */
  run(feeds: Record<string, Feed | TensorData>, options?: RunOptions & { profile?: false; capture?: false }): Promise<RunResults>;
  /** A profiled or captured run: `profile` (per-node medians) or `captured` (every intermediate) beside the outputs. */
  run(feeds: Record<string, Feed | TensorData>, options: RunOptions): Promise<ProfiledRunResults>;
  /** The decision records of docs/graph-json.md: backends, regions, reasons, layouts, transitions, qparams, lifetimes. */
  graph(): GraphRecords;
  /** graph() as the core writes it: the bytes `wasmq inspect MODEL --json` prints (native and npx). */
  graphJson(): string;
  /** The core's text summary: inputs, outputs, opsets, op histogram, parameters. */
  describe(): string;
  /** The lowered graph: per node, the int8 op it runs (with its tensors' qparams) or why it stayed float. */
  describeLowered(): string;
  /**
   * Arena memory for intermediates, as planned for the latest run (or at load
   * when every shape is static). Throws 'WQ_ERR_DISPOSED' after dispose().
   */
  readonly memory: ArenaMemory;
  /** Per-node timing of the runs that follow: true starts (clearing the counts), false stops. */
  profile(on: boolean): void;
  /**
   * Milliseconds per node of the executed (lowered) graph summed over the runs
   * since profile(true); ms - kernelMs is the executor's fixed cost per node.
   */
  nodeTimes(): Array<{ op: string; name: string; ms: number; kernelMs: number }>;
  /**
   * Runs the model chunk after chunk with state outputs bound to the next
   * chunk's state inputs, e.g. `model.stream({ hn: 'h0', cn: 'c0' })`. The
   * state stays in wasm memory between chunks.
   */
  stream(bindings: Record<string, string>, options?: StreamOptions): ModelStream;
  /** Frees the model's wasm memory. Later calls throw WasmqError 'WQ_ERR_DISPOSED'. Idempotent. */
  dispose(): void;
}

export interface StreamOptions {
  /** The state of the first chunk per state input (default zeros of its declared, static shape). */
  initial?: Record<string, TensorData>;
}

export interface ModelStream {
  /** The inputs each chunk feeds: every input not bound to a state output. */
  readonly inputs: string[];
  /** Chunks pushed since the start or the last reset(). */
  readonly chunks: number;
  /**
   * Runs one chunk: feeds for the unbound inputs, or a bare TypedArray when
   * there is one (its symbolic dims are 1 except the last, which takes the
   * rest). Resolves to the outputs not bound to a state.
   */
  push(chunk: TensorData | Record<string, Feed | TensorData>): Promise<RunResults>;
  /** Copies of the state the next push reads, by input name. */
  state(): Record<string, { data: TensorData; dims: number[] }>;
  /** Starts over from the initial state. */
  reset(): void;
}

export type WasmqErrorCode =
  | 'WQ_ERR_PARSE'
  | 'WQ_ERR_INVALID_MODEL'
  | 'WQ_ERR_UNSUPPORTED'
  | 'WQ_ERR_SHAPE'
  | 'WQ_ERR_INVALID_ARG'
  | 'WQ_ERR_OUT_OF_MEMORY'
  | 'WQ_ERR_IO'
  /** A run or a quantization passed its timeoutMs (a model stays usable, a quantizer does not). */
  | 'WQ_ERR_TIMEOUT'
  | 'WQ_ERR_DISPOSED'
  /** The wasm core trapped or aborted inside the call; the package dropped it and the next load() starts a fresh one. */
  | 'WQ_ERR_INTERNAL';

export class WasmqError extends Error {
  constructor(reason: string, options?: { code?: WasmqErrorCode | string; node?: string });
  /**
   * The C status name; 'WQ_ERR_DISPOSED' for use after dispose() or of a model
   * whose core trapped; 'WQ_ERR_INTERNAL' for the call in which the core trapped.
   */
  readonly code: WasmqErrorCode | string;
  /** Name of the node at fault, '' when none. */
  readonly node: string;
  /** The message without the " (node 'X')" suffix. */
  readonly reason: string;
}

/**
 * Loads an ONNX model from bytes, a file path (Node) or a URL (fetch; file:
 * URLs in Node). The wasm core is instantiated on first use.
 */
export function load(
  source: Uint8Array | ArrayBuffer | ArrayBufferView | Blob | string | URL,
  options?: LoadOptions,
): Promise<Model>;

/**
 * Where the cores live, or their bytes; call before the first load() or quantize(). Calls add
 * up: each sets only the options it names, the others keep what earlier calls set.
 * Defaults: the package's own wasm_build/out/ folder (../../wasm_build/out/ from index.mjs),
 * which Node and bundlers that copy `new URL(…, import.meta.url)` assets (vite, webpack) find as is.
 */
export function configure(options: {
  /**
   * The one setting for everything else (esbuild, a CDN, a static folder): the URL where the package's
   * wasm_build/out/ folder is served (relative URLs resolve against the page). Every core is found
   * from it: wasmq.{mjs,wasm}, mt/ (the threaded core), wasmq-quant.{mjs,wasm}. The settings
   * below override it file by file.
   */
  baseUrl?: string | URL;
  glueUrl?: string | URL;
  wasmUrl?: string | URL;
  wasmBinary?: Uint8Array | ArrayBuffer;
  /** Folder of the threaded build (wasmq.mjs, wasmq.wasm, wasmq.worker.js). */
  threadedDir?: string | URL;
  /** Threads load() uses when its options give none (default 1). */
  threads?: number;
  /**
   * Workers the threaded core starts with (1-64; default one per other core, or the first
   * load's threads - 1). Each model loaded with N threads holds N - 1 of them while it lives;
   * a model that finds too few runs on fewer threads and says so in `info.fallback`.
   */
  threadPoolSize?: number;
  /** Where quantize() finds the quant build (default ../../wasm_build/out/wasmq-quant.{mjs,wasm}), or its bytes. */
  quantGlueUrl?: string | URL;
  quantWasmUrl?: string | URL;
  quantWasmBinary?: Uint8Array | ArrayBuffer;
  /** Where load() finds the relaxed-SIMD build (default ../../wasm_build/out/wasmq-relaxed.{mjs,wasm}), or its bytes. */
  relaxedGlueUrl?: string | URL;
  relaxedWasmUrl?: string | URL;
  relaxedWasmBinary?: Uint8Array | ArrayBuffer;
}): void;

/** Whether the threaded build can run here (SharedArrayBuffer: Node, or a crossOriginIsolated page). */
export function threadsSupported(): boolean;

/** Progress of a calibration: samples observed and, when known, how many there will be. */
export interface QuantizeProgress {
  done: number;
  /** options.total, or the length of the array given to observeAll(); else undefined. */
  total?: number;
}

export interface QuantizeOptions {
  /**
   * The quantizer's settings (docs/quantize.md: activation, weight, calibration, io, minRange,
   * ops, exclude, keepFloat, targetSnrDb) as an object or a JSON string; defaults without it.
   */
  config?: Record<string, unknown> | string;
  /** Binds symbolic input dims for calibration ({inputName: dims}, as load()); the written model keeps them. */
  inputShapes?: Record<string, readonly number[]>;
  /** Called after each observed sample. */
  onProgress?: (progress: QuantizeProgress) => void;
  /** The number of samples that will be observed, for onProgress. */
  total?: number;
  /**
   * Keep the N most sensitive nodes in float. With targetSnrDb, replaces the config's keepFloat and
   * targetSnrDb (one left out becomes 0), as the CLI's --keep-float / --target-snr do.
   */
  keepFloat?: number;
  /** Keep adding nodes to float, most sensitive first, until the outputs reach this SNR (dB, 0 = off). */
  targetSnrDb?: number;
  /** As LoadOptions.maxModelBytes. */
  maxModelBytes?: number;
  /**
   * The float model's memory limit while calibrating (as LoadOptions.maxMemoryBytes; 0: none): a
   * sample whose run would pass it fails with 'WQ_ERR_OUT_OF_MEMORY'. Same as the config's
   * maxMemoryBytes key.
   */
  maxMemoryBytes?: number;
  /** Keep adding nodes to float (most error per cost first) until every output's cosine to float reaches this (0 = off). */
  targetCosine?: number;
  /** Seconds the target search may take (0 = no limit); a warning says when it stopped there. */
  maxTime?: number;
  /**
   * Milliseconds the whole quantization may take from the quantize() call (0: no limit): an
   * observe() or finish() past it stops (between nodes) with code 'WQ_ERR_TIMEOUT' and
   * returns no model; so does every later call on that quantizer.
   */
  timeoutMs?: number;
  /** One line per target-search step, called during finish(). */
  onSearch?: (line: string) => void;
}

export interface QuantizeResult {
  /** The QDQ model as ONNX bytes: load(onnx) runs it on the int8 kernels. */
  onnx: Uint8Array;
  /** The report (docs/quantize.md): per node decision and reason, per tensor range and qparams, per node sensitivity. */
  report: Record<string, unknown>;
  /** The report's JSON text as the core wrote it (what `wasmq quantize --report` saves). */
  reportJson: string;
  /** One line: "quantized 9 of 12 compute nodes (...)". */
  summary: string;
}

/** A quantization in progress: observe calibration samples, then finish. */
export declare class Quantizer {
  private constructor();
  /** The float model's inputs: what each sample holds. */
  readonly inputs: readonly TensorInfo[];
  /** Samples observed so far. */
  readonly samples: number;
  readonly disposed: boolean;
  /**
   * Runs the float model on one sample (feeds as Model.run takes them) and updates the ranges.
   * NaN/Inf, a wrong dtype or shape throw WasmqError naming the input; the ranges stay as they were.
   */
  observe(feeds: Record<string, Feed | TensorData>): Promise<void>;
  /** Observes every sample (an array sets the progress total); resolves to how many. */
  observeAll(samples: Iterable<Record<string, Feed | TensorData>> | AsyncIterable<Record<string, Feed | TensorData>>): Promise<number>;
  /** The QDQ model from the samples observed so far (at least one); deterministic. observe() after it is refused. */
  finish(): Promise<QuantizeResult>;
  /** A warning the report carries (e.g. that the samples are random). */
  note(warning: string): void;
  /** Frees the quantizer's wasm memory. Idempotent. */
  dispose(): void;
}

/**
 * Starts the post-training quantization of a float ONNX model (bytes, a path in Node, or a URL).
 * Loads the quant build of the core (wasmq-quant.wasm) on first use; load() never does.
 * Throws WasmqError for an already quantized model, a config the core rejects, a model that does not load.
 */
export function quantize(
  source: Uint8Array | ArrayBuffer | ArrayBufferView | Blob | string | URL,
  options?: QuantizeOptions,
): Promise<Quantizer>;

export interface QuantizeDynamicOptions {
  /** One scale per weight matrix (default: one per output column). */
  perTensor?: boolean;
  /** uint8 affine weights (default: int8 symmetric in [-127, 127]). */
  uint8Weights?: boolean;
  maxModelBytes?: number;
}

/**
 * Writes a float ONNX model in onnxruntime's dynamic int8 form (no calibration): every MatMul/Gemm
 * on a constant weight as DynamicQuantizeLinear -> MatMulInteger -> Cast -> Mul [-> Add].
 * Throws WasmqError for an already quantized model, one with nothing to quantize, or opset < 11.
 */
export function quantizeDynamic(
  source: Uint8Array | ArrayBuffer | ArrayBufferView | Blob | string | URL,
  options?: QuantizeDynamicOptions,
): Promise<{ onnx: Uint8Array; summary: string }>;

/** An image preprocessing spec (the config's "images" object, docs/quantize.md). */
export interface ImageSpec {
  input?: string;
  size?: [number, number];
  resize?: 'crop' | 'stretch' | 'pad';
  layout?: 'NCHW' | 'NHWC';
  channels?: 'RGB' | 'BGR' | 'GRAY';
  scale?: number;
  mean?: number | number[];
  std?: number | number[];
  extra?: number[];
}
/** Decoded pixels: width x height RGBA bytes. */
export interface RgbaImage {
  width: number;
  height: number;
  data: Uint8Array | Uint8ClampedArray;
}
export interface ResolvedImageSpec {
  input: string;
  dims: number[];
  [key: string]: unknown;
}
/** Checks a spec against the model's inputs (e.g. Quantizer.inputs) and fills in its defaults. */
export function resolveImageSpec(spec: ImageSpec | undefined, inputs: readonly TensorInfo[]): ResolvedImageSpec;
/** One image as the input tensor of a resolved spec: a feed for observe() or run(). */
export function imageToTensor(image: RgbaImage, spec: ResolvedImageSpec): { data: Float32Array; dims: number[] };
/** Decodes an image with the browser's decoder (createImageBitmap); browser only. */
export function decodeImage(source: Blob | Uint8Array | ArrayBuffer): Promise<RgbaImage>;

export const DTYPES: Readonly<
  Record<DType, { readonly name: DType; readonly code: number; readonly size: number; readonly npy: string }>
>;

declare const wasmq: {
  load: typeof load;
  WasmqError: typeof WasmqError;
  configure: typeof configure;
  threadsSupported: typeof threadsSupported;
  compare: typeof compare;
  quantize: typeof quantize;
};
export default wasmq;
