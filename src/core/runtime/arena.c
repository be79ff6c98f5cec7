#include "arena.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../ir/checked.h"

static bool lifetimes_overlap(const wq_lifetime *a, const wq_lifetime *b) {
  return a->first <= b->last && b->first <= a->last;
}

static size_t align_up(size_t v, size_t alignment) {
  return (v + alignment - 1) & ~(alignment - 1);
}

size_t wq_arena_lower_bound(const wq_lifetime *tensors, int n) {
  /* The live total only rises where a tensor starts, so its maximum is at
   * one of the `first` steps. */
  size_t best = 0;
  for (int i = 0; i < n; i++) {
    size_t live = 0;
    for (int j = 0; j < n; j++)
      if (tensors[j].first <= tensors[i].first && tensors[i].first <= tensors[j].last)
        live += tensors[j].size;
    if (live > best)
      best = live;
  }
  return best;
}

/* Orders are sorted as records carrying their keys. */
typedef struct {
  size_t size;
  long long key2;
  long long key3;
  int index;
} order_record;

static int compare_records(const order_record *a, const order_record *b) {
  if (a->size != b->size)
    return a->size > b->size ? -1 : 1;
  if (a->key2 != b->key2)
    return a->key2 < b->key2 ? -1 : 1;
  if (a->key3 != b->key3)
    return a->key3 < b->key3 ? -1 : 1;
  return a->index - b->index;
}

/* Heapsort by compare_records. The order is total (index breaks ties), so
 * the result is the one any correct sort gives; libc's qsort (smoothsort)
 * was 1.4 KB of the shipped .wasm. */
static void sift_down(order_record *r, int root, int n) {
  for (int child; (child = 2 * root + 1) < n; root = child) {
    if (child + 1 < n && compare_records(&r[child], &r[child + 1]) < 0)
      child++;
    if (compare_records(&r[root], &r[child]) >= 0)
      return;
    order_record tmp = r[root];
    r[root] = r[child];
    r[child] = tmp;
  }
}

static void sort_records(order_record *r, int n) {
  for (int i = n / 2 - 1; i >= 0; i--)
    sift_down(r, i, n);
  for (int end = n - 1; end > 0; end--) {
    order_record tmp = r[0];
    r[0] = r[end];
    r[end] = tmp;
    sift_down(r, 0, end);
  }
}

/* Largest first; among equals the earlier-born and then the longer-lived. */
static void order_by_size(const wq_lifetime *t, int n, order_record *scratch, int *order) {
  for (int i = 0; i < n; i++) {
    scratch[i].size = t[i].size;
    scratch[i].key2 = t[i].first;
    scratch[i].key3 = -(long long)(t[i].last - t[i].first);
    scratch[i].index = i;
  }
  sort_records(scratch, n);
  for (int i = 0; i < n; i++)
    order[i] = scratch[i].index;
}

/* The busiest step first: visit steps by their live total, and at each step
 * take the not-yet-ordered tensors alive there, largest first. The tensors
 * that define the peak then get packed together before smaller steps
 * fragment the space. */
static void order_by_breadth(const wq_lifetime *t, int n, order_record *scratch, int *order,
                             bool *taken) {
  for (int i = 0; i < n; i++) {
    size_t live = 0;
    for (int j = 0; j < n; j++)
      if (t[j].first <= t[i].first && t[i].first <= t[j].last)
        live += t[j].size;
    scratch[i].size = live;
    scratch[i].key2 = t[i].first;
    scratch[i].key3 = 0;
    scratch[i].index = i;
    taken[i] = false;
  }
  sort_records(scratch, n);
  /* scratch is now steps (named by a tensor born there) by breadth; collect
   * each step's live tensors into a second record list sorted by size. */
  order_record *step_tensors = scratch + n;
  int count = 0;
  for (int s = 0; s < n; s++) {
    int step = t[scratch[s].index].first;
    int m = 0;
    for (int j = 0; j < n; j++) {
      if (taken[j] || t[j].first > step || step > t[j].last)
        continue;
      step_tensors[m].size = t[j].size;
      step_tensors[m].key2 = t[j].first;
      step_tensors[m].key3 = -(long long)(t[j].last - t[j].first);
      step_tensors[m].index = j;
      m++;
    }
    sort_records(step_tensors, m);
    for (int k = 0; k < m; k++) {
      taken[step_tensors[k].index] = true;
      order[count++] = step_tensors[k].index;
    }
  }
}

/* Places tensors in `order`, each in the smallest gap (between tensors
 * already placed and alive at an overlapping step) that holds it, else
 * above them all. `placed` keeps the placed tensors sorted by offset.
 * Returns the arena size. */
static size_t place_in_order(const wq_lifetime *t, const size_t *aligned_size, int n,
                             const int *order, int *placed, size_t *offsets) {
  int n_placed = 0;
  size_t arena = 0;
  for (int k = 0; k < n; k++) {
    int i = order[k];
    if (aligned_size[i] == 0) {
      offsets[i] = 0; /* occupies no bytes, conflicts with nothing */
      continue;
    }
    size_t best = SIZE_MAX, best_gap = SIZE_MAX, prev_end = 0;
    for (int p = 0; p < n_placed; p++) {
      int j = placed[p];
      if (!lifetimes_overlap(&t[i], &t[j]))
        continue;
      if (offsets[j] > prev_end) {
        size_t gap = offsets[j] - prev_end;
        if (gap >= aligned_size[i] && gap < best_gap) {
          best = prev_end;
          best_gap = gap;
        }
      }
      if (offsets[j] + aligned_size[j] > prev_end)
        prev_end = offsets[j] + aligned_size[j];
    }
    if (best == SIZE_MAX)
      best = prev_end;
    offsets[i] = best;
    int at = n_placed;
    while (at > 0 && offsets[placed[at - 1]] > best) {
      placed[at] = placed[at - 1];
      at--;
    }
    placed[at] = i;
    n_placed++;
    if (best + aligned_size[i] > arena)
      arena = best + aligned_size[i];
  }
  return arena;
}

