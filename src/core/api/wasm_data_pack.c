/* Unpacks the .wasm's initialized data before anything reads it.
 *
 * Most of the module's initialized data is text (messages, format strings,
 * names). After the link, wasm_build/pack_data.mjs replaces the data up to
 * `wq_data_pack` with an LZ-packed copy of it, placed at the end of the
 * address range it unpacks to, and fills in `wq_data_pack`. The constructor
 * below expands it in place, once, when the module starts (the threaded
 * build's workers share the memory and run no constructors). A module that
 * was not packed (native builds do not compile this, the wasm test programs
 * skip the packer) keeps its placeholders and nothing happens.
 *
 * The stream, byte by byte:
 *   0x00-0x7f  that byte;
 *   0x80-0xdf  a match of ((c - 0x80) >> 4) + 3 bytes (3..8) at distance
 *              ((c & 15) << 8 | next byte) + 1 (1..4096);
 *   0xe0-0xfe  a match of c - 0xe0 + 3 bytes (3..33) at distance
 *              (next two bytes, big-endian) + 1 (1..65536);
 *   0xff       the next byte as is.
 * A match copies forward from already written output (it may overlap). The
 * packer places the stream so that writing never overtakes reading. */
#ifdef __EMSCRIPTEN__
#include <stdint.h>

/* magic, magic, where the data unpacks to, where the stream is, stream
 * length, unpacked length. Initialized to no zero bytes, so the linker
 * keeps every byte of it in the data the packer edits (found by its two
 * magic words); volatile, so the compiler reads what the packer wrote. */
#define WQ_UNPACKED 0xffffffffu
volatile uint32_t wq_data_pack[6] = {0x6b615071u, 0x31656c69u, WQ_UNPACKED,
                                     WQ_UNPACKED, WQ_UNPACKED, WQ_UNPACKED};

/* Before every other constructor, the C library's included (it uses
 * priorities up to 100): none of them may read the data, or write into its
 * range, before it is unpacked. */
__attribute__((constructor(1))) static void wq_data_unpack(void) {
  if (wq_data_pack[5] == WQ_UNPACKED)
    return;
  unsigned char *dst = (unsigned char *)(uintptr_t)wq_data_pack[2];
  const unsigned char *src = (const unsigned char *)(uintptr_t)wq_data_pack[3];
  const unsigned char *end = src + wq_data_pack[4];
  while (src < end) {
    unsigned c = *src++;
    if (c < 0x80) {
      *dst++ = (unsigned char)c;
      continue;
    }
    if (c == 0xff) {
      *dst++ = *src++;
      continue;
    }
    uint32_t len, dist;
    if (c < 0xe0) {
      len = ((c - 0x80) >> 4) + 3;
      dist = ((c & 15u) << 8 | src[0]) + 1;
      src += 1;
    } else {
      len = c - 0xe0 + 3;
      dist = ((uint32_t)src[0] << 8 | src[1]) + 1;
      src += 2;
    }
    const unsigned char *from = dst - dist;
    while (len--)
      *dst++ = *from++;
  }
  wq_data_pack[5] = WQ_UNPACKED;
}
#else
typedef int wq_data_pack_native_unused;
#endif
