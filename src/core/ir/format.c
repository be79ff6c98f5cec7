#include "format.h"

#include <stdint.h>
#include <string.h>

/* Output so far; len counts what did not fit too (the return value). */
typedef struct {
  char *buf;
  size_t cap, len;
} sink;

static void put(sink *s, char c) {
  if (s->len + 1 < s->cap)
    s->buf[s->len] = c;
  s->len++;
}

static void put_n(sink *s, char c, size_t n) {
  while (n--)
    put(s, c);
}

/* One converted argument, ready to write: a string ('s': %s, %c, inf, nan),
 * an integer ('d': %d %u %x) or a float's exact digits in fixed ('f') or
 * exponent ('e') style. */
typedef struct {
  char style, sign; /* sign: '-' or 0 */
  char ch;          /* %c's character (str points at it) */
  const char *str;
  size_t len;
  unsigned long long u;
  unsigned base;
  const char *dig; /* digits of a float, first one weighing 10^x10, */
  int n, x10;      /* no trailing zeros (none at all for 0) */
  int prec;        /* digits after the point */
} conv;

/* Multiplies a base-1e9 number (little-endian limbs) by f. */
static void mul_small(uint32_t *limb, int *n, uint32_t f) {
  uint64_t carry = 0;
  for (int i = 0; i < *n; i++) {
    uint64_t t = (uint64_t)limb[i] * f + carry;
    limb[i] = (uint32_t)(t % 1000000000u);
    carry = t / 1000000000u;
  }
  while (carry) {
    limb[(*n)++] = (uint32_t)(carry % 1000000000u);
    carry /= 1000000000u;
  }
}

/* The exact decimal digits of a finite |x| into d (at most 767 of them,
 * no leading or trailing zeros, none for 0); *x10 is the power of ten of the
 * first. x = m * 2^e is written as the integer m * 2^e, or as m * 5^-e with
 * -e digits after the point. Returns the count. */
static int exact_digits(double x, char *d, int *x10) {
  uint64_t bits;
  memcpy(&bits, &x, sizeof bits);
  int biased = (int)(bits >> 52 & 0x7ff);
  uint64_t m = bits & ((1ull << 52) - 1);
  if (biased)
    m |= 1ull << 52;
  else
    biased = 1;
  int e = biased - 1075, frac = 0, n = 0;
  uint32_t limb[90]; /* 2^53 * 5^1074 has 767 digits: 86 limbs */
  for (; m; m /= 1000000000u)
    limb[n++] = (uint32_t)(m % 1000000000u);
  *x10 = 0;
  if (!n)
    return 0;
  for (int k; e > 0; e -= k) {
    k = e < 31 ? e : 31;
    mul_small(limb, &n, 1u << k);
  }
  for (frac = -e; e < 0; e += 13) {
    uint32_t p = 1;
    for (int i = 0; i < 13 && i < -e; i++)
      p *= 5;
    mul_small(limb, &n, p);
  }
  int len = 0;
  for (int i = n - 1; i >= 0; i--) {
    char nine[9];
    uint32_t v = limb[i];
    for (int k = 8; k >= 0; k--, v /= 10)
      nine[k] = (char)('0' + v % 10);
    int k = 0;
    while (i == n - 1 && nine[k] == '0')
      k++;
    for (; k < 9; k++)
      d[len++] = nine[k];
  }
  *x10 = len - frac - 1;
  while (d[len - 1] == '0')
    len--;
  return len;
}

/* Rounds the n digits d (first weighing 10^*x10) to their first k, ties to
 * even as C's conversions do; returns the new count, trailing zeros dropped. */
static int round_digits(char *d, int n, int k, int *x10) {
  if (k >= n)
    return n;
  if (k < 0)
    return 0;
  int up = d[k] > '5' || (d[k] == '5' && (k + 1 < n || (k > 0 && (d[k - 1] - '0') % 2)));
  n = k;
  if (up) {
    int i = k - 1;
    while (i >= 0 && d[i] == '9')
      i--;
    if (i >= 0) {
      d[i]++;
      n = i + 1;
    } else { /* 99.9 -> 100: one digit, one power of ten higher */
      d[0] = '1';
      n = 1;
      ++*x10;
    }
  }
  while (n > 0 && d[n - 1] == '0')
    n--;
  return n;
}

static char digit_at(const conv *c, int i) { return i >= 0 && i < c->n ? c->dig[i] : '0'; }

