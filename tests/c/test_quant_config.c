/* The quantizer config: defaults, the documented example file
 * (docs/examples/quantize-config.json), how "ops" entries layer over the
 * global specs, and every class of bad input with the exact message that
 * names its JSON path and position. Also the JSON reader underneath. */
#include <string.h>

#include "onnx/onnx_import.h"
#include "quant/json_reader.h"
#include "quant/quant_config.h"
#include "wq_test.h"

static wq_status parse(wq_quant_config *cfg, const char *json, wq_error *err) {
  return wq_quant_config_parse_json(cfg, json, strlen(json), err);
}

/* Parses `json` over the defaults and expects WQ_ERR_INVALID_ARG with a
 * message equal to `message`. */
static void expect_error(const char *json, const char *message) {
  wq_quant_config cfg;
  wq_quant_config_default(&cfg);
  wq_error err;
  wq_error_clear(&err);
  wq_status st = parse(&cfg, json, &err);
  CHECK_MSG(st == WQ_ERR_INVALID_ARG, "%s: status %d", json, (int)st);
  CHECK_MSG(err.code == WQ_ERR_INVALID_ARG, "%s", json);
  CHECK_MSG(strcmp(err.message, message) == 0, "%s\n  got:  %s\n  want: %s", json, err.message,
            message);
  /* Nothing half-applied. */
  CHECK(cfg.activation.qmin == -128 && cfg.weight.granularity == WQ_QGRAN_PER_CHANNEL);
  CHECK(cfg.n_overrides == 0 && cfg.n_exclude_nodes == 0 && cfg.keep_float == 0);
  wq_quant_config_free(&cfg);
}

static void test_defaults(void) {
  wq_quant_config cfg;
  wq_quant_config_default(&cfg);
  CHECK(cfg.activation.dtype == WQ_DT_INT8 && !cfg.activation.symmetric);
  CHECK(cfg.activation.qmin == -128 && cfg.activation.qmax == 127);
  CHECK(cfg.activation.granularity == WQ_QGRAN_PER_TENSOR);
  CHECK(cfg.weight.dtype == WQ_DT_INT8 && cfg.weight.symmetric);
  CHECK(cfg.weight.qmin == -127 && cfg.weight.qmax == 127);
  CHECK(cfg.weight.granularity == WQ_QGRAN_PER_CHANNEL && cfg.weight.group_size == 0);
  CHECK(cfg.calibration == WQ_CALIB_AUTO);
  CHECK(cfg.averaging == 0.01f && cfg.percentile == 99.99f && cfg.histogram_bins == 2048);
  CHECK(cfg.io_dtype == WQ_DT_FLOAT && cfg.min_range == 1e-5f);
  CHECK(cfg.n_overrides == 0 && cfg.overrides == NULL);
  CHECK(cfg.n_exclude_nodes == 0 && cfg.exclude_nodes == NULL);
  CHECK(cfg.keep_float == 0 && cfg.target_snr_db == 0.0f);
  CHECK(wq_quant_config_activation_for(&cfg, "Conv") == &cfg.activation);
  CHECK(wq_quant_config_weight_for(&cfg, "Conv") == &cfg.weight);
  CHECK(!wq_quant_config_keeps_float(&cfg, "Conv", "conv1"));

  /* An empty object changes nothing. */
  wq_error err;
  CHECK(parse(&cfg, " {\n} ", &err) == WQ_OK);
  CHECK(cfg.weight.qmin == -127 && cfg.calibration == WQ_CALIB_AUTO && cfg.n_overrides == 0);
  wq_quant_config_free(&cfg);
  wq_quant_config_free(&cfg); /* safe twice */
}

static wq_graph *load_mnist(wq_model_ir **ir) {
  char path[1024];
  snprintf(path, sizeof path, "%s/models/mnist-8/model.onnx", wq_test_shared_dir());
  size_t n;
  uint8_t *bytes = wq_test_read_file(path, &n);
  CHECK_MSG(bytes != NULL, "cannot read %s", path);
  wq_error err;
  *ir = NULL;
  if (bytes && wq_onnx_import(bytes, n, ir, &err) != WQ_OK)
    CHECK_MSG(0, "import: %s", err.message);
  free(bytes);
  return *ir ? (*ir)->graph : NULL;
}

