/* Quantizer config: defaults and the JSON schema of docs/quantize.md. */
#include "quant_config.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/format.h"
#include "../ops/op.h"
#include "json_reader.h"

/* Longest JSON path named in an error ("ops.Conv.weight.groupSize"); op
 * types and keys are short, anything longer is cut. */
#define PATH_MAX_LEN 160

/* The code range a spec gets when its dtype or symmetry is set without an
 * explicit qmin/qmax. Symmetric int8 weights use the narrow [-127, 127]
 * (onnxruntime's choice too): zero sits exactly in the middle, so +w and -w
 * quantize to opposite codes. Everything else uses the dtype's full range. */
static void default_code_range(wq_dtype dtype, bool symmetric, bool is_weight, int32_t *qmin,
                               int32_t *qmax) {
  if (dtype == WQ_DT_UINT8) {
    *qmin = 0;
    *qmax = 255;
  } else {
    *qmin = symmetric && is_weight ? -127 : -128;
    *qmax = 127;
  }
}

void wq_quant_config_default(wq_quant_config *cfg) {
  memset(cfg, 0, sizeof *cfg);
  cfg->activation = (wq_quant_spec){.dtype = WQ_DT_INT8,
                                    .symmetric = false,
                                    .qmin = -128,
                                    .qmax = 127,
                                    .granularity = WQ_QGRAN_PER_TENSOR};
  cfg->weight = (wq_quant_spec){.dtype = WQ_DT_INT8,
                                .symmetric = true,
                                .qmin = -127,
                                .qmax = 127,
                                .granularity = WQ_QGRAN_PER_CHANNEL};
  /* The histogram range with the least estimated quantization error: on
   * the shared models it is never worse than min/max and clips the rare
   * outliers that widen a min/max range (teams-segmentation: cosine 0.977
   * -> 0.988). */
  cfg->calibration = WQ_CALIB_AUTO;
  cfg->averaging = 0.01f;
  cfg->percentile = 99.99f;
  cfg->histogram_bins = 2048;
  cfg->io_dtype = WQ_DT_FLOAT;
  /* Ranges narrower than 1e-5 come from constant or dead tensors (an
   * all-zero activation, a bias-only branch). Flooring them keeps the scale
   * (1e-5 / 255 ~ 4e-8) a normal float, so 1/scale and the requantization
   * multipliers s_in*s_w/s_out stay finite, while staying far below the
   * range of any live float activation, so it never changes a real one. */
  cfg->min_range = 1e-5f;
  /* One sample in four is held apart so the report's accuracy is measured on
   * data the ranges never saw. */
  cfg->holdout = 4;
  cfg->warn_cosine = 0.99f;
  cfg->bias_correction = true;
  cfg->equalization = true;
}

static void free_overrides(wq_quant_op_override *overrides, int n) {
  for (int i = 0; i < n; i++)
    free(overrides[i].op_type);
  free(overrides);
}

static void free_strings(char **strings, int n) {
  for (int i = 0; i < n; i++)
    free(strings[i]);
  free(strings);
}

void wq_quant_config_free(wq_quant_config *cfg) {
  if (!cfg)
    return;
  free_overrides(cfg->overrides, cfg->n_overrides);
  free_strings(cfg->exclude_nodes, cfg->n_exclude_nodes);
  cfg->overrides = NULL;
  cfg->exclude_nodes = NULL;
  cfg->n_overrides = cfg->n_exclude_nodes = 0;
}

