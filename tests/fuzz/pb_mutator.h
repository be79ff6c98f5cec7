/* A protobuf-aware mutator for ONNX models (any protobuf, really: it knows
 * the wire format, not the schema). It parses the bytes into a tree of
 * fields (length-delimited fields that parse as messages become subtrees),
 * changes one thing and writes the tree back with every enclosing length
 * fixed up, so the result still parses and reaches shape inference, lowering
 * and the kernels. Mutations:
 *   - a varint (attribute i/ints, dims, group, axis, data_type, zero points
 *     in int32_data...) becomes an edge value (0, 1, -1, 2^31-1, 2^62,
 *     INT64_MAX, INT64_MIN...) or a nearby one;
 *   - a fixed32/64 (float attributes, scales) becomes 0, -0, NaN, inf,
 *     denormals, huge or tiny values;
 *   - a packed-varint payload (ints attributes, dims lists, int64_data) has
 *     one entry changed or dropped;
 *   - a bytes payload (raw_data: weights, scales, zero points, names) gets
 *     bytes changed, or takes another bytes field's content (renames rewire
 *     the graph);
 *   - a field is duplicated or deleted (repeated nodes, attributes, dims).
 * Deterministic in `seed`. Returns the new size, or 0 when nothing could be
 * done (the caller falls back to byte mutations). */
#ifndef WQ_FUZZ_PB_MUTATOR_H
#define WQ_FUZZ_PB_MUTATOR_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "onnx/pb_writer.h"

#define PB_MAX_FIELDS 4096
#define PB_MAX_DEPTH 12

typedef struct {
  uint32_t number;
  uint8_t wire;   /* 0 varint, 1 fixed64, 2 length-delimited, 5 fixed32 */
  uint64_t value; /* varint / fixed */
  const uint8_t *bytes;
  size_t len;
  int child_begin, child_end; /* subtree when is_msg */
  bool is_msg, deleted;
  int dup; /* extra copies to write */
  /* A replacement payload for a length-delimited leaf (owned by the tree). */
  uint8_t *repl;
  size_t repl_len;
} pb_field;

typedef struct {
  pb_field f[PB_MAX_FIELDS];
  int n;
  int root_begin, root_end;
} pb_tree;

static bool pb_read_varint(const uint8_t *p, size_t n, size_t *at, uint64_t *out) {
  uint64_t v = 0;
  for (int shift = 0; shift < 64 && *at < n; shift += 7) {
    uint8_t b = p[(*at)++];
    v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *out = v;
      return true;
    }
  }
  return false;
}

/* Appends the fields of p[0..n) as siblings; false if it is not a message. */
static bool pb_parse(pb_tree *t, const uint8_t *p, size_t n, int depth, int *begin, int *end) {
  int first = t->n;
  size_t at = 0;
  while (at < n) {
    uint64_t key, v = 0;
    if (!pb_read_varint(p, n, &at, &key) || t->n >= PB_MAX_FIELDS) {
      t->n = first;
      return false;
    }
    uint32_t number = (uint32_t)(key >> 3);
    uint8_t wire = (uint8_t)(key & 7);
    if (number == 0 || key >> 32) {
      t->n = first;
      return false;
    }
    pb_field *f = &t->f[t->n];
    memset(f, 0, sizeof *f);
    f->number = number;
    f->wire = wire;
    if (wire == 0) {
      if (!pb_read_varint(p, n, &at, &v))
        break;
      f->value = v;
    } else if (wire == 1 || wire == 5) {
      size_t w = wire == 1 ? 8 : 4;
      if (n - at < w)
        break;
      for (size_t i = 0; i < w; i++)
        v |= (uint64_t)p[at + i] << (8 * i);
      f->value = v;
      at += w;
    } else if (wire == 2) {
      if (!pb_read_varint(p, n, &at, &v) || v > n - at)
        break;
      f->bytes = p + at;
      f->len = (size_t)v;
      at += (size_t)v;
    } else {
      break;
    }
    t->n++;
  }
  if (at != n) {
    t->n = first;
    return false;
  }
  *begin = first;
  *end = t->n;
  if (depth >= PB_MAX_DEPTH)
    return true;
  for (int i = first; i < *end; i++) {
    pb_field *f = &t->f[i];
    if (f->wire == 2 && f->len > 0) {
      int b, e;
      if (pb_parse(t, f->bytes, f->len, depth + 1, &b, &e)) {
        f->is_msg = true;
        f->child_begin = b;
        f->child_end = e;
      }
    }
  }
  return true;
}

