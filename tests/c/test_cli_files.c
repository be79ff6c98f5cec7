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
  CHECK(wq_cli_read_file(path, &bytes, &n, &err) == WQ_OK);
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
  CHECK(wq_cli_read_file(path, &bytes, &n, &err) == WQ_OK && n == 0);
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

  /* Reading a missing file: WQ_ERR_IO with the system's reason. */
  CHECK(wq_cli_read_file(bad, &bytes, &n, &err) == WQ_ERR_IO);
  CHECK_MSG(strstr(err.message, "No such file or directory") != NULL, "%s", err.message);

  /* Only regular files: a device, a FIFO without a writer and a folder are
   * refused at once, before any read (a device would be read without end,
   * a FIFO would block). */
  CHECK(wq_cli_read_file("/dev/zero", &bytes, &n, &err) == WQ_ERR_IO);
  CHECK_MSG(strcmp(err.message, "cannot read /dev/zero: not a regular file (a character device)") ==
                0,
            "%s", err.message);
  char fifo[600];
  CHECK(snprintf(fifo, sizeof fifo, "%s/fifo", dir) < (int)sizeof fifo);
  CHECK(mkfifo(fifo, 0600) == 0);
  CHECK(wq_cli_read_file(fifo, &bytes, &n, &err) == WQ_ERR_IO);
  CHECK_MSG(strstr(err.message, "not a regular file (a FIFO)") != NULL, "%s", err.message);
  unlink(fifo);
  CHECK(wq_cli_read_file(dir, &bytes, &n, &err) == WQ_ERR_IO);
  CHECK_MSG(strstr(err.message, "not a regular file (a directory)") != NULL, "%s", err.message);

  /* The size cap, checked before reading: WASMQ_MAX_FILE_BYTES sets it. */
  CHECK(wq_cli_write_file_atomic(path, first, sizeof first, &err) == WQ_OK);
  setenv("WASMQ_MAX_FILE_BYTES", "6", 1);
  CHECK(wq_cli_read_file(path, &bytes, &n, &err) == WQ_OK && n == 6);
  free(bytes);
  setenv("WASMQ_MAX_FILE_BYTES", "5", 1);
  CHECK(wq_cli_read_file(path, &bytes, &n, &err) == WQ_ERR_IO);
  CHECK_MSG(strstr(err.message, "the file is 6 bytes, more than the limit of 5") != NULL, "%s",
            err.message);
  setenv("WASMQ_MAX_FILE_BYTES", "-1", 1);
  CHECK(wq_cli_read_file(path, &bytes, &n, &err) == WQ_ERR_INVALID_ARG);
  unsetenv("WASMQ_MAX_FILE_BYTES");
  size_t max = 0;
  CHECK(wq_cli_max_file_bytes(&max, &err) == WQ_OK && max == ((size_t)1 << 31));

  unlink(path);
  rmdir(dir);
  WQ_TEST_END();
}