/* Deep copy of src into *dst; on failure *dst owns nothing. */
static wq_status copy_config(wq_quant_config *dst, const wq_quant_config *src, wq_error *err) {
  *dst = *src;
  dst->overrides = NULL;
  dst->exclude_nodes = NULL;
  dst->n_overrides = dst->n_exclude_nodes = 0;
  if (src->n_overrides) {
    dst->overrides = calloc((size_t)src->n_overrides, sizeof *dst->overrides);
    if (!dst->overrides)
      goto oom;
    for (int i = 0; i < src->n_overrides; i++, dst->n_overrides++) {
      dst->overrides[i] = src->overrides[i];
      if (!(dst->overrides[i].op_type = wq_strdup(src->overrides[i].op_type)))
        goto oom;
    }
  }
  if (src->n_exclude_nodes) {
    dst->exclude_nodes = calloc((size_t)src->n_exclude_nodes, sizeof *dst->exclude_nodes);
    if (!dst->exclude_nodes)
      goto oom;
    for (int i = 0; i < src->n_exclude_nodes; i++, dst->n_exclude_nodes++)
      if (!(dst->exclude_nodes[i] = wq_strdup(src->exclude_nodes[i])))
        goto oom;
  }
  return WQ_OK;
oom:
  wq_quant_config_free(dst);
  return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "out of memory copying the quantizer config");
}

/* ---- JSON walking: every error names the JSON path and where it is ---- */

