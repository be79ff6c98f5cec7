/* Directory listing for the native tests that walk ../shared (models,
 * conformance cases). Define _POSIX_C_SOURCE before including. */
#ifndef WQ_TEST_DIR_LIST_H
#define WQ_TEST_DIR_LIST_H

#include <dirent.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ir/graph.h"

static inline bool is_dir(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static inline bool is_file(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static inline int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted entry names of a directory starting with `prefix`, dot files left
 * out (caller frees with free_list); NULL and 0 when it cannot be read. */
static inline char **list_dir(const char *dir, const char *prefix, int *count) {
  *count = 0;
  DIR *d = opendir(dir);
  if (!d)
    return NULL;
  char **names = NULL;
  int cap = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.' || strncmp(e->d_name, prefix, strlen(prefix)) != 0)
      continue;
    if (*count == cap) {
      cap = cap ? cap * 2 : 64;
      names = (char **)realloc(names, (size_t)cap * sizeof *names);
    }
    names[(*count)++] = wq_strdup(e->d_name);
  }
  closedir(d);
  if (*count)
    qsort(names, (size_t)*count, sizeof *names, cmp_str);
  return names;
}

static inline void free_list(char **names, int count) {
  for (int i = 0; i < count; i++)
    free(names[i]);
  free(names);
}

static inline bool ends_with(const char *s, const char *suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a >= b && strcmp(s + a - b, suffix) == 0;
}

#endif