static size_t pb_size_range(const pb_tree *t, int b, int e);

static size_t pb_payload_size(const pb_tree *t, const pb_field *f) {
  if (f->repl)
    return f->repl_len;
  if (f->is_msg)
    return pb_size_range(t, f->child_begin, f->child_end);
  return f->len;
}

static size_t pb_field_size(const pb_tree *t, const pb_field *f) {
  size_t key = wq_pb_varint_size((uint64_t)f->number << 3 | f->wire);
  switch (f->wire) {
  case 0: return key + wq_pb_varint_size(f->value);
  case 1: return key + 8;
  case 5: return key + 4;
  default: {
    size_t p = pb_payload_size(t, f);
    return key + wq_pb_varint_size(p) + p;
  }
  }
}

static size_t pb_size_range(const pb_tree *t, int b, int e) {
  size_t s = 0;
  for (int i = b; i < e; i++)
    if (!t->f[i].deleted)
      s += pb_field_size(t, &t->f[i]) * (size_t)(1 + t->f[i].dup);
  return s;
}

static size_t pb_write_range(const pb_tree *t, int b, int e, uint8_t *out);

static size_t pb_write_field(const pb_tree *t, const pb_field *f, uint8_t *out) {
  size_t n = wq_pb_encode_varint(out, (uint64_t)f->number << 3 | f->wire);
  if (f->wire == 0)
    return n + wq_pb_encode_varint(out + n, f->value);
  if (f->wire == 1 || f->wire == 5) {
    for (int i = 0; i < (f->wire == 1 ? 8 : 4); i++)
      out[n++] = (uint8_t)(f->value >> (8 * i));
    return n;
  }
  n += wq_pb_encode_varint(out + n, pb_payload_size(t, f));
  if (f->repl) {
    memcpy(out + n, f->repl, f->repl_len);
    return n + f->repl_len;
  }
  if (f->is_msg)
    return n + pb_write_range(t, f->child_begin, f->child_end, out + n);
  memcpy(out + n, f->bytes, f->len);
  return n + f->len;
}

static size_t pb_write_range(const pb_tree *t, int b, int e, uint8_t *out) {
  size_t n = 0;
  for (int i = b; i < e; i++)
    if (!t->f[i].deleted)
      for (int k = 0; k <= t->f[i].dup; k++)
        n += pb_write_field(t, &t->f[i], out + n);
  return n;
}