static wq_status bad(wq_error *err, const char *path, const wq_json *at, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

static wq_status bad(wq_error *err, const char *path, const wq_json *at, const char *fmt, ...) {
  char what[WQ_ERROR_MSG_MAX];
  va_list ap;
  va_start(ap, fmt);
  wq_vformat(what, sizeof what, fmt, ap);
  va_end(ap);
  return wq_fail(err, WQ_ERR_INVALID_ARG, NULL, "%s: %s (at %d:%d)", path, what, at->line,
                 at->column);
}

static void child_path(char *out, const char *parent, const char *key) {
  int n = parent[0] ? wq_format(out, PATH_MAX_LEN, "%s.%s", parent, key)
                    : wq_format(out, PATH_MAX_LEN, "%s", key);
  if (n >= PATH_MAX_LEN) /* a longer path is cut: it only names the place in messages */
    out[PATH_MAX_LEN - 1] = '\0';
}

static wq_status want_type(const wq_json *v, wq_json_type type, const char *path, wq_error *err) {
  if (v->type == type)
    return WQ_OK;
  return bad(err, path, v, "expected %s %s, got %s",
             type == WQ_JSON_ARRAY || type == WQ_JSON_OBJECT ? "an" : "a", wq_json_type_name(type),
             wq_json_type_name(v->type));
}

/* Fails on the first key of `obj` not in `allowed` (NULL-terminated). */
static wq_status check_keys(const wq_json *obj, const char *path, const char *const *allowed,
                            wq_error *err) {
  for (int i = 0; i < obj->count; i++) {
    bool known = false;
    for (const char *const *a = allowed; *a && !known; a++)
      known = strcmp(obj->keys[i], *a) == 0;
    if (known)
      continue;
    char list[256] = "", key_path[PATH_MAX_LEN];
    size_t len = 0;
    for (const char *const *a = allowed; *a && len < sizeof list; a++)
      len += (size_t)wq_format(list + len, sizeof list - len, "%s%s", a == allowed ? "" : ", ", *a);
    child_path(key_path, path, obj->keys[i]);
    return bad(err, key_path, &obj->items[i], "unknown key (expected one of: %s)", list);
  }
  return WQ_OK;
}

static wq_status read_bool(const wq_json *v, const char *path, bool *out, wq_error *err) {
  WQ_TRY(want_type(v, WQ_JSON_BOOL, path, err));
  *out = v->boolean;
  return WQ_OK;
}

static wq_status read_int(const wq_json *v, const char *path, long lo, long hi, int64_t *out,
                          wq_error *err) {
  WQ_TRY(want_type(v, WQ_JSON_NUMBER, path, err));
  if (v->number != floor(v->number))
    return bad(err, path, v, "expected an integer, got %g", v->number);
  if (v->number < (double)lo || v->number > (double)hi)
    return bad(err, path, v, "%g is outside [%ld, %ld]", v->number, lo, hi);
  *out = (int64_t)v->number;
  return WQ_OK;
}

/* One of `names` (NULL-terminated); *index is its position. */
static wq_status read_choice(const wq_json *v, const char *path, const char *const *names,
                             int *index, wq_error *err) {
  WQ_TRY(want_type(v, WQ_JSON_STRING, path, err));
  char list[256] = "";
  size_t len = 0;
  for (int i = 0; names[i]; i++) {
    if (strcmp(v->string, names[i]) == 0) {
      *index = i;
      return WQ_OK;
    }
    if (len < sizeof list)
      len += (size_t)wq_format(list + len, sizeof list - len, "%s\"%s\"", i ? ", " : "", names[i]);
  }
  return bad(err, path, v, "\"%s\" is not one of %s", v->string, list);
}

static const char *const dtype_names[] = {"int8", "uint8", NULL};
static const wq_dtype dtype_values[] = {WQ_DT_INT8, WQ_DT_UINT8};

/* Overrides fields of *spec from `obj` (activation spec when !is_weight),
 * then checks the result as a whole. */
static wq_status read_spec(const wq_json *obj, const char *path, bool is_weight,
                           wq_quant_spec *spec, wq_error *err) {
  static const char *const activation_keys[] = {"dtype", "symmetric", "qmin", "qmax", NULL};
  static const char *const weight_keys[] = {"dtype", "symmetric", "granularity", "qmin",
                                            "qmax",  "groupSize", NULL};
  static const char *const granularities[] = {"per-tensor", "per-channel", "per-group", NULL};
  WQ_TRY(want_type(obj, WQ_JSON_OBJECT, path, err));
  WQ_TRY(check_keys(obj, path, is_weight ? weight_keys : activation_keys, err));
  char p[PATH_MAX_LEN];
  const wq_json *dtype = wq_json_member(obj, "dtype"),
                *symmetric = wq_json_member(obj, "symmetric");
  const wq_json *qmin = wq_json_member(obj, "qmin"), *qmax = wq_json_member(obj, "qmax");
  const wq_json *gran = wq_json_member(obj, "granularity");
  const wq_json *group = wq_json_member(obj, "groupSize");
  if (dtype) {
    int i;
    child_path(p, path, "dtype");
    WQ_TRY(read_choice(dtype, p, dtype_names, &i, err));
    spec->dtype = dtype_values[i];
  }
  if (symmetric) {
    child_path(p, path, "symmetric");
    WQ_TRY(read_bool(symmetric, p, &spec->symmetric, err));
  }
  /* A new dtype or symmetry brings its own code range unless one is given. */
  if (dtype || symmetric)
    default_code_range(spec->dtype, spec->symmetric, is_weight, &spec->qmin, &spec->qmax);
  int32_t dt_lo = spec->dtype == WQ_DT_UINT8 ? 0 : -128,
          dt_hi = spec->dtype == WQ_DT_UINT8 ? 255 : 127;
  const char *dt_name = spec->dtype == WQ_DT_UINT8 ? "uint8" : "int8";
  int64_t q;
  if (qmin) {
    child_path(p, path, "qmin");
    WQ_TRY(read_int(qmin, p, INT_MIN, INT_MAX, &q, err));
    if (q < dt_lo || q > dt_hi)
      return bad(err, p, qmin, "%lld is outside %s [%d, %d]", (long long)q, dt_name, dt_lo, dt_hi);
    spec->qmin = (int32_t)q;
  }
  if (qmax) {
    child_path(p, path, "qmax");
    WQ_TRY(read_int(qmax, p, INT_MIN, INT_MAX, &q, err));
    if (q < dt_lo || q > dt_hi)
      return bad(err, p, qmax, "%lld is outside %s [%d, %d]", (long long)q, dt_name, dt_lo, dt_hi);
    spec->qmax = (int32_t)q;
  }
  if (spec->qmin < dt_lo || spec->qmax > dt_hi) {
    /* Kept from earlier settings of another dtype. */
    child_path(p, path, "dtype");
    return bad(err, p, dtype ? dtype : obj, "qmin/qmax [%d, %d] are outside %s [%d, %d]",
               (int)spec->qmin, (int)spec->qmax, dt_name, dt_lo, dt_hi);
  }
  if (spec->qmin >= spec->qmax) {
    child_path(p, path, qmin ? "qmin" : "qmax");
    return bad(err, p,
               qmin   ? qmin
               : qmax ? qmax
                      : obj,
               "qmin %d must be below qmax %d", (int)spec->qmin, (int)spec->qmax);
  }
  if (gran) {
    int i;
    child_path(p, path, "granularity");
    WQ_TRY(read_choice(gran, p, granularities, &i, err));
    spec->granularity = (wq_quant_granularity)i;
  }
  if (group) {
    child_path(p, path, "groupSize");
    WQ_TRY(read_int(group, p, 1, INT_MAX, &q, err));
    if (spec->granularity != WQ_QGRAN_PER_GROUP)
      return bad(err, p, group, "only used with granularity \"per-group\"");
    spec->group_size = q;
  }
  if (spec->granularity == WQ_QGRAN_PER_GROUP && spec->group_size < 1) {
    child_path(p, path, "granularity");
    return bad(err, p, gran ? gran : obj, "\"per-group\" needs groupSize (elements per group)");
  }
  return WQ_OK;
}

static wq_status read_calibration(const wq_json *obj, wq_quant_config *cfg, wq_error *err) {
  static const char *const keys[] = {"method", "averaging", "percentile", "bins", NULL};
  static const char *const methods[] = {"minmax", "moving-average", "percentile", "mse",
                                        "auto",   "tensor",         NULL};
  WQ_TRY(want_type(obj, WQ_JSON_OBJECT, "calibration", err));
  WQ_TRY(check_keys(obj, "calibration", keys, err));
  const wq_json *v;
  if ((v = wq_json_member(obj, "method"))) {
    int i;
    WQ_TRY(read_choice(v, "calibration.method", methods, &i, err));
    cfg->calibration = (wq_calib_method)i;
  }
  if ((v = wq_json_member(obj, "averaging"))) {
    WQ_TRY(want_type(v, WQ_JSON_NUMBER, "calibration.averaging", err));
    if (!(v->number > 0 && v->number <= 1))
      return bad(err, "calibration.averaging", v, "%g is not in (0, 1]", v->number);
    cfg->averaging = (float)v->number;
  }
  if ((v = wq_json_member(obj, "percentile"))) {
    WQ_TRY(want_type(v, WQ_JSON_NUMBER, "calibration.percentile", err));
    if (!(v->number > 0 && v->number <= 100))
      return bad(err, "calibration.percentile", v, "%g is not in (0, 100]", v->number);
    cfg->percentile = (float)v->number;
  }
  if ((v = wq_json_member(obj, "bins"))) {
    int64_t bins;
    /* Each observed tensor holds one histogram: keep it bounded. */
    WQ_TRY(read_int(v, "calibration.bins", 16, 65536, &bins, err));
    cfg->histogram_bins = (int)bins;
  }
  return WQ_OK;
}

/* An op entry's "activation" or "weight": starts from the op's earlier
 * override, else the global spec, and changes what it names. */
static wq_status read_op_spec(const wq_json *entry, const char *path, bool is_weight,
                              const wq_quant_spec *global, wq_quant_spec *spec, bool *has,
                              wq_error *err) {
  const char *key = is_weight ? "weight" : "activation";
  const wq_json *v = wq_json_member(entry, key);
  if (!v)
    return WQ_OK;
  wq_quant_spec next = *has ? *spec : *global;
  char p[PATH_MAX_LEN];
  child_path(p, path, key);
  WQ_TRY(read_spec(v, p, is_weight, &next, err));
  *spec = next;
  *has = true;
  return WQ_OK;
}

static wq_status read_ops(const wq_json *obj, wq_quant_config *cfg, wq_error *err) {
  static const char *const keys[] = {"activation", "weight", "keepFloat", NULL};
  WQ_TRY(want_type(obj, WQ_JSON_OBJECT, "ops", err));
  for (int i = 0; i < obj->count; i++) {
    const char *op_type = obj->keys[i];
    const wq_json *entry = &obj->items[i];
    char path[PATH_MAX_LEN], p[PATH_MAX_LEN];
    child_path(path, "ops", op_type);
    if (!wq_op_find("", op_type))
      return bad(err, path, entry, "unknown op type (not an ONNX op wasmq implements)");
    if (wq_op_is_int8_family(op_type))
      return bad(err, path, entry, "is already a quantized op; only float ops take settings");
    WQ_TRY(want_type(entry, WQ_JSON_OBJECT, path, err));
    WQ_TRY(check_keys(entry, path, keys, err));
    wq_quant_op_override *o = (wq_quant_op_override *)wq_quant_config_op(cfg, op_type);
    if (!o) {
      wq_quant_op_override *grown =
          realloc(cfg->overrides, (size_t)(cfg->n_overrides + 1) * sizeof *grown);
      if (!grown)
        return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "out of memory reading %s", path);
      cfg->overrides = grown;
      o = &cfg->overrides[cfg->n_overrides];
      memset(o, 0, sizeof *o);
      if (!(o->op_type = wq_strdup(op_type)))
        return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "out of memory reading %s", path);
      cfg->n_overrides++;
    }
    WQ_TRY(read_op_spec(entry, path, false, &cfg->activation, &o->activation, &o->has_activation,
                        err));
    WQ_TRY(read_op_spec(entry, path, true, &cfg->weight, &o->weight, &o->has_weight, err));
    const wq_json *v;
    if ((v = wq_json_member(entry, "keepFloat"))) {
      child_path(p, path, "keepFloat");
      WQ_TRY(read_bool(v, p, &o->keep_float, err));
    }
  }
  return WQ_OK;
}