static void test_example_file(void) {
  const char *src = getenv("WQ_SOURCE_DIR");
  char path[1024];
  snprintf(path, sizeof path, "%s/docs/examples/quantize-config.json", src ? src : ".");
  size_t n;
  char *json = (char *)wq_test_read_file(path, &n);
  CHECK_MSG(json != NULL, "cannot read %s", path);
  if (!json)
    return;
  /* docs/quantize.md shows this same file as its first json block. */
  snprintf(path, sizeof path, "%s/docs/quantize.md", src ? src : ".");
  size_t doc_n;
  char *doc = (char *)wq_test_read_file(path, &doc_n);
  const char *block = NULL;
  if (doc) {
    doc[doc_n ? doc_n - 1 : 0] = '\0';
    block = strstr(doc, "```json\n");
  }
  CHECK_MSG(block && strncmp(block + 8, json, n) == 0 && strncmp(block + 8 + n, "```", 3) == 0,
            "the example in docs/quantize.md differs from docs/examples/quantize-config.json");
  free(doc);

  wq_quant_config cfg;
  wq_quant_config_default(&cfg);
  wq_error err;
  wq_status st = wq_quant_config_parse_json(&cfg, json, n, &err);
  CHECK_MSG(st == WQ_OK, "%s", err.message);
  free(json);
  CHECK(cfg.activation.dtype == WQ_DT_UINT8 && !cfg.activation.symmetric);
  CHECK(cfg.activation.qmin == 0 && cfg.activation.qmax == 255);
  CHECK(cfg.weight.dtype == WQ_DT_INT8 && cfg.weight.symmetric);
  CHECK(cfg.weight.qmin == -127 && cfg.weight.qmax == 127);
  CHECK(cfg.weight.granularity == WQ_QGRAN_PER_CHANNEL);
  CHECK(cfg.calibration == WQ_CALIB_PERCENTILE);
  CHECK(cfg.averaging == 0.05f && cfg.percentile == 99.9f && cfg.histogram_bins == 1024);
  CHECK(cfg.io_dtype == WQ_DT_UINT8 && cfg.min_range == 1e-4f);
  CHECK(cfg.keep_float == 2 && cfg.target_snr_db == 30.0f);
  CHECK(cfg.n_exclude_nodes == 1 && strcmp(cfg.exclude_nodes[0], "Plus214") == 0);
  CHECK(cfg.n_overrides == 3);

  /* MatMul: the global weight spec with per-group blocks of 32. */
  const wq_quant_spec *w = wq_quant_config_weight_for(&cfg, "MatMul");
  CHECK(w != &cfg.weight && w->granularity == WQ_QGRAN_PER_GROUP && w->group_size == 32);
  CHECK(w->dtype == WQ_DT_INT8 && w->symmetric && w->qmin == -127 && w->qmax == 127);
  CHECK(wq_quant_config_activation_for(&cfg, "MatMul") == &cfg.activation);
  /* Gemm: a new dtype and symmetry bring the full int8 range. */
  const wq_quant_spec *a = wq_quant_config_activation_for(&cfg, "Gemm");
  CHECK(a->dtype == WQ_DT_INT8 && a->symmetric && a->qmin == -128 && a->qmax == 127);
  CHECK(wq_quant_config_weight_for(&cfg, "Gemm") == &cfg.weight);
  CHECK(wq_quant_config_keeps_float(&cfg, "Softmax", "anything"));
  CHECK(wq_quant_config_keeps_float(&cfg, "Add", "Plus214"));
  CHECK(!wq_quant_config_keeps_float(&cfg, "Add", "Plus30"));
  CHECK(!wq_quant_config_keeps_float(&cfg, "Gemm", "g"));

  /* The excluded node exists in mnist-8; a misspelt one is reported. */
  wq_model_ir *ir;
  wq_graph *g = load_mnist(&ir);
  if (g) {
    CHECK_MSG(wq_quant_config_check_nodes(&cfg, g, &err) == WQ_OK, "%s", err.message);
    CHECK(parse(&cfg, "{\"exclude\": [\"Plus214\", \"Plus2l4\"]}", &err) == WQ_OK);
    CHECK(wq_quant_config_check_nodes(&cfg, g, &err) == WQ_ERR_INVALID_ARG);
    CHECK_MSG(strcmp(err.message, "exclude[1]: the model has no node named \"Plus2l4\" (unnamed "
                                  "ONNX nodes are called <op>_<index>; `wasmq info --lowered` "
                                  "lists them)") == 0,
              "%s", err.message);
  }
  wq_model_ir_free(ir);
  wq_quant_config_free(&cfg);
}

