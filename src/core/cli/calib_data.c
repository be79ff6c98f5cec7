/* Calibration data readers; see calib_data.h for the accepted layouts. */
#define _POSIX_C_SOURCE 200809L
#include "calib_data.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "../api/wasmq.h"
#include "files.h"
#include "npy.h"
#include "random_fill.h"

#define CALIB_PATH_MAX 4096
/* random:N beyond this is surely a typo (each sample is one float run). */
#define CALIB_RANDOM_MAX 1000000

typedef enum {
  CALIB_RANDOM,
  CALIB_TEST_DATA,   /* DIR/test_data_set_N/input_K.pb */
  CALIB_NPY_ONE,     /* DIR/<input>.npy */
  CALIB_NPY_FOLDERS, /* DIR/<sample>/<input>.npy */
} calib_kind;

typedef struct {
  char *name;
  char *file_stem; /* name with '/', '\' and ':' as '_' (npy layouts) */
  wq_dtype dtype;
  int rank; /* -1: not declared */
  int64_t dims[WQ_MAX_RANK];
  char *dim_params[WQ_MAX_RANK];
} calib_input;

struct wq_calib_data {
  calib_kind kind;
  char *dir;
  char **samples; /* sample folder names (test data, npy folders) */
  int n_samples;
  int next; /* index of the sample the next call reads */
  calib_input *inputs;
  int n_inputs;
  wq_value *values; /* the current sample (data owned) */
  double lo, hi;    /* random: float inputs uniform in [lo, hi) */
  char sample_name[256];
};

static const char *dtype_label(wq_dtype dt) {
  return dt == WQ_DT_FLOAT ? "float32" : wq_dtype_name(dt);
}

static void free_values(wq_calib_data *c) {
  for (int i = 0; c->values && i < c->n_inputs; i++) {
    free(c->values[i].data);
    c->values[i].data = NULL;
  }
}

void wq_calib_close(wq_calib_data *c) {
  if (!c)
    return;
  free_values(c);
  free(c->values);
  for (int i = 0; i < c->n_inputs; i++) {
    free(c->inputs[i].name);
    free(c->inputs[i].file_stem);
    for (int d = 0; d < WQ_MAX_RANK; d++)
      free(c->inputs[i].dim_params[d]);
  }
  free(c->inputs);
  for (int i = 0; c->samples && i < c->n_samples; i++)
    free(c->samples[i]);
  free(c->samples);
  free(c->dir);
  free(c);
}

static wq_status oom(wq_error *err) {
  return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "calibration data: out of memory");
}

static wq_status copy_inputs(wq_calib_data *c, const wq_graph *g, wq_error *err) {
  c->inputs = calloc((size_t)(g->n_inputs ? g->n_inputs : 1), sizeof *c->inputs);
  c->values = calloc((size_t)(g->n_inputs ? g->n_inputs : 1), sizeof *c->values);
  if (!c->inputs || !c->values)
    return oom(err);
  for (int i = 0; i < g->n_inputs; i++, c->n_inputs++) {
    const wq_tensor *t = &g->tensors[g->inputs[i]];
    calib_input *in = &c->inputs[i];
    in->dtype = t->dtype;
    in->rank = t->rank;
    in->name = wq_strdup(t->name);
    in->file_stem = wq_strdup(t->name);
    if (!in->name || !in->file_stem)
      return oom(err);
    for (char *ch = in->file_stem; *ch; ch++)
      if (*ch == '/' || *ch == '\\' || *ch == ':')
        *ch = '_';
    for (int d = 0; d < t->rank && d < WQ_MAX_RANK; d++) {
      in->dims[d] = t->dims[d];
      if (t->dim_params[d] && !(in->dim_params[d] = wq_strdup(t->dim_params[d])))
        return oom(err);
    }
  }
  return WQ_OK;
}

/* "[1,3,batch,224]" for a declared shape. */
static void format_declared(const calib_input *in, char *buf, size_t cap) {
  size_t len = (size_t)snprintf(buf, cap, "[");
  for (int d = 0; d < in->rank && len < cap; d++) {
    const char *sep = d ? "," : "";
    if (in->dims[d] >= 0)
      len += (size_t)snprintf(buf + len, cap - len, "%s%lld", sep, (long long)in->dims[d]);
    else
      len += (size_t)snprintf(buf + len, cap - len, "%s%s", sep,
                              in->dim_params[d] ? in->dim_params[d] : "?");
  }
  if (len < cap)
    snprintf(buf + len, cap - len, "]");
}