/* "exclude" replaces the list held so far. */
static wq_status read_exclude(const wq_json *arr, wq_quant_config *cfg, wq_error *err) {
  WQ_TRY(want_type(arr, WQ_JSON_ARRAY, "exclude", err));
  char **names = calloc((size_t)(arr->count ? arr->count : 1), sizeof *names);
  if (!names)
    return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "out of memory reading exclude");
  wq_status st = WQ_OK;
  int n = 0;
  for (; n < arr->count && st == WQ_OK; n++) {
    const wq_json *v = &arr->items[n];
    char p[PATH_MAX_LEN];
    wq_format(p, sizeof p, "exclude[%d]", n);
    if ((st = want_type(v, WQ_JSON_STRING, p, err)) != WQ_OK)
      break;
    if (!v->string[0]) {
      st = bad(err, p, v, "empty node name");
      break;
    }
    for (int k = 0; k < n && st == WQ_OK; k++)
      if (strcmp(names[k], v->string) == 0)
        st = bad(err, p, v, "node \"%s\" is listed twice (also exclude[%d])", v->string, k);
    if (st != WQ_OK)
      break;
    if (!(names[n] = wq_strdup(v->string)))
      st = wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "out of memory reading exclude");
  }
  if (st != WQ_OK) {
    free_strings(names, n);
    return st;
  }
  free_strings(cfg->exclude_nodes, cfg->n_exclude_nodes);
  cfg->exclude_nodes = names;
  cfg->n_exclude_nodes = arr->count;
  return WQ_OK;
}