static void test_layering(void) {
  wq_quant_config cfg;
  wq_quant_config_default(&cfg);
  wq_error err;
  /* uint8 brings [0, 255]; an explicit bound wins over the derived one. */
  CHECK(parse(&cfg, "{\"activation\": {\"dtype\": \"uint8\", \"qmax\": 200}}", &err) == WQ_OK);
  CHECK(cfg.activation.qmin == 0 && cfg.activation.qmax == 200);
  /* Affine int8 weights get the full range, symmetric ones the narrow one. */
  CHECK(parse(&cfg, "{\"weight\": {\"symmetric\": false}}", &err) == WQ_OK);
  CHECK(cfg.weight.qmin == -128 && cfg.weight.qmax == 127 && !cfg.weight.symmetric);
  CHECK(parse(&cfg, "{\"weight\": {\"symmetric\": true}}", &err) == WQ_OK);
  CHECK(cfg.weight.qmin == -127 && cfg.weight.qmax == 127);
  /* An op entry starts from the global spec as it is after this document. */
  CHECK(parse(&cfg,
              "{\"ops\": {\"Conv\": {\"activation\": {\"qmin\": 10}}},"
              " \"activation\": {\"dtype\": \"int8\"}}",
              &err) == WQ_OK);
  const wq_quant_spec *conv = wq_quant_config_activation_for(&cfg, "Conv");
  CHECK(conv->dtype == WQ_DT_INT8 && conv->qmin == 10 && conv->qmax == 127);
  /* A second document updates the same override instead of adding one. */
  CHECK(parse(&cfg, "{\"ops\": {\"Conv\": {\"keepFloat\": true, \"activation\": {\"qmax\": 100}}}}",
              &err) == WQ_OK);
  CHECK(cfg.n_overrides == 1);
  conv = wq_quant_config_activation_for(&cfg, "Conv");
  CHECK(conv->qmin == 10 && conv->qmax == 100 && cfg.overrides[0].keep_float);
  CHECK(!cfg.overrides[0].has_weight);
  /* "exclude" replaces the list. */
  CHECK(parse(&cfg, "{\"exclude\": [\"a\", \"b\"]}", &err) == WQ_OK);
  CHECK(parse(&cfg, "{\"exclude\": [\"c\"]}", &err) == WQ_OK);
  CHECK(cfg.n_exclude_nodes == 1 && strcmp(cfg.exclude_nodes[0], "c") == 0);
  /* A failing document leaves everything, overrides included, as it was. */
  CHECK(parse(&cfg, "{\"exclude\": [\"d\"], \"ops\": {\"Conv\": {\"keepFloat\": 1}}}", &err) ==
        WQ_ERR_INVALID_ARG);
  CHECK(cfg.n_exclude_nodes == 1 && strcmp(cfg.exclude_nodes[0], "c") == 0);
  CHECK(cfg.n_overrides == 1 && cfg.overrides[0].keep_float);
  CHECK(wq_quant_config_activation_for(&cfg, "Conv")->qmax == 100);
  wq_quant_config_free(&cfg);
}

