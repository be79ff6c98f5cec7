/* Annotation (issue #9 item 3): which nodes of a prepared float graph the
 * quantizer makes int8, and how each tensor is quantized. Driven by the op
 * registry's quant_role (ops/op.h), refined per node by what the int8
 * lowering accepts (Resize only nearest, a MatMul only with a constant
 * weight, ...).
 *
 *   linear      input 0 an activation, input 1 an int8 weight (per output
 *               channel along `weight_axis`), the bias int32 at s_in * s_w.
 *   clamp       Relu/Clip right after a linear (its only reader) is fused:
 *               no Q/DQ between them, the clamp's output carries the spec.
 *               A MatMul -> Add(constant bias) pair is one linear the same
 *               way (the Add is absorbed; its constant is the bias).
 *   own-output  inputs and output quantized, each with its own range.
 *   shared      data movement: inputs and output form one cluster with one
 *               spec (the union of their ranges), so moving codes needs no
 *               requantization. A cluster is quantized whenever one of its
 *               nodes is, even when its only neighbours are graph inputs
 *               and outputs.
 *
 * Tensors read or written by a quantized node get a Q/DQ pair (activations,
 * observed during calibration) or are stored quantized (constants). */
#ifndef WQ_QUANT_ANNOTATE_H
#define WQ_QUANT_ANNOTATE_H

#include <stdbool.h>

#include "../ir/graph.h"
#include "../ops/op.h"
#include "quant_config.h"

typedef enum wq_ann_decision {
  WQ_ANN_NOT_COMPUTED = 0, /* no float output (shape plumbing, integer ops) */
  WQ_ANN_QUANTIZED,        /* runs int8 */
  WQ_ANN_ABSORBED,         /* part of the preceding linear (clamp, bias Add) */
  WQ_ANN_FLOAT,            /* stays float; reason says why */
} wq_ann_decision;

typedef enum wq_ann_tensor_kind {
  WQ_ANN_T_NONE = 0,
  WQ_ANN_T_ACTIVATION, /* computed at run time: Q -> DQ pair, observed */
  WQ_ANN_T_CONSTANT,   /* float constant stored int8 with its cluster's spec */
  WQ_ANN_T_WEIGHT,     /* a linear's weight: int8 per channel along weight_axis */
} wq_ann_tensor_kind;

typedef struct wq_ann_node {
  wq_ann_decision decision;
  wq_quant_role role;
  /* Linear (or the linear an absorbed node belongs to): tensor of the bias
   * (-1: none) and the node whose input it is (the Add for MatMul + Add). */
  int bias, bias_node;
  int linear; /* absorbed nodes: the linear they belong to; else -1 */
  /* wq_reason (ops/op.h) when the op's capability check refused the node
   * (UNSUPPORTED_OP, UNSUPPORTED_ATTR, ...), else WQ_REASON_NONE. */
  int code;
  char reason[128];
} wq_ann_node;

typedef struct wq_ann_tensor {
  wq_ann_tensor_kind kind;
  int cluster;     /* lowest tensor id of its shared-spec cluster */
  int weight_axis; /* WQ_ANN_T_WEIGHT: the output-channel axis */
  int k_axis;      /* WQ_ANN_T_WEIGHT: the reduction axis (per-group blocks run along it) */
  /* Spec: of the node that first reads or writes the cluster (its op type's
   * override, else the global spec). */
  const wq_quant_spec *spec;
} wq_ann_tensor;

typedef struct wq_annotation {
  int n_nodes, n_tensors;
  wq_ann_node *nodes;
  wq_ann_tensor *tensors;
} wq_annotation;

/* `dtypes` gives each tensor's element type as seen at run time (NULL: the
 * graph's). `keep_float` (NULL or one flag per node) forces nodes to float
 * on top of the config's exclusions. On failure *out holds nothing. */
wq_status wq_annotate(const wq_graph *g, const wq_quant_config *cfg, const wq_dtype *dtypes,
                      const bool *keep_float, wq_annotation *out, wq_error *err);
void wq_annotation_free(wq_annotation *a);

/* Fails (WQ_ERR_INVALID_ARG) naming the first node that shows the model is
 * quantized already: Quantize/DequantizeLinear, QLinear*, *Integer,
 * onnxruntime's quantized contrib ops. */
wq_status wq_annotate_check_float(const wq_graph *g, wq_error *err);

/* "quantized", "absorbed", "float" or "not computed". */
const char *wq_ann_decision_name(wq_ann_decision d);

#endif