static wq_status read_config(const wq_json *root, wq_quant_config *cfg, wq_error *err) {
  static const char *const keys[] = {"activation",     "weight",
                                     "calibration",    "io",
                                     "minRange",       "ops",
                                     "exclude",        "keepFloat",
                                     "targetSnrDb",    "targetCosine",
                                     "maxTime",        "holdout",
                                     "warnCosine",     "images",
                                     "maxMemoryBytes", "biasCorrection",
                                     "equalization",   NULL};
  static const char *const io_names[] = {"float", "int8", "uint8", NULL};
  static const wq_dtype io_values[] = {WQ_DT_FLOAT, WQ_DT_INT8, WQ_DT_UINT8};
  if (root->type != WQ_JSON_OBJECT)
    return bad(err, "config", root, "expected an object at the top level, got %s",
               wq_json_type_name(root->type));
  WQ_TRY(check_keys(root, "", keys, err));
  const wq_json *v;
  /* Global specs first: "ops" entries start from them. */
  if ((v = wq_json_member(root, "activation")))
    WQ_TRY(read_spec(v, "activation", false, &cfg->activation, err));
  if ((v = wq_json_member(root, "weight")))
    WQ_TRY(read_spec(v, "weight", true, &cfg->weight, err));
  if ((v = wq_json_member(root, "calibration")))
    WQ_TRY(read_calibration(v, cfg, err));
  if ((v = wq_json_member(root, "io"))) {
    int i;
    WQ_TRY(read_choice(v, "io", io_names, &i, err));
    cfg->io_dtype = io_values[i];
  }
  if ((v = wq_json_member(root, "minRange"))) {
    WQ_TRY(want_type(v, WQ_JSON_NUMBER, "minRange", err));
    if (!(v->number > 0 && v->number < 1e30))
      return bad(err, "minRange", v, "%g is not a positive range", v->number);
    cfg->min_range = (float)v->number;
  }
  if ((v = wq_json_member(root, "ops")))
    WQ_TRY(read_ops(v, cfg, err));
  if ((v = wq_json_member(root, "exclude")))
    WQ_TRY(read_exclude(v, cfg, err));
  if ((v = wq_json_member(root, "keepFloat"))) {
    int64_t n;
    WQ_TRY(read_int(v, "keepFloat", 0, INT_MAX, &n, err));
    cfg->keep_float = (int)n;
  }
  if ((v = wq_json_member(root, "targetSnrDb"))) {
    WQ_TRY(want_type(v, WQ_JSON_NUMBER, "targetSnrDb", err));
    /* float32 itself carries ~150 dB; 0 turns the search off. */
    if (!(v->number >= 0 && v->number <= 200))
      return bad(err, "targetSnrDb", v, "%g is not in [0, 200] dB", v->number);
    cfg->target_snr_db = (float)v->number;
  }
  if ((v = wq_json_member(root, "targetCosine"))) {
    WQ_TRY(want_type(v, WQ_JSON_NUMBER, "targetCosine", err));
    if (!(v->number >= 0 && v->number < 1))
      return bad(err, "targetCosine", v, "%g is not in [0, 1)", v->number);
    cfg->target_cosine = (float)v->number;
  }
  if ((v = wq_json_member(root, "warnCosine"))) {
    WQ_TRY(want_type(v, WQ_JSON_NUMBER, "warnCosine", err));
    if (!(v->number >= 0 && v->number <= 1))
      return bad(err, "warnCosine", v, "%g is not in [0, 1]", v->number);
    cfg->warn_cosine = (float)v->number;
  }
  if ((v = wq_json_member(root, "maxMemoryBytes"))) {
    WQ_TRY(want_type(v, WQ_JSON_NUMBER, "maxMemoryBytes", err));
    if (!(v->number >= 0 && v->number <= 9007199254740992.0 &&
          v->number == (double)(int64_t)v->number))
      return bad(err, "maxMemoryBytes", v, "%g is not a byte count (an integer >= 0)", v->number);
    cfg->max_memory_bytes = v->number >= (double)SIZE_MAX ? SIZE_MAX : (size_t)v->number;
  }
  if ((v = wq_json_member(root, "maxTime"))) {
    WQ_TRY(want_type(v, WQ_JSON_NUMBER, "maxTime", err));
    if (!(v->number >= 0 && v->number <= 1e6))
      return bad(err, "maxTime", v, "%g is not a number of seconds in [0, 1e6]", v->number);
    cfg->max_time = (float)v->number;
  }
  /* How images become input tensors: read by the JS image decoder
   * (src/js/images.mjs), which checks its keys; the core only its type. */
  if ((v = wq_json_member(root, "images")))
    WQ_TRY(want_type(v, WQ_JSON_OBJECT, "images", err));
  if ((v = wq_json_member(root, "biasCorrection")))
    WQ_TRY(read_bool(v, "biasCorrection", &cfg->bias_correction, err));
  if ((v = wq_json_member(root, "equalization")))
    WQ_TRY(read_bool(v, "equalization", &cfg->equalization, err));
  if ((v = wq_json_member(root, "holdout"))) {
    int64_t n;
    WQ_TRY(read_int(v, "holdout", 0, 1000000, &n, err));
    if (n == 1)
      return bad(err, "holdout", v, "1 would hold apart every sample (0: none, N >= 2: one in N)");
    cfg->holdout = (int)n;
  }
  return WQ_OK;
}