static uint64_t pb_rand(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static uint64_t pb_edge_int(uint64_t *rng, uint64_t old) {
  static const int64_t edges[] = {0,
                                  1,
                                  -1,
                                  2,
                                  3,
                                  7,
                                  255,
                                  256,
                                  -128,
                                  65535,
                                  (1LL << 31) - 1,
                                  -(1LL << 31),
                                  1LL << 32,
                                  1LL << 30,
                                  1LL << 62,
                                  INT64_MAX,
                                  INT64_MIN,
                                  INT64_MAX - 1};
  uint64_t r = pb_rand(rng);
  if (r % 3 == 0)
    return old + (uint64_t)((int64_t)(r >> 8) % 5 - 2); /* nearby */
  return (uint64_t)edges[(r >> 8) % (sizeof edges / sizeof edges[0])];
}

static uint32_t pb_edge_f32(uint64_t *rng) {
  static const uint32_t edges[] = {0x00000000, 0x80000000, 0x3f800000, 0xbf800000, 0x7fc00000,
                                   0x7f800000, 0xff800000, 0x00000001, 0x7f7fffff, 0x0d000000,
                                   0x4f000000, 0x3c23d70a, 0x47800000};
  return edges[pb_rand(rng) % (sizeof edges / sizeof edges[0])];
}

/* A packed run of varints: one changed or dropped. Returns false when the
 * payload is not a clean sequence of varints. */
static bool pb_mutate_packed(pb_field *f, uint64_t *rng) {
  uint64_t vals[256];
  int n = 0;
  size_t at = 0;
  while (at < f->len && n < 256)
    if (!pb_read_varint(f->bytes, f->len, &at, &vals[n++]))
      return false;
  if (at != f->len || n == 0)
    return false;
  int k = (int)(pb_rand(rng) % (uint64_t)n);
  bool drop = pb_rand(rng) % 4 == 0;
  if (!drop)
    vals[k] = pb_edge_int(rng, vals[k]);
  f->repl = malloc((size_t)n * 10 + 1);
  if (!f->repl)
    return false;
  size_t len = 0;
  for (int i = 0; i < n; i++)
    if (!(drop && i == k))
      len += wq_pb_encode_varint(f->repl + len, vals[i]);
  f->repl_len = len;
  return true;
}

/* The tree (about 300 KB) and the output buffer are kept from call to call:
 * allocating them anew for each mutation (a fresh mapping, page faults and a
 * trip through the sanitizer's quarantine) cost more than the mutation. */
static size_t wq_pb_mutate(uint8_t *data, size_t size, size_t max_size, unsigned int seed) {
  static pb_tree *t;
  static uint8_t *out;
  static size_t out_cap;
  if (!t && !(t = malloc(sizeof *t)))
    return 0;
  t->n = 0;
  uint64_t rng = (uint64_t)seed * 0x9E3779B97F4A7C15ull + 1;
  size_t result = 0;
  if (size == 0 || !pb_parse(t, data, size, 0, &t->root_begin, &t->root_end) || t->n == 0)
    return 0;
  /* A few edits per call, like libFuzzer's own mutation depth. */
  int edits = 1 + (int)(pb_rand(&rng) % 3);
  for (int e = 0; e < edits; e++) {
    pb_field *f = &t->f[pb_rand(&rng) % (uint64_t)t->n];
    uint64_t how = pb_rand(&rng) % 16;
    if (how == 0) {
      f->deleted = true;
    } else if (how == 1) {
      f->dup = f->dup < 3 ? f->dup + 1 : f->dup;
    } else if (f->wire == 0) {
      f->value = pb_edge_int(&rng, f->value);
    } else if (f->wire == 5) {
      f->value = pb_rand(&rng) % 4 ? pb_edge_f32(&rng) : (uint32_t)pb_rand(&rng);
    } else if (f->wire == 1) {
      f->value = pb_edge_int(&rng, f->value);
    } else if (f->wire == 2 && !f->is_msg && !f->repl) {
      /* Any ASCII string also reads as packed varints: try that half the time. */
      if (how % 2 == 0 && pb_mutate_packed(f, &rng))
        continue;
      if (how < 5) {
        /* Take another leaf's bytes (names: rewires the graph). */
        const pb_field *o = &t->f[pb_rand(&rng) % (uint64_t)t->n];
        if (o->wire == 2 && !o->is_msg && !o->repl && o->len < 256) {
          f->repl = malloc(o->len + 1);
          if (f->repl) {
            memcpy(f->repl, o->bytes, o->len);
            f->repl_len = o->len;
          }
        }
      } else if (f->len > 0) {
        f->repl = malloc(f->len);
        if (f->repl) {
          memcpy(f->repl, f->bytes, f->len);
          f->repl_len = f->len;
          int flips = 1 + (int)(pb_rand(&rng) % 4);
          for (int k = 0; k < flips; k++) {
            size_t at = pb_rand(&rng) % f->len;
            if (at + 4 <= f->len && pb_rand(&rng) % 2) {
              uint32_t v = pb_edge_f32(&rng); /* a float in raw_data */
              memcpy(f->repl + (at & ~(size_t)3), &v, 4);
            } else {
              f->repl[at] = (uint8_t)pb_rand(&rng);
            }
          }
        }
      }
    }
  }
  size_t need = pb_size_range(t, t->root_begin, t->root_end);
  if (need <= max_size && need > out_cap) {
    free(out);
    out_cap = 0;
    if ((out = malloc(need)))
      out_cap = need;
  }
  if (need <= max_size && out_cap >= need) {
    result = pb_write_range(t, t->root_begin, t->root_end, out);
    memcpy(data, out, result);
  }
  for (int i = 0; i < t->n; i++)
    free(t->f[i].repl);
  return result;
}

#endif
