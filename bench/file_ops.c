/* file_ops DIR N: tar's per-file system calls on N new files in DIR (open
 * O_CREAT|O_EXCL, write 4 KiB, futimens, fchown to root, fchmod, close) and
 * the median and p90 latency of each, then files/s. Any mounted filesystem;
 * run as root. Build: gcc -O2 -o /tmp/file_ops bench/file_ops.c */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

static int cmp(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s DIR N\n", argv[0]);
    return 2;
  }
  const int n = atoi(argv[2]);
  if (n <= 0) return 2;
  enum { kOps = 6 };
  const char* names[kOps] = {"open", "write", "futimens", "fchown", "fchmod", "close"};
  double* lat[kOps];
  for (int k = 0; k < kOps; k++) lat[k] = malloc(sizeof(double) * n);
  char buf[4096];
  memset(buf, 'x', sizeof buf);
  char path[4096];
  const double start = now_us();
  for (int i = 0; i < n; i++) {
    snprintf(path, sizeof path, "%s/f%06d", argv[1], i);
    double t[kOps + 1];
    t[0] = now_us();
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (fd < 0) { perror(path); return 1; }
    t[1] = now_us();
    if (write(fd, buf, sizeof buf) != (ssize_t)sizeof buf) { perror("write"); return 1; }
    t[2] = now_us();
    const struct timespec times[2] = {{0, UTIME_OMIT}, {1000000000, 0}};
    if (futimens(fd, times) != 0) { perror("futimens"); return 1; }
    t[3] = now_us();
    if (fchown(fd, 0, 0) != 0) { perror("fchown"); return 1; }
    t[4] = now_us();
    if (fchmod(fd, 0644) != 0) { perror("fchmod"); return 1; }
    t[5] = now_us();
    if (close(fd) != 0) { perror("close"); return 1; }
    t[6] = now_us();
    for (int k = 0; k < kOps; k++) lat[k][i] = t[k + 1] - t[k];
  }
  const double total_s = (now_us() - start) / 1e6;
  for (int k = 0; k < kOps; k++) {
    qsort(lat[k], n, sizeof(double), cmp);
    printf("%-9s median %7.0f us  p90 %7.0f us\n", names[k], lat[k][n / 2], lat[k][n * 9 / 10]);
  }
  printf("%d files in %.2f s: %.0f files/s\n", n, total_s, n / total_s);
  return 0;
}
