/* MaxPool on int8 / uint8 (NCHW): the int8 models pool in NHWC
 * (kernels/simd/nhwc_wasmsimd.c), so these are built for size
 * (wasm_build/build.sh). */
#include "ref_pool_impl.h"

DEFINE_MAXPOOL(wq_ref_maxpool_i8, int8_t)
DEFINE_MAXPOOL(wq_ref_maxpool_u8, uint8_t)