static void test_config_errors(void) {
  /* Unknown keys, at each level. */
  expect_error("{\"activaton\": {}}",
               "activaton: unknown key (expected one of: activation, weight, calibration, io, "
               "minRange, ops, exclude, keepFloat, targetSnrDb, targetCosine, maxTime, holdout, "
               "warnCosine, images, maxMemoryBytes, biasCorrection, equalization) (at 1:15)");
  {
    wq_quant_config cfg;
    wq_quant_config_default(&cfg);
    CHECK(cfg.max_memory_bytes == 0);
    wq_error err;
    CHECK(parse(&cfg, "{\"maxMemoryBytes\": 65536}", &err) == WQ_OK &&
          cfg.max_memory_bytes == 65536);
    wq_quant_config_free(&cfg);
  }
  expect_error("{\"maxMemoryBytes\": -1}",
               "maxMemoryBytes: -1 is not a byte count (an integer >= 0) (at 1:20)");
  expect_error("{\"maxMemoryBytes\": 2.5}",
               "maxMemoryBytes: 2.5 is not a byte count (an integer >= 0) (at 1:20)");
  expect_error("{\"activation\": {\"granularity\": \"per-channel\"}}",
               "activation.granularity: unknown key (expected one of: dtype, symmetric, qmin, "
               "qmax) (at 1:32)");
  expect_error("{\"ops\": {\"Conv\": {\"weights\": {}}}}",
               "ops.Conv.weights: unknown key (expected one of: activation, weight, keepFloat) "
               "(at 1:30)");
  expect_error("{\"calibration\": {\"method\": \"minmax\", \"bin\": 10}}",
               "calibration.bin: unknown key (expected one of: method, averaging, percentile, "
               "bins) (at 1:45)");
  /* Wrong types. */
  expect_error("[]", "config: expected an object at the top level, got array (at 1:1)");
  expect_error("{\"weight\": []}", "weight: expected an object, got array (at 1:12)");
  expect_error("{\"weight\": {\"symmetric\": \"yes\"}}",
               "weight.symmetric: expected a boolean, got string (at 1:26)");
  expect_error("{\"keepFloat\": 1.5}", "keepFloat: expected an integer, got 1.5 (at 1:15)");
  expect_error("{\"keepFloat\": -1}", "keepFloat: -1 is outside [0, 2147483647] (at 1:15)");
  expect_error("{\"exclude\": \"conv1\"}", "exclude: expected an array, got string (at 1:13)");
  expect_error("{\"exclude\": [\"a\", 3]}", "exclude[1]: expected a string, got number (at 1:19)");
  expect_error("{\"exclude\": [\"a\", \"a\"]}",
               "exclude[1]: node \"a\" is listed twice (also exclude[0]) (at 1:19)");
  expect_error("{\"exclude\": [\"\"]}", "exclude[0]: empty node name (at 1:14)");
  expect_error("{\"ops\": {\"Conv\": {\"keepFloat\": null}}}",
               "ops.Conv.keepFloat: expected a boolean, got null (at 1:32)");
  /* Enumerations. */
  expect_error("{\"activation\": {\"dtype\": \"int16\"}}",
               "activation.dtype: \"int16\" is not one of \"int8\", \"uint8\" (at 1:26)");
  expect_error("{\"io\": \"float32\"}",
               "io: \"float32\" is not one of \"float\", \"int8\", \"uint8\" (at 1:8)");
  expect_error("{\"calibration\": {\"method\": \"entropy\"}}",
               "calibration.method: \"entropy\" is not one of \"minmax\", \"moving-average\", "
               "\"percentile\", \"mse\", \"auto\", \"tensor\" (at 1:28)");
  expect_error("{\"weight\": {\"granularity\": \"per-row\"}}",
               "weight.granularity: \"per-row\" is not one of \"per-tensor\", \"per-channel\", "
               "\"per-group\" (at 1:28)");
  /* Code ranges. */
  expect_error("{\"ops\": {\"Conv\": {\"weight\": {\"qmin\": -200}}}}",
               "ops.Conv.weight.qmin: -200 is outside int8 [-128, 127] (at 1:38)");
  expect_error("{\"activation\": {\"dtype\": \"uint8\", \"qmin\": -1}}",
               "activation.qmin: -1 is outside uint8 [0, 255] (at 1:43)");
  expect_error("{\"activation\": {\"qmax\": 128}}",
               "activation.qmax: 128 is outside int8 [-128, 127] (at 1:25)");
  expect_error("{\"activation\": {\"qmin\": 5, \"qmax\": 5}}",
               "activation.qmin: qmin 5 must be below qmax 5 (at 1:25)");
  expect_error("{\"weight\": {\"qmax\": -127}}",
               "weight.qmax: qmin -127 must be below qmax -127 (at 1:21)");
  /* Groups. */
  expect_error("{\"weight\": {\"granularity\": \"per-group\"}}",
               "weight.granularity: \"per-group\" needs groupSize (elements per group) (at 1:28)");
  expect_error("{\"weight\": {\"granularity\": \"per-group\", \"groupSize\": 0}}",
               "weight.groupSize: 0 is outside [1, 2147483647] (at 1:54)");
  expect_error("{\"weight\": {\"groupSize\": 32}}",
               "weight.groupSize: only used with granularity \"per-group\" (at 1:26)");
  /* Calibration settings. */
  expect_error("{\"calibration\": {\"percentile\": 0}}",
               "calibration.percentile: 0 is not in (0, 100] (at 1:32)");
  expect_error("{\"calibration\": {\"percentile\": 100.5}}",
               "calibration.percentile: 100.5 is not in (0, 100] (at 1:32)");
  expect_error("{\"calibration\": {\"averaging\": 0}}",
               "calibration.averaging: 0 is not in (0, 1] (at 1:31)");
  expect_error("{\"calibration\": {\"bins\": 8}}",
               "calibration.bins: 8 is outside [16, 65536] (at 1:26)");
  expect_error("{\"minRange\": 0}", "minRange: 0 is not a positive range (at 1:14)");
  expect_error("{\"targetSnrDb\": -3}", "targetSnrDb: -3 is not in [0, 200] dB (at 1:17)");
  /* Op types come from the op registry. */
  expect_error("{\"ops\": {\"Convolution\": {}}}",
               "ops.Convolution: unknown op type (not an ONNX op wasmq implements) (at 1:25)");
  expect_error("{\"ops\": {\"conv\": {}}}",
               "ops.conv: unknown op type (not an ONNX op wasmq implements) (at 1:18)");
  expect_error("{\"ops\": {\"QuantizeLinear\": {}}}",
               "ops.QuantizeLinear: is already a quantized op; only float ops take settings (at "
               "1:28)");
  expect_error("{\"ops\": {\"Relu\": true}}",
               "ops.Relu: expected an object, got boolean (at 1:18)");
  /* Positions count lines and characters (not bytes). */
  expect_error("{\n  \"ops\": {\n    \"Conv\": {\"weight\": {\"qmin\": 300}}\n  }\n}",
               "ops.Conv.weight.qmin: 300 is outside int8 [-128, 127] (at 3:33)");
  expect_error("{\"exclude\": [\"\xc3\xa9\xc3\xa9\", 1]}",
               "exclude[1]: expected a string, got number (at 1:20)");
}