/* ---- natural order and folder listing ---- */

/* strcmp, except that runs of digits compare as numbers. */
static int natural_compare(const char *a, const char *b) {
  while (*a && *b) {
    if (*a >= '0' && *a <= '9' && *b >= '0' && *b <= '9') {
      while (*a == '0')
        a++;
      while (*b == '0')
        b++;
      size_t la = strspn(a, "0123456789"), lb = strspn(b, "0123456789");
      if (la != lb)
        return la < lb ? -1 : 1;
      int c = strncmp(a, b, la);
      if (c)
        return c;
      a += la;
      b += lb;
    } else {
      if (*a != *b)
        return (unsigned char)*a < (unsigned char)*b ? -1 : 1;
      a++;
      b++;
    }
  }
  return *a ? 1 : *b ? -1 : 0;
}

static int compare_names(const void *a, const void *b) {
  int c = natural_compare(*(char *const *)a, *(char *const *)b);
  return c ? c : strcmp(*(char *const *)a, *(char *const *)b);
}

/* buf = a/b[/c] (c may be NULL); false when it does not fit. */
static bool join_path(char *buf, size_t cap, const char *a, const char *b, const char *c) {
  size_t la = strlen(a), lb = strlen(b), lc = c ? strlen(c) + 1 : 0;
  if (la + 1 + lb + lc >= cap)
    return false;
  memcpy(buf, a, la);
  buf[la] = '/';
  memcpy(buf + la + 1, b, lb);
  if (c) {
    buf[la + 1 + lb] = '/';
    memcpy(buf + la + 2 + lb, c, lc - 1);
  }
  buf[la + 1 + lb + lc] = '\0';
  return true;
}

static wq_status path_too_long(const char *dir, wq_error *err) {
  return wq_fail(err, WQ_ERR_INVALID_ARG, NULL, "calibration path under %s is too long", dir);
}

static bool ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && strcmp(s + n - k, suffix) == 0;
}