wq_status wq_quant_config_parse_json(wq_quant_config *cfg, const char *json, size_t n,
                                     wq_error *err) {
  if (!cfg)
    return wq_fail(err, WQ_ERR_INVALID_ARG, NULL, "wq_quant_config_parse_json: cfg is NULL");
  wq_json root;
  wq_status st = wq_json_parse(json, n, &root, err);
  if (st != WQ_OK) {
    /* A syntax error is the caller's bad argument too; the message keeps its line:column. */
    if (err)
      err->code = WQ_ERR_INVALID_ARG;
    return WQ_ERR_INVALID_ARG;
  }
  /* Work on a copy so that a failure leaves *cfg as it was. */
  wq_quant_config next;
  st = copy_config(&next, cfg, err);
  if (st == WQ_OK) {
    st = read_config(&root, &next, err);
    if (st == WQ_OK) {
      wq_quant_config_free(cfg);
      *cfg = next;
    } else {
      wq_quant_config_free(&next);
    }
  }
  wq_json_free(&root);
  return st;
}

const wq_quant_op_override *wq_quant_config_op(const wq_quant_config *cfg, const char *op_type) {
  for (int i = 0; i < cfg->n_overrides; i++)
    if (strcmp(cfg->overrides[i].op_type, op_type) == 0)
      return &cfg->overrides[i];
  return NULL;
}