/* Writes c (sign, then `zeros` zeros, then the text). */
static void body(sink *s, const conv *c, size_t zeros) {
  if (c->sign)
    put(s, c->sign);
  put_n(s, '0', zeros);
  if (c->style == 's') {
    for (size_t i = 0; i < c->len; i++)
      put(s, c->str[i]);
  } else if (c->style == 'd') {
    char t[24];
    int k = 0;
    unsigned long long u = c->u;
    do
      t[k++] = "0123456789abcdef"[u % c->base];
    while (u /= c->base);
    while (k)
      put(s, t[--k]);
  } else {
    int fixed = c->style == 'f', first = fixed ? c->x10 : 0;
    if (first < 0)
      put(s, '0');
    for (int i = 0; i <= first; i++)
      put(s, digit_at(c, i));
    if (c->prec > 0)
      put(s, '.');
    for (int j = 1; j <= c->prec; j++)
      put(s, digit_at(c, first + j));
    if (!fixed) {
      int e = c->x10 < 0 ? -c->x10 : c->x10;
      put(s, 'e');
      put(s, c->x10 < 0 ? '-' : '+');
      if (e >= 100)
        put(s, (char)('0' + e / 100));
      put(s, (char)('0' + e / 10 % 10));
      put(s, (char)('0' + e % 10));
    }
  }
}

int wq_vformat(char *buf, size_t cap, const char *fmt, va_list ap) {
  sink s = {buf, cap, 0};
  char digits[800];
  for (const char *f = fmt; *f; f++) {
    if (*f != '%') {
      put(&s, *f);
      continue;
    }
    int left = 0, zero = 0, width = 0, longs = 0, size = 0;
    conv c = {.prec = -1};
    for (f++; *f == '-' || *f == '0'; f++) {
      if (*f == '-')
        left = 1;
      else
        zero = 1;
    }
    if (*f == '*') {
      width = va_arg(ap, int);
      if (width < 0) {
        left = 1;
        width = -width;
      }
      f++;
    }
    while (*f >= '0' && *f <= '9')
      width = width * 10 + (*f++ - '0');
    if (*f == '.') {
      c.prec = 0;
      if (*++f == '*') {
        c.prec = va_arg(ap, int);
        f++;
      }
      while (*f >= '0' && *f <= '9')
        c.prec = c.prec * 10 + (*f++ - '0');
    }
    for (; *f == 'l'; f++)
      longs++;
    if (*f == 'z') {
      size = 1;
      f++;
    }
    if (!*f)
      break;
    c.style = 'd';
    c.base = 10;
    switch (*f) {
    case 'd':
    case 'i': {
      long long v = longs > 1 ? va_arg(ap, long long)
                    : longs   ? va_arg(ap, long)
                    : size    ? (long long)va_arg(ap, ptrdiff_t)
                              : va_arg(ap, int);
      c.u = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
      c.sign = v < 0 ? '-' : 0;
      break;
    }
    case 'x':
      c.base = 16;
      /* fall through */
    case 'u':
      c.u = longs > 1 ? va_arg(ap, unsigned long long)
            : longs   ? va_arg(ap, unsigned long)
            : size    ? va_arg(ap, size_t)
                      : va_arg(ap, unsigned);
      break;
    case 'c':
      c.ch = (char)va_arg(ap, int);
      c.str = &c.ch;
      c.len = 1;
      c.style = 's';
      break;
    case 's':
      c.str = va_arg(ap, const char *);
      if (!c.str)
        c.str = "(null)";
      while ((c.prec < 0 || c.len < (size_t)c.prec) && c.str[c.len])
        c.len++;
      c.style = 's';
      break;
    case 'f':
    case 'e':
    case 'g': {
      double x = va_arg(ap, double);
      uint64_t bits;
      memcpy(&bits, &x, sizeof bits);
      c.sign = bits >> 63 ? '-' : 0;
      if ((bits >> 52 & 0x7ff) == 0x7ff) {
        c.str = bits << 12 ? "nan" : "inf";
        c.len = 3;
        c.style = 's';
        break;
      }
      int p = c.prec < 0 ? 6 : c.prec;
      c.n = exact_digits(x, digits, &c.x10);
      c.dig = digits;
      c.style = *f;
      if (*f == 'f') {
        c.n = round_digits(digits, c.n, c.x10 + p + 1, &c.x10);
      } else if (*f == 'e') {
        c.n = round_digits(digits, c.n, p + 1, &c.x10);
      } else { /* %g: P significant digits, fixed if -4 <= exponent < P; no trailing zeros */
        p += !p;
        c.n = round_digits(digits, c.n, p, &c.x10);
        c.style = c.x10 < p && c.x10 >= -4 ? 'f' : 'e';
        p = c.n - 1 - (c.style == 'f' ? c.x10 : 0);
        p = p < 0 ? 0 : p;
      }
      c.prec = p;
      break;
    }
    default: /* '%', or a conversion outside the subset: written as is */ put(&s, *f); continue;
    }
    sink count = {0};
    body(&count, &c, 0);
    size_t pad = (size_t)width > count.len ? (size_t)width - count.len : 0;
    int zeros = zero && !left && c.style != 's';
    if (!left && !zeros)
      put_n(&s, ' ', pad);
    body(&s, &c, zeros ? pad : 0);
    if (left)
      put_n(&s, ' ', pad);
  }
  if (cap)
    buf[s.len < cap ? s.len : cap - 1] = '\0';
  return (int)s.len;
}

int wq_format(char *buf, size_t cap, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = wq_vformat(buf, cap, fmt, ap);
  va_end(ap);
  return n;
}
