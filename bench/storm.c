/* storm: the two halves of a metadata storm on any mounted filesystem.
 *
 *   storm create DIR DIRS FILES   mkdir DIR/dNNNN (DIRS of them), each with
 *                                 FILES empty files (open O_CREAT|O_EXCL,
 *                                 close): DIRS * FILES files in all
 *   storm walk DIR                every name under DIR, depth first:
 *                                 readdir and an lstat (fstatat) of each
 *
 * Prints one line, "create|walk N entries, E errors, S s, R/s", and up to
 * five errors on stderr; exits 1 when any call failed. Build:
 * gcc -O2 -o /tmp/storm bench/storm.c */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static long entries, errors;

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

static void failed(const char* call, const char* path) {
  if (errors++ < 5) fprintf(stderr, "storm: %s %s: %s\n", call, path, strerror(errno));
}

static void create_tree(const char* dir, long dirs, long files) {
  char path[4096];
  if (mkdir(dir, 0755) != 0 && errno != EEXIST) failed("mkdir", dir);
  for (long d = 0; d < dirs; d++) {
    snprintf(path, sizeof path, "%s/d%04ld", dir, d);
    if (mkdir(path, 0755) != 0) failed("mkdir", path);
    for (long f = 0; f < files; f++) {
      snprintf(path, sizeof path, "%s/d%04ld/f%06ld", dir, d, f);
      int fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0644);
      if (fd < 0) {
        failed("create", path);
        continue;
      }
      if (close(fd) != 0) failed("close", path);
      entries++;
    }
  }
}

/* Walks the directory open as `fd` (named `path`, for messages); closes it. */
static void walk(int fd, const char* path) {
  DIR* d = fdopendir(fd);
  if (d == NULL) {
    failed("fdopendir", path);
    close(fd);
    return;
  }
  struct dirent* e;
  errno = 0;
  while ((e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    char child[4096];
    snprintf(child, sizeof child, "%s/%s", path, e->d_name);
    struct stat st;
    if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
      failed("lstat", child);
      continue;
    }
    entries++;
    if (S_ISDIR(st.st_mode)) {
      int sub = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY);
      if (sub < 0) failed("open", child);
      else walk(sub, child);
    }
    errno = 0;
  }
  if (errno != 0) failed("readdir", path);
  closedir(d);
}

int main(int argc, char** argv) {
  const double start = now_s();
  const char* what = argc > 1 ? argv[1] : "";
  if (strcmp(what, "create") == 0 && argc == 5) {
    const long dirs = atol(argv[3]), files = atol(argv[4]);
    if (dirs <= 0 || files <= 0) {
      fprintf(stderr, "storm: DIRS and FILES must be positive\n");
      return 2;
    }
    create_tree(argv[2], dirs, files);
  } else if (strcmp(what, "walk") == 0 && argc == 3) {
    int fd = open(argv[2], O_RDONLY | O_DIRECTORY);
    if (fd < 0) failed("open", argv[2]);
    else walk(fd, argv[2]);
  } else {
    fprintf(stderr, "usage: storm create DIR DIRS FILES | storm walk DIR\n");
    return 2;
  }
  const double s = now_s() - start;
  printf("%s %ld entries, %ld errors, %.1f s, %.0f/s\n", what, entries, errors, s,
         s > 0 ? entries / s : 0.0);
  return errors == 0 ? 0 : 1;
}
