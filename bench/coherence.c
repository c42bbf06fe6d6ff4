/* coherence A B N: the coherence workload of bench/caps_bench.sh, through two
 * mounts A and B of one filesystem (two hosts' view of it), N rounds per
 * phase. Each change is made through B while A holds what it may cache, and
 * is checked through A right after the call returned, with no sleep; every
 * call is timed.
 *   attr     A stats file i (it may keep the attributes), B chmods it
 *            (B_chmod: what a revoke of A's attributes costs), A stats it
 *            again and must see the new mode (A_stat)
 *   name     A looks up a name that does not exist yet (it may keep the
 *            negative entry), B creates it (B_create), A must find it (A_stat)
 *   data     A keeps a file open for reading and has read it; B, which has it
 *            open for writing, writes 4 KiB (B_write); A reads those bytes
 *            through its open descriptor and must see them (A_read)
 *   append   A and B, each with the file open O_APPEND, append 64-byte
 *            records in turn (A_append, B_append); at the end every record
 *            must be there once
 * Prints one line per timed call kind: "<phase>_<who>_<call> p50_us p99_us
 * max_us n", then "violations N" (a stale answer: 0 is the only right one).
 * Exit status 1 on a failed call. Build: gcc -O2 -o coherence bench/coherence.c */
#define _GNU_SOURCE
#include <errno.h>
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

static void report(const char* name, double* lat, int n) {
  qsort(lat, n, sizeof *lat, cmp);
  int p99 = (int)(n * 0.99);
  if (p99 >= n) p99 = n - 1;
  printf("%s %.0f %.0f %.0f %d\n", name, lat[n / 2], lat[p99], lat[n - 1], n);
}

static void die(const char* what, const char* path) {
  fprintf(stderr, "coherence: %s %s: %s\n", what, path, strerror(errno));
  exit(1);
}

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s MOUNT_A_DIR MOUNT_B_DIR N\n", argv[0]);
    return 2;
  }
  const char* a = argv[1];
  const char* b = argv[2];
  const int n = atoi(argv[3]);
  if (n <= 0) return 2;
  double* l1 = malloc(sizeof(double) * n);
  double* l2 = malloc(sizeof(double) * n);
  long violations = 0;
  char pa[4096], pb[4096];
  struct stat st;

  /* attr */
  for (int i = 0; i < n; i++) {
    snprintf(pb, sizeof pb, "%s/attr.%d", b, i);
    int fd = open(pb, O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0) die("create", pb);
    close(fd);
  }
  for (int i = 0; i < n; i++) {
    snprintf(pa, sizeof pa, "%s/attr.%d", a, i);
    snprintf(pb, sizeof pb, "%s/attr.%d", b, i);
    if (stat(pa, &st) != 0 || stat(pa, &st) != 0) die("stat", pa);
    const mode_t mode = (i % 2) ? 0600 : 0640;
    double t0 = now_us();
    if (chmod(pb, mode) != 0) die("chmod", pb);
    double t1 = now_us();
    if (stat(pa, &st) != 0) die("stat", pa);
    double t2 = now_us();
    if ((st.st_mode & 07777) != mode) violations++;
    l1[i] = t1 - t0;
    l2[i] = t2 - t1;
  }
  report("attr_B_chmod", l1, n);
  report("attr_A_stat", l2, n);

  /* name */
  for (int i = 0; i < n; i++) {
    snprintf(pa, sizeof pa, "%s/name.%d", a, i);
    snprintf(pb, sizeof pb, "%s/name.%d", b, i);
    if (stat(pa, &st) == 0 || errno != ENOENT) die("stat of a missing name", pa);
    double t0 = now_us();
    int fd = open(pb, O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd < 0) die("create", pb);
    close(fd);
    double t1 = now_us();
    if (stat(pa, &st) != 0) {
      if (errno != ENOENT) die("stat", pa);
      violations++;
    }
    double t2 = now_us();
    l1[i] = t1 - t0;
    l2[i] = t2 - t1;
  }
  report("name_B_create", l1, n);
  report("name_A_stat", l2, n);

  /* data */
  enum { kBlock = 4096, kBlocks = 16 };
  snprintf(pb, sizeof pb, "%s/data", b);
  snprintf(pa, sizeof pa, "%s/data", a);
  char* block = malloc(kBlock);
  char* got = malloc(kBlock);
  memset(block, 'x', kBlock);
  int wfd = open(pb, O_RDWR | O_CREAT | O_EXCL, 0644);
  if (wfd < 0) die("create", pb);
  for (int k = 0; k < kBlocks; k++) {
    if (pwrite(wfd, block, kBlock, (off_t)k * kBlock) != kBlock) die("write", pb);
  }
  if (fsync(wfd) != 0) die("fsync", pb);
  int rfd = open(pa, O_RDONLY);
  if (rfd < 0) die("open", pa);
  for (int k = 0; k < kBlocks; k++) {
    if (pread(rfd, got, kBlock, (off_t)k * kBlock) != kBlock) die("read", pa);
  }
  for (int i = 0; i < n; i++) {
    const off_t at = (off_t)(i % kBlocks) * kBlock;
    memset(block, 'a' + i % 26, kBlock);
    snprintf(block, 32, "round %d", i);
    double t0 = now_us();
    if (pwrite(wfd, block, kBlock, at) != kBlock) die("write", pb);
    double t1 = now_us();
    if (pread(rfd, got, kBlock, at) != kBlock) die("read", pa);
    double t2 = now_us();
    if (memcmp(got, block, kBlock) != 0) violations++;
    l1[i] = t1 - t0;
    l2[i] = t2 - t1;
  }
  close(rfd);
  close(wfd);
  report("data_B_write", l1, n);
  report("data_A_read", l2, n);

  /* append */
  snprintf(pb, sizeof pb, "%s/log", b);
  snprintf(pa, sizeof pa, "%s/log", a);
  int bfd = open(pb, O_WRONLY | O_CREAT | O_EXCL | O_APPEND, 0644);
  if (bfd < 0) die("create", pb);
  int afd = open(pa, O_WRONLY | O_APPEND);
  if (afd < 0) die("open", pa);
  char rec[64];
  for (int i = 0; i < n; i++) {
    for (int who = 0; who < 2; who++) {
      memset(rec, who ? 'b' : 'a', sizeof rec);
      snprintf(rec, sizeof rec, "%c %d ", who ? 'b' : 'a', i);
      rec[strlen(rec)] = who ? 'b' : 'a';
      rec[63] = '\n';
      double t0 = now_us();
      if (write(who ? bfd : afd, rec, sizeof rec) != (ssize_t)sizeof rec) die("append", who ? pb : pa);
      (who ? l2 : l1)[i] = now_us() - t0;
    }
  }
  close(afd);
  if (close(bfd) != 0) die("close", pb);
  report("append_A_write", l1, n);
  report("append_B_write", l2, n);
  if (stat(pa, &st) != 0) die("stat", pa);
  if (st.st_size != (off_t)n * 2 * 64) violations++;
  FILE* f = fopen(pa, "r");
  if (f == NULL) die("open", pa);
  long seen[2] = {0, 0};
  char line[128];
  while (fgets(line, sizeof line, f) != NULL) {
    int i = -1;
    char who = 0;
    if (strlen(line) != 64 || sscanf(line, "%c %d", &who, &i) != 2) {
      violations++;
      continue;
    }
    if ((who == 'a' || who == 'b') && i == seen[who == 'b']) seen[who == 'b']++;
    else violations++;
  }
  fclose(f);
  if (seen[0] != n || seen[1] != n) violations++;
  printf("violations %ld\n", violations);
  return 0;
}
