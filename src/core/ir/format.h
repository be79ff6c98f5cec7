/* snprintf for the core's messages, reports and JSON. libc's printf costs the
 * shipped .wasm about 8 KB (its float conversion handles long double, hex
 * floats, every flag); this covers the subset the core writes, with output
 * byte-identical to C's snprintf for it:
 *   flags '-' and '0'; a field width and a precision (digits or '*');
 *   length modifiers l, ll and z; conversions d i u x c s f e g and %%.
 * Floats are converted exactly (correctly rounded, ties to even), like C's.
 * Returns the length the whole text needs, writes at most cap bytes
 * including the terminating NUL (none when cap is 0). */
#ifndef WQ_IR_FORMAT_H
#define WQ_IR_FORMAT_H

#include <stdarg.h>
#include <stddef.h>

int wq_vformat(char *buf, size_t cap, const char *fmt, va_list ap);

int wq_format(char *buf, size_t cap, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

#endif