/* Syntax errors: WQ_ERR_INVALID_ARG from the config parser, with the
 * reader's "LINE:COLUMN: what" message. */
static void test_syntax_errors(void) {
  expect_error("", "1:1: unexpected end of input, expected a value");
  expect_error("{\"io\": \"float\",}", "1:16: expected a string key in an object");
  expect_error("{\"io\": \"float\"} x", "1:17: unexpected text after the JSON value");
  expect_error("// comment\n{}", "1:1: expected a value");
  expect_error("{\"io\" \"float\"}", "1:7: expected ':' after an object key");
  expect_error("{\"io\": \"float\" \"x\"}", "1:16: expected ',' or '}' in an object");
  expect_error("{\"exclude\": [\"a\" \"b\"]}", "1:18: expected ',' or ']' in an array");
  expect_error("{\"io\": \"float\", \"io\": \"int8\"}", "1:17: duplicate key \"io\"");
  expect_error("{\"io\": \"float}", "1:8: unterminated string");
  expect_error("{\"keepFloat\": 01}", "1:16: numbers cannot have leading zeros");
  expect_error("{\"keepFloat\": 1.}", "1:17: expected a digit after the decimal point");
  expect_error("{\"keepFloat\": 1e}", "1:17: expected a digit in the exponent");
  expect_error("{\"keepFloat\": +1}", "1:15: expected a value");
  expect_error("{\"keepFloat\": NaN}", "1:15: expected a value");
  expect_error("{\"minRange\": 1e999}", "1:14: number out of range");
  expect_error("{\"keepFloat\": tru}", "1:15: expected a value");
  expect_error("{\"io\": \"fl\\x\"}", "1:11: unknown escape in a string");
  expect_error("{\"io\": \"\\u12G4\"}", "1:13: \\u needs four hex digits");
  expect_error("{\"io\": \"\\ud800\"}", "1:9: high surrogate \\u escape without its low half");
  expect_error("{\"io\": \"\\udc00\"}", "1:9: unpaired low surrogate \\u escape");
  expect_error("{\"io\": \"\\u0000\"}", "1:9: \\u0000 is not allowed in a string");
  expect_error("{\"io\": \"a\tb\"}", "1:10: control character in a string (escape it)");
  expect_error("{\"io\": \"\xff\"}", "1:9: invalid UTF-8 in a string");
  expect_error("{\"io\": \"\xed\xa0\x80\"}", "1:9: invalid UTF-8 in a string");
  expect_error("{\n\n   ]", "3:4: expected a string key in an object");

  /* Depth: 64 levels parse, 65 do not. */
  char deep[200];
  size_t len = 0;
  deep[len++] = '{';
  memcpy(deep + len, "\"exclude\":", 10);
  len += 10;
  for (int i = 0; i < 63; i++)
    deep[len++] = '[';
  for (int i = 0; i < 63; i++)
    deep[len++] = ']';
  deep[len++] = '}';
  wq_json v;
  wq_error err;
  CHECK(wq_json_parse(deep, len, &v, &err) == WQ_OK);
  wq_json_free(&v);
  memmove(deep + 12, deep + 11, len - 11);
  deep[11] = '[';
  len++;
  memmove(deep + len - 1, deep + len - 2, 2);
  deep[len - 2] = ']';
  len++;
  CHECK(wq_json_parse(deep, len, &v, &err) == WQ_ERR_PARSE);
  CHECK_MSG(strcmp(err.message, "1:75: nested deeper than 64 levels") == 0, "%s", err.message);
  CHECK(v.type == WQ_JSON_NULL && v.count == 0);
}