const wq_quant_spec *wq_quant_config_activation_for(const wq_quant_config *cfg,
                                                    const char *op_type) {
  const wq_quant_op_override *o = wq_quant_config_op(cfg, op_type);
  return o && o->has_activation ? &o->activation : &cfg->activation;
}

const wq_quant_spec *wq_quant_config_weight_for(const wq_quant_config *cfg, const char *op_type) {
  const wq_quant_op_override *o = wq_quant_config_op(cfg, op_type);
  return o && o->has_weight ? &o->weight : &cfg->weight;
}

bool wq_quant_config_keeps_float(const wq_quant_config *cfg, const char *op_type,
                                 const char *node_name) {
  const wq_quant_op_override *o = wq_quant_config_op(cfg, op_type);
  if (o && o->keep_float)
    return true;
  for (int i = 0; i < cfg->n_exclude_nodes; i++)
    if (node_name && strcmp(cfg->exclude_nodes[i], node_name) == 0)
      return true;
  return false;
}

wq_status wq_quant_config_check_nodes(const wq_quant_config *cfg, const wq_graph *g,
                                      wq_error *err) {
  for (int i = 0; i < cfg->n_exclude_nodes; i++) {
    bool found = false;
    for (int k = 0; k < g->n_nodes && !found; k++)
      found = strcmp(g->nodes[k].name, cfg->exclude_nodes[i]) == 0;
    if (!found)
      return wq_fail(err, WQ_ERR_INVALID_ARG, NULL,
                     "exclude[%d]: the model has no node named \"%s\" (unnamed ONNX nodes are "
                     "called <op>_<index>; `wasmq info --lowered` "
                     "lists them)",
                     i, cfg->exclude_nodes[i]);
  }
  return WQ_OK;
}