static bool is_dir(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool is_file(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

typedef struct {
  char **names;
  int n, cap;
} name_list;

static void name_list_free(name_list *l) {
  for (int i = 0; i < l->n; i++)
    free(l->names[i]);
  free(l->names);
  l->names = NULL;
  l->n = l->cap = 0;
}

static bool name_list_add(name_list *l, const char *name) {
  if (l->n == l->cap) {
    int cap = l->cap ? l->cap * 2 : 16;
    char **grown = realloc(l->names, (size_t)cap * sizeof *grown);
    if (!grown)
      return false;
    l->names = grown;
    l->cap = cap;
  }
  if (!(l->names[l->n] = wq_strdup(name)))
    return false;
  l->n++;
  return true;
}

/* True when `dir` holds a .png/.jpg/.jpeg file (any case). */
static bool holds_images(const char *dir) {
  DIR *d = opendir(dir);
  bool found = false;
  struct dirent *e;
  while (d && !found && (e = readdir(d))) {
    const char *dot = strrchr(e->d_name, '.');
    found = e->d_name[0] != '.' && dot &&
            (strcasecmp(dot, ".png") == 0 || strcasecmp(dot, ".jpg") == 0 ||
             strcasecmp(dot, ".jpeg") == 0);
  }
  if (d)
    closedir(d);
  return found;
}

/* Entries of `dir` (no hidden ones) split into folders and .npy files,
 * each sorted naturally. */
static wq_status list_dir(const char *dir, name_list *folders, name_list *npys, wq_error *err) {
  DIR *d = opendir(dir);
  if (!d)
    return wq_fail(err, WQ_ERR_IO, NULL, "cannot open calibration folder %s: %s", dir,
                   strerror(errno));
  struct dirent *e;
  wq_status st = WQ_OK;
  while (st == WQ_OK && (e = readdir(d))) {
    if (e->d_name[0] == '.')
      continue;
    char path[CALIB_PATH_MAX];
    bool ok = true;
    if (!join_path(path, sizeof path, dir, e->d_name, NULL))
      st = path_too_long(dir, err);
    else if (is_dir(path))
      ok = name_list_add(folders, e->d_name);
    else if (ends_with(e->d_name, ".npy") && is_file(path))
      ok = name_list_add(npys, e->d_name);
    if (!ok)
      st = oom(err);
  }
  closedir(d);
  if (st != WQ_OK) {
    name_list_free(folders);
    name_list_free(npys);
    return st;
  }
  if (folders->n > 1)
    qsort(folders->names, (size_t)folders->n, sizeof(char *), compare_names);
  if (npys->n > 1)
    qsort(npys->names, (size_t)npys->n, sizeof(char *), compare_names);
  return WQ_OK;
}

/* ---- layout checks at open ---- */

/* Path of input i's file in sample s. */
static wq_status input_path(const wq_calib_data *c, int s, int i, char *buf, size_t cap,
                            wq_error *err) {
  char file[CALIB_PATH_MAX];
  if (c->kind == CALIB_TEST_DATA) {
    if ((size_t)snprintf(file, sizeof file, "input_%d.pb", i) >= sizeof file)
      return path_too_long(c->dir, err);
  } else if ((size_t)snprintf(file, sizeof file, "%s.npy", c->inputs[i].file_stem) >= sizeof file) {
    return path_too_long(c->dir, err);
  }
  bool ok = c->kind == CALIB_NPY_ONE ? join_path(buf, cap, c->dir, file, NULL)
                                     : join_path(buf, cap, c->dir, c->samples[s], file);
  return ok ? WQ_OK : path_too_long(c->dir, err);
}

/* Every input has its file in sample s, and nothing else claims to be one. */
static wq_status check_sample_files(const wq_calib_data *c, int s, wq_error *err) {
  char path[CALIB_PATH_MAX], dir[CALIB_PATH_MAX];
  if (c->kind == CALIB_NPY_ONE)
    snprintf(dir, sizeof dir, "%s", c->dir);
  else if (!join_path(dir, sizeof dir, c->dir, c->samples[s], NULL))
    return path_too_long(c->dir, err);
  for (int i = 0; i < c->n_inputs; i++) {
    WQ_TRY(input_path(c, s, i, path, sizeof path, err));
    if (!is_file(path))
      return wq_fail(err, WQ_ERR_INVALID_ARG, NULL,
                     "calibration sample %s has no data for input '%s' (no %s)", dir,
                     c->inputs[i].name, path);
  }
  if (c->kind == CALIB_TEST_DATA) {
    /* One file past the model's inputs means the data is for another model. */
    WQ_TRY(input_path(c, s, c->n_inputs, path, sizeof path, err));
    if (is_file(path))
      return wq_fail(err, WQ_ERR_INVALID_ARG, NULL,
                     "calibration sample %s has more inputs than the model's %d (%s)", dir,
                     c->n_inputs, path);
    return WQ_OK;
  }
  name_list folders = {0}, npys = {0};
  WQ_TRY(list_dir(dir, &folders, &npys, err));
  wq_status st = WQ_OK;
  for (int k = 0; k < npys.n && st == WQ_OK; k++) {
    bool known = false;
    for (int i = 0; i < c->n_inputs && !known; i++)
      known = strncmp(npys.names[k], c->inputs[i].file_stem, strlen(npys.names[k]) - 4) == 0 &&
              strlen(c->inputs[i].file_stem) == strlen(npys.names[k]) - 4;
    if (!known) {
      char list[256] = "";
      size_t len = 0;
      for (int i = 0; i < c->n_inputs && len < sizeof list; i++)
        len += (size_t)snprintf(list + len, sizeof list - len, "%s%s.npy", i ? ", " : "",
                                c->inputs[i].file_stem);
      st = wq_fail(err, WQ_ERR_INVALID_ARG, NULL,
                   "%s/%s is named after no input of the model (expected: %s)", dir, npys.names[k],
                   list);
    }
  }
  name_list_free(&folders);
  name_list_free(&npys);
  return st;
}

static wq_status open_dir(wq_calib_data *c, const char *dir, wq_error *err) {
  name_list folders = {0}, npys = {0}, sets = {0};
  WQ_TRY(list_dir(dir, &folders, &npys, err));
  wq_status st = WQ_OK;
  for (int i = 0; i < folders.n && st == WQ_OK; i++)
    if (strncmp(folders.names[i], "test_data_set_", 14) == 0 &&
        !name_list_add(&sets, folders.names[i]))
      st = oom(err);
  if (st == WQ_OK) {
    if (sets.n > 0) {
      c->kind = CALIB_TEST_DATA; /* other folders and files are ignored */
      c->samples = sets.names;
      c->n_samples = sets.n;
      sets = (name_list){0};
    } else if (npys.n > 0 && folders.n > 0) {
      st = wq_fail(err, WQ_ERR_INVALID_ARG, NULL,
                   "calibration folder %s holds both .npy files (%s) and sample folders (%s): "
                   "use one layout",
                   dir, npys.names[0], folders.names[0]);
    } else if (npys.n > 0) {
      c->kind = CALIB_NPY_ONE;
      c->n_samples = 1;
    } else if (folders.n > 0) {
      c->kind = CALIB_NPY_FOLDERS;
      c->samples = folders.names;
      c->n_samples = folders.n;
      folders = (name_list){0};
    } else if (holds_images(dir)) {
      st = wq_fail(err, WQ_ERR_UNSUPPORTED, NULL,
                   "%s holds images: the native command reads .npy files and test_data_set_* "
                   "folders; `npx wasmq quantize` (same flags) decodes PNG/JPEG",
                   dir);
    } else {
      st = wq_fail(err, WQ_ERR_INVALID_ARG, NULL,
                   "empty calibration set: %s holds no test_data_set_* folder, no .npy file and "
                   "no sample folder",
                   dir);
    }
  }
  name_list_free(&folders);
  name_list_free(&npys);
  name_list_free(&sets);
  for (int s = 0; s < c->n_samples && st == WQ_OK; s++)
    st = check_sample_files(c, s, err);
  return st;
}

/* "LO..HI" (two finite numbers, LO < HI). The ".." is found first: strtod
 * would read "0." of "0..1" as a number. */
static bool parse_range(const char *s, double *lo, double *hi) {
  const char *dots = strstr(s, "..");
  char left[64];
  if (!dots || dots == s || (size_t)(dots - s) >= sizeof left)
    return false;
  memcpy(left, s, (size_t)(dots - s));
  left[dots - s] = 0;
  char *end;
  errno = 0;
  *lo = strtod(left, &end);
  if (*end)
    return false;
  const char *h = dots + 2;
  *hi = strtod(h, &end);
  return end != h && !*end && !errno && isfinite(*lo) && isfinite(*hi) && *lo < *hi;
}

static wq_status open_random(wq_calib_data *c, const char *spec, wq_error *err) {
  char *end;
  errno = 0;
  long n = strtol(spec, &end, 10);
  if (end == spec || (*end && *end != ':') || errno || n < 0 || n > CALIB_RANDOM_MAX)
    return wq_fail(err, WQ_ERR_INVALID_ARG, NULL,
                   "--calib random:N:LO..HI expects N in 1..%d, got random:%s", CALIB_RANDOM_MAX,
                   spec);
  if (n == 0)
    return wq_fail(err, WQ_ERR_INVALID_ARG, NULL, "empty calibration set: random:0");
  /* Ranges calibrated on data of the wrong range are silently wrong: the
   * caller has to say what range the model's inputs take. */
  if (!*end)
    return wq_fail(err, WQ_ERR_INVALID_ARG, NULL,
                   "--calib random:%ld needs the range of the model's float inputs: "
                   "random:%ld:LO..HI (e.g. random:%ld:0..1, random:%ld:-1..1, random:%ld:0..255); "
                   "real samples (--calib DIR) calibrate far better",
                   n, n, n, n, n);
  if (!parse_range(end + 1, &c->lo, &c->hi))
    return wq_fail(err, WQ_ERR_INVALID_ARG, NULL,
                   "--calib random:N:LO..HI expects a range such as -1..1 (LO < HI), got '%s'",
                   end + 1);
  for (int i = 0; i < c->n_inputs; i++) {
    const calib_input *in = &c->inputs[i];
    if (in->rank < 0 || wq_dtype_size(in->dtype) == 0)
      return wq_fail(err, WQ_ERR_INVALID_ARG, NULL,
                     "input '%s' (%s) has no declared shape or a dtype random data cannot fill: "
                     "give --calib DIR",
                     in->name, dtype_label(in->dtype));
    /* A batch dim becomes 1; any other size has to come from the user. */
    for (int d = 1; d < in->rank; d++)
      if (in->dims[d] < 0)
        return wq_fail(err, WQ_ERR_INVALID_ARG, NULL,
                       "input '%s' has the symbolic dim '%s' (dim %d): random data needs it "
                       "bound, e.g. --shape %s=1x3x224x224 with the size the model expects, or "
                       "real samples (--calib DIR)",
                       in->name, in->dim_params[d] ? in->dim_params[d] : "?", d, in->name);
  }
  c->kind = CALIB_RANDOM;
  c->n_samples = (int)n;
  return WQ_OK;
}

bool wq_calib_random_range(const wq_calib_data *c, double *lo, double *hi) {
  *lo = c->lo;
  *hi = c->hi;
  return c->kind == CALIB_RANDOM;
}

wq_status wq_calib_open(const char *spec, const wq_graph *g, wq_calib_data **out, wq_error *err) {
  *out = NULL;
  if (!spec || !g)
    return wq_fail(err, WQ_ERR_INVALID_ARG, NULL, "wq_calib_open: spec or graph is NULL");
  wq_calib_data *c = calloc(1, sizeof *c);
  if (!c)
    return oom(err);
  wq_status st = copy_inputs(c, g, err);
  if (st == WQ_OK && g->n_inputs == 0)
    st = wq_fail(err, WQ_ERR_INVALID_ARG, NULL, "the model has no inputs to calibrate with");
  if (st == WQ_OK) {
    if (strncmp(spec, "random:", 7) == 0) {
      st = open_random(c, spec + 7, err);
    } else {
      size_t len = strlen(spec);
      while (len > 1 && spec[len - 1] == '/')
        len--;
      if (!(c->dir = malloc(len + 1)))
        st = oom(err);
      else {
        memcpy(c->dir, spec, len);
        c->dir[len] = '\0';
        st = open_dir(c, c->dir, err);
      }
    }
  }
  if (st != WQ_OK) {
    wq_calib_close(c);
    return st;
  }
  *out = c;
  return WQ_OK;
}

int wq_calib_count(const wq_calib_data *c) { return c ? c->n_samples : 0; }

const char *wq_calib_sample_name(const wq_calib_data *c) { return c ? c->sample_name : ""; }

/* ---- reading one sample ---- */

/* dtype, rank, fixed dims and finiteness of value v read from `file`. */
static wq_status check_value(const calib_input *in, const wq_value *v, const char *file,
                             wq_error *err) {
  char want[256], got[256];
  if (v->dtype != in->dtype)
    return wq_fail(err, WQ_ERR_SHAPE, NULL, "%s: dtype %s, but the model's input '%s' is %s", file,
                   dtype_label(v->dtype), in->name, dtype_label(in->dtype));
  bool same = in->rank < 0 || v->rank == in->rank;
  for (int d = 0; same && in->rank >= 0 && d < in->rank; d++)
    same = in->dims[d] < 0 || in->dims[d] == v->dims[d];
  if (!same) {
    format_declared(in, want, sizeof want);
    wq_dims_format(v->dims, v->rank, got, sizeof got);
    return wq_fail(err, WQ_ERR_SHAPE, NULL, "%s: shape %s, but the model's input '%s' is %s", file,
                   got, in->name, want);
  }
  if (v->dtype == WQ_DT_FLOAT || v->dtype == WQ_DT_DOUBLE) {
    int64_t n = wq_value_numel(v);
    for (int64_t i = 0; i < n; i++) {
      double x = wq_value_get_double(v, i);
      if (!isfinite(x))
        return wq_fail(err, WQ_ERR_INVALID_ARG, NULL,
                       "%s: element %lld of input '%s' is %s (calibration data must be finite)",
                       file, (long long)i, in->name, isnan(x) ? "NaN" : "infinite");
    }
  }
  return WQ_OK;
}

static wq_status read_random(wq_calib_data *c, int s, wq_error *err) {
  for (int i = 0; i < c->n_inputs; i++) {
    const calib_input *in = &c->inputs[i];
    wq_value *v = &c->values[i];
    v->dtype = in->dtype;
    v->rank = in->rank;
    for (int d = 0; d < in->rank; d++)
      v->dims[d] = in->dims[d] < 0 ? 1 : in->dims[d];
    WQ_TRY(wq_shape_check(v->dims, v->rank, NULL, in->name, err));
    size_t nbytes = wq_value_nbytes(v);
    if (!(v->data = malloc(nbytes ? nbytes : 1)))
      return oom(err);
    uint32_t seed = (uint32_t)((uint64_t)s * (uint64_t)c->n_inputs + (uint64_t)i);
    wq_cli_fill_random(v, seed);
    /* From [0, 1) to [lo, hi) in double, rounded once: the JS reader's bytes. */
    if (v->dtype == WQ_DT_FLOAT)
      for (int64_t k = 0; k < wq_value_numel(v); k++) {
        float *x = &((float *)v->data)[k];
        *x = (float)(c->lo + (c->hi - c->lo) * (double)*x);
      }
  }
  return WQ_OK;
}

static wq_status read_file_value(wq_calib_data *c, int s, int i, wq_error *err) {
  char path[CALIB_PATH_MAX];
  WQ_TRY(input_path(c, s, i, path, sizeof path, err));
  uint8_t *bytes;
  size_t n;
  WQ_TRY(wq_cli_read_file(path, &bytes, &n, err));
  wq_error inner;
  wq_error_clear(&inner);
  wq_value *v = &c->values[i];
  wq_status st;
  if (c->kind == CALIB_TEST_DATA) {
    char name[256];
    st = wq_tensor_decode(bytes, n, v, name, sizeof name, &inner);
    /* Inputs go by position, as in the ONNX test runner; a name that says
     * otherwise is a mix-up worth stopping for. */
    if (st == WQ_OK && name[0] && strcmp(name, c->inputs[i].name) != 0)
      for (int k = 0; k < c->n_inputs; k++)
        if (k != i && strcmp(name, c->inputs[k].name) == 0) {
          free(bytes);
          return wq_fail(err, WQ_ERR_INVALID_ARG, NULL,
                         "%s holds the tensor '%s', the model's input %d, but input_%d.pb is "
                         "input %d ('%s')",
                         path, name, k, i, i, c->inputs[i].name);
        }
  } else {
    st = wq_npy_parse(bytes, n, v, &inner);
  }
  free(bytes);
  if (st != WQ_OK)
    return wq_fail(err, st, NULL, "%s: %s", path, inner.message);
  return check_value(&c->inputs[i], v, path, err);
}

wq_status wq_calib_next(wq_calib_data *c, const wq_value **values, bool *got, wq_error *err) {
  *got = false;
  *values = NULL;
  if (!c)
    return wq_fail(err, WQ_ERR_INVALID_ARG, NULL, "wq_calib_next: no reader");
  free_values(c);
  if (c->next >= c->n_samples)
    return WQ_OK;
  int s = c->next++;
  if (c->kind == CALIB_RANDOM)
    snprintf(c->sample_name, sizeof c->sample_name, "random sample %d", s);
  else if (c->kind == CALIB_NPY_ONE)
    snprintf(c->sample_name, sizeof c->sample_name, "%s", c->dir);
  else
    snprintf(c->sample_name, sizeof c->sample_name, "%s", c->samples[s]);
  wq_status st = WQ_OK;
  if (c->kind == CALIB_RANDOM)
    st = read_random(c, s, err);
  else
    for (int i = 0; i < c->n_inputs && st == WQ_OK; i++)
      st = read_file_value(c, s, i, err);
  if (st != WQ_OK) {
    free_values(c);
    return st;
  }
  *values = c->values;
  *got = true;
  return WQ_OK;
}
