/* The CLI's file helpers: whole-file reads and the atomic write that
 * `wasmq quantize -o` relies on (old file or whole new one, never a part,
 * no temp file left behind, a clear error for an unwritable path). */
#define _XOPEN_SOURCE 700
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/files.h"
#include "wq_test.h"

static int count_entries(const char *dir) {
  DIR *d = opendir(dir);
  int n = 0;
  struct dirent *e;
  while (d && (e = readdir(d)))
    n += e->d_name[0] != '.';
  if (d)
    closedir(d);
  return n;
}

int main(void) {
  char dir[256];
  snprintf(dir, sizeof dir, "%s/wq_files_XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (!mkdtemp(dir))
    return 1;
  char path[512];
  CHECK(snprintf(path, sizeof path, "%s/out.onnx", dir) < (int)sizeof path);
  wq_error err;

  /* New file, then replaced by a shorter one: exactly the new bytes. */
  const uint8_t first[6] = {1, 2, 3, 4, 5, 6}, second[2] = {9, 8};
  CHECK_MSG(wq_cli_write_file_atomic(path, first, sizeof first, &err) == WQ_OK, "%s", err.message);
  CHECK_MSG(wq_cli_write_file_atomic(path, second, sizeof second, &err) == WQ_OK, "%s",
            err.message);
  uint8_t *bytes = NULL;
  size_t n = 0;
  CHECK(wq_cli_read_file(path, &bytes, &n) == 0);
  CHECK(n == 2 && bytes && bytes[0] == 9 && bytes[1] == 8);
  free(bytes);
  CHECK(count_entries(dir) == 1); /* no temp file left */
  /* Mode as fopen would give it (0666 less the umask), not mkstemp's 0600. */
  struct stat st;
  mode_t mask = umask(0);
  umask(mask);
  CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == (0666 & ~mask));

  /* An empty file is fine. */
  CHECK(wq_cli_write_file_atomic(path, NULL, 0, &err) == WQ_OK);
  CHECK(wq_cli_read_file(path, &bytes, &n) == 0 && n == 0);
  free(bytes);

  /* A folder that does not exist: WQ_ERR_IO naming the path; nothing made. */
  char bad[600];
  CHECK(snprintf(bad, sizeof bad, "%s/missing/out.onnx", dir) < (int)sizeof bad);
  CHECK(wq_cli_write_file_atomic(bad, first, sizeof first, &err) == WQ_ERR_IO);
  char want[700];
  CHECK(snprintf(want, sizeof want, "cannot write %s: No such file or directory", bad) <
        (int)sizeof want);
  CHECK_MSG(strcmp(err.message, want) == 0, "%s", err.message);
  /* A path that is a folder: the rename fails and the temp file goes. */
  CHECK(wq_cli_write_file_atomic(dir, first, sizeof first, &err) == WQ_ERR_IO);
  CHECK_MSG(strstr(err.message, "cannot write ") == err.message, "%s", err.message);
  char parent[300];
  CHECK(snprintf(parent, sizeof parent, "%s", dir) < (int)sizeof parent);
  char *slash = strrchr(parent, '/');
  *slash = '\0';
  char *base = slash + 1;
  DIR *d = opendir(parent);
  struct dirent *e;
  int leftovers = 0;
  while (d && (e = readdir(d)))
    leftovers += strncmp(e->d_name, base, strlen(base)) == 0 && strstr(e->d_name, ".tmp-");
  if (d)
    closedir(d);
  CHECK(leftovers == 0);
  CHECK(count_entries(dir) == 1);

  /* Reading a missing file sets errno. */
  errno = 0;
  CHECK(wq_cli_read_file(bad, &bytes, &n) == -1 && errno == ENOENT);

  unlink(path);
  rmdir(dir);
  WQ_TEST_END();
}