static void test_json_reader(void) {
  const char *text = "  {\"s\": \"a\\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\\ud83d\\ude00\",\n"
                     "\"n\": [-0.5e2, 1E+2, 0, 3.25, -0],\n \"x\": {\"t\": true, \"f\": false, "
                     "\"z\": null, \"e\": {}, \"a\": []}}  \n";
  wq_json v;
  wq_error err;
  CHECK_MSG(wq_json_parse(text, strlen(text), &v, &err) == WQ_OK, "%s", err.message);
  CHECK(v.type == WQ_JSON_OBJECT && v.count == 3 && v.line == 1 && v.column == 3);
  const wq_json *s = wq_json_member(&v, "s");
  CHECK(s && s->type == WQ_JSON_STRING &&
        strcmp(s->string, "a\"\\/\b\f\n\r\t\xc3\xa9\xf0\x9f\x98\x80") == 0);
  const wq_json *n = wq_json_member(&v, "n");
  CHECK(n && n->type == WQ_JSON_ARRAY && n->count == 5 && n->line == 2 && n->column == 6);
  if (n && n->count == 5) {
    CHECK(n->items[0].number == -50.0 && n->items[1].number == 100.0);
    CHECK(n->items[2].number == 0.0 && n->items[3].number == 3.25 && n->items[4].number == 0.0);
    CHECK(n->items[1].line == 2 && n->items[1].column == 15);
  }
  const wq_json *x = wq_json_member(&v, "x");
  CHECK(x && x->count == 5 && x->line == 3 && x->column == 7);
  CHECK(wq_json_member(x, "t")->boolean && !wq_json_member(x, "f")->boolean);
  CHECK(wq_json_member(x, "t")->type == WQ_JSON_BOOL);
  CHECK(wq_json_member(x, "z")->type == WQ_JSON_NULL);
  CHECK(wq_json_member(x, "e")->type == WQ_JSON_OBJECT && wq_json_member(x, "e")->count == 0);
  CHECK(wq_json_member(x, "a")->type == WQ_JSON_ARRAY && wq_json_member(x, "a")->count == 0);
  CHECK(wq_json_member(x, "missing") == NULL && wq_json_member(s, "s") == NULL);
  wq_json_free(&v);

  /* Scalars at the top level and a NUL byte inside the buffer. */
  CHECK(wq_json_parse("42", 2, &v, &err) == WQ_OK && v.type == WQ_JSON_NUMBER && v.number == 42);
  CHECK(wq_json_parse("4\0", 2, &v, &err) == WQ_ERR_PARSE);
  CHECK_MSG(strcmp(err.message, "1:2: unexpected text after the JSON value") == 0, "%s",
            err.message);
  /* Only the n bytes given are read. */
  CHECK(wq_json_parse("1234", 2, &v, &err) == WQ_OK && v.number == 12);
}

