/* Calibration samples for `wasmq quantize --calib SPEC`, read one at a time
 * (streaming: only the current sample is in memory). SPEC is one of
 *
 *   random:N:LO..HI  N seeded samples from the model's declared inputs:
 *              sample k fills input i as `wasmq run --input NAME=random:SEED`
 *              does with SEED = k * n_inputs + i, float inputs then mapped
 *              from [0, 1) to [LO, HI); a symbolic batch dim (dim 0) becomes
 *              1, any other symbolic dim is an error naming --shape. Without
 *              LO..HI it is an error: ranges calibrated on data of the wrong
 *              range are silently wrong.
 *   DIR        holding ONNX test-data folders: DIR/test_data_set_N/input_K.pb
 *              (TensorProto files; input K is the model's K-th input), one
 *              sample per folder;
 *   DIR        holding .npy files named by input: DIR/<input>.npy is one
 *              sample; DIR/<sample>/<input>.npy (any folder names) is one
 *              sample per folder. '/', '\' and ':' in an input name are '_'
 *              in its file name, as in `run --out`.
 *
 * Folders are taken in natural order (test_data_set_2 before _10). Every
 * sample must match the model's inputs: same dtype, same rank, same size on
 * every fixed dim (a symbolic dim takes any size); float data must be finite.
 * Errors name the file and the input. */
#ifndef WQ_CLI_CALIB_DATA_H
#define WQ_CLI_CALIB_DATA_H

#include <stdbool.h>

#include "../ir/graph.h"

typedef struct wq_calib_data wq_calib_data;

/* Opens SPEC for the inputs of `g` (g->inputs, with their declared dtype and
 * shape). Checks at once what needs no sample data: the folder's layout,
 * that there is at least one sample and that every sample has a file for
 * every input and none for inputs the model lacks. On failure *out is NULL. */
wq_status wq_calib_open(const char *spec, const wq_graph *g, wq_calib_data **out, wq_error *err);

/* Number of samples (the `total` of a progress report). */
int wq_calib_count(const wq_calib_data *c);

/* Reads the next sample. On WQ_OK with *got true, *values points to
 * g->n_inputs values in graph input order, owned by the reader and valid
 * until the next call or wq_calib_close. *got is false after the last
 * sample. A failed sample can be skipped by calling again. */
wq_status wq_calib_next(wq_calib_data *c, const wq_value **values, bool *got, wq_error *err);

/* Name of the sample last read ("test_data_set_3", "7", "random sample 2"). */
const char *wq_calib_sample_name(const wq_calib_data *c);

/* True for random data, with its float range [*lo, *hi). */
bool wq_calib_random_range(const wq_calib_data *c, double *lo, double *hi);

void wq_calib_close(wq_calib_data *c);

#endif