wq_status wq_arena_plan(const wq_lifetime *tensors, int n, size_t alignment, size_t *offsets,
                        wq_arena_summary *summary, wq_error *err) {
  memset(summary, 0, sizeof *summary);
  if (n < 0 || (n > 0 && (!tensors || !offsets)))
    return wq_fail(err, WQ_ERR_INVALID_ARG, NULL, "arena plan: invalid arguments");
  if (alignment == 0 || (alignment & (alignment - 1)) != 0)
    return wq_fail(err, WQ_ERR_INVALID_ARG, NULL, "arena plan: alignment %zu is not a power of two",
                   alignment);
  /* Every aligned size and their sum must fit in size_t, so no offset can
   * overflow either (each is at most the sum). */
  size_t total = 0;
  for (int i = 0; i < n; i++) {
    if (tensors[i].first < 0 || tensors[i].last < tensors[i].first)
      return wq_fail(err, WQ_ERR_INVALID_ARG, NULL, "arena plan: tensor %d has lifetime [%d, %d]",
                     i, tensors[i].first, tensors[i].last);
    if (tensors[i].size > SIZE_MAX - alignment ||
        align_up(tensors[i].size, alignment) > SIZE_MAX - total)
      return wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "arena plan: total size overflows");
    total += align_up(tensors[i].size, alignment);
  }
  summary->unshared_bytes = total;
  summary->lower_bound = wq_arena_lower_bound(tensors, n);
  if (n == 0)
    return WQ_OK;

  size_t count = (size_t)n, scratch_bytes = 0;
  /* The largest table, 2n order records, as a checked size (n is an int:
   * 2n records pass 32-bit size_t long before n does). */
  bool sized = wq_bytes_size(2 * (int64_t)n, (int64_t)sizeof(order_record), &scratch_bytes);
  size_t *aligned_size = sized ? malloc(count * sizeof *aligned_size) : NULL;
  size_t *trial = sized ? malloc(count * sizeof *trial) : NULL;
  int *order = sized ? malloc(count * sizeof *order) : NULL;
  int *placed = sized ? malloc(count * sizeof *placed) : NULL;
  bool *taken = sized ? malloc(count * sizeof *taken) : NULL;
  order_record *scratch = sized ? malloc(scratch_bytes) : NULL;
  wq_status st = WQ_OK;
  if (!aligned_size || !trial || !order || !placed || !taken || !scratch) {
    st = wq_fail(err, WQ_ERR_OUT_OF_MEMORY, NULL, "arena plan: out of memory for %d tensors", n);
    goto done;
  }
  for (int i = 0; i < n; i++)
    aligned_size[i] = align_up(tensors[i].size, alignment);

  order_by_size(tensors, n, scratch, order);
  summary->arena_bytes = place_in_order(tensors, aligned_size, n, order, placed, offsets);

  order_by_breadth(tensors, n, scratch, order, taken);
  size_t by_breadth = place_in_order(tensors, aligned_size, n, order, placed, trial);
  if (by_breadth < summary->arena_bytes) {
    summary->arena_bytes = by_breadth;
    memcpy(offsets, trial, count * sizeof *offsets);
  }
done:
  free(aligned_size);
  free(trial);
  free(order);
  free(placed);
  free(taken);
  free(scratch);
  return st;
}

bool wq_arena_verify(const wq_lifetime *tensors, int n, const size_t *offsets, size_t alignment,
                     size_t arena_bytes, wq_error *err) {
  for (int i = 0; i < n; i++) {
    if (tensors[i].size == 0)
      continue;
    if (offsets[i] % alignment != 0) {
      wq_fail(err, WQ_ERR_INVALID_ARG, NULL, "arena: tensor %d at offset %zu is not %zu-aligned", i,
              offsets[i], alignment);
      return false;
    }
    if (offsets[i] > arena_bytes || tensors[i].size > arena_bytes - offsets[i]) {
      wq_fail(err, WQ_ERR_INVALID_ARG, NULL,
              "arena: tensor %d ([%zu, +%zu)) ends past the arena (%zu bytes)", i, offsets[i],
              tensors[i].size, arena_bytes);
      return false;
    }
  }
  for (int i = 0; i < n; i++) {
    for (int j = i + 1; j < n; j++) {
      if (tensors[i].size == 0 || tensors[j].size == 0 ||
          !lifetimes_overlap(&tensors[i], &tensors[j]))
        continue;
      bool disjoint =
          offsets[i] + tensors[i].size <= offsets[j] || offsets[j] + tensors[j].size <= offsets[i];
      if (!disjoint) {
        wq_fail(err, WQ_ERR_INVALID_ARG, NULL,
                "arena: tensors %d (steps %d..%d, [%zu, +%zu)) and %d (steps %d..%d, [%zu, "
                "+%zu)) are alive together and overlap",
                i, tensors[i].first, tensors[i].last, offsets[i], tensors[i].size, j,
                tensors[j].first, tensors[j].last, offsets[j], tensors[j].size);
        return false;
      }
    }
  }
  return true;
}