/* Mutations of the example file (bytes flipped, replaced with JSON syntax,
 * cut short): each parses or fails with WQ_ERR_INVALID_ARG and a message,
 * never crashes (ASan), and a failure leaves the config untouched. */
static void test_mutations(void) {
  const char *src = getenv("WQ_SOURCE_DIR");
  char path[1024];
  snprintf(path, sizeof path, "%s/docs/examples/quantize-config.json", src ? src : ".");
  size_t n;
  char *json = (char *)wq_test_read_file(path, &n);
  if (!json || n == 0) {
    CHECK_MSG(0, "cannot read %s", path);
    free(json);
    return;
  }
  char *mutant = malloc(n);
  static const char syntax[] = "{}[]\",:0-e.\"\\u tfn\n\x80\xff";
  uint32_t state = 12345;
  int parsed = 0, failed = 0;
  for (int round = 0; round < 3000; round++) {
    memcpy(mutant, json, n);
    size_t len = n;
    int edits = 1 + round % 4;
    for (int e = 0; e < edits; e++) {
      state = state * 1664525u + 1013904223u;
      size_t at = (state >> 8) % len;
      if ((state & 3) == 0)
        mutant[at] = (char)(state >> 16);
      else
        mutant[at] = syntax[(state >> 16) % (sizeof syntax - 1)];
    }
    if (round % 5 == 0)
      len = (state >> 4) % n;
    wq_quant_config cfg;
    wq_quant_config_default(&cfg);
    wq_error err;
    wq_error_clear(&err);
    wq_status st = wq_quant_config_parse_json(&cfg, mutant, len, &err);
    if (st == WQ_OK) {
      parsed++;
    } else {
      failed++;
      CHECK_MSG(st == WQ_ERR_INVALID_ARG && err.message[0], "round %d: %d", round, (int)st);
      CHECK(cfg.n_overrides == 0 && cfg.n_exclude_nodes == 0 && cfg.weight.qmin == -127);
    }
    wq_quant_config_free(&cfg);
  }
  /* Both outcomes happen (a mutation inside a string or number can stay valid). */
  CHECK_MSG(parsed > 0 && failed > 2000, "%d parsed, %d failed", parsed, failed);
  free(mutant);
  free(json);
}

int main(void) {
  test_defaults();
  test_example_file();
  test_layering();
  test_config_errors();
  test_syntax_errors();
  test_json_reader();
  test_mutations();
  WQ_TEST_END();
}
