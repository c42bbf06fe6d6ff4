/* mdshared2: mdbench's shared-directory phases through two mounts of one
 * filesystem at once, as two client hosts working in one directory would.
 *
 *   mdshared2 DIR_A DIR_B THREADS FILES_PER_THREAD [SECONDS]
 *
 * DIR_A and DIR_B name the same directory through two mounts (two clients,
 * two sessions). Thread t works through DIR_A when t is even and DIR_B when
 * it is odd, all threads in DIR/shared2, on the files f.<t>.<i>, phase by
 * phase with a barrier between (as ../shared/anchors/bench/mdbench.c):
 *
 *   create   open O_CREAT|O_EXCL + close of its own files
 *   stat     stat of its own files
 *   xstat    stat of the files the thread beside it made through the other
 *            mount (t ^ 1): attributes another client just changed
 *   unlink   unlink of its own files
 *
 * With SECONDS, each phase stops after that long (a thread finishes the call
 * it is in): a peer that takes minutes per thousand files is measured in
 * bounded time; stat and xstat then cover the files made, and what unlink
 * did not reach stays (the caller removes the cluster). Prints
 * "<phase> <ops> <seconds> <ops_per_s>" per phase, as mdbench does.
 * Any failed call stops it with a message and exit status 1: a metadata
 * benchmark whose files vanish or appear twice measures nothing.
 * Build: gcc -O2 -pthread -o /tmp/mdshared2 bench/mdshared2.c */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum { kPhases = 4, kMaxThreads = 256 };
static const char* const kPhaseNames[kPhases] = {"create", "stat", "xstat", "unlink"};

static const char* roots[2];
static int threads, files;
static double limit_s;  /* per phase; 0: none */
static pthread_barrier_t barrier;
static double started[kPhases], ended[kPhases];
static int made[kMaxThreads];          /* files each thread created */
static long done[kMaxThreads][kPhases];

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

static void fail(const char* call, const char* path) {
  fprintf(stderr, "mdshared2: %s %s: %s\n", call, path, strerror(errno));
  exit(1);
}

/* The path of file i of thread `owner`, as thread `via` reaches it. */
static void file_path(char* out, size_t size, int via, int owner, int i) {
  snprintf(out, size, "%s/shared2/f.%d.%d", roots[via % 2], owner, i);
}

static void* worker(void* arg) {
  int t = (int)(long)arg;
  int other = (t ^ 1) < threads ? (t ^ 1) : t;
  char path[4200];
  for (int phase = 0; phase < kPhases; phase++) {
    pthread_barrier_wait(&barrier);
    if (t == 0) started[phase] = now_s();
    pthread_barrier_wait(&barrier);
    const double deadline = limit_s > 0 ? started[phase] + limit_s : 0;
    const int n = phase == 0 ? files : (phase == 2 ? made[other] : made[t]);
    for (int i = 0; i < n && (deadline == 0 || now_s() < deadline); i++) {
      struct stat st;
      switch (phase) {
        case 0: {
          file_path(path, sizeof path, t, t, i);
          int fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0644);
          if (fd < 0) fail("create", path);
          if (close(fd) != 0) fail("close", path);
          made[t] = i + 1;
          break;
        }
        case 1:
          file_path(path, sizeof path, t, t, i);
          if (stat(path, &st) != 0) fail("stat", path);
          break;
        case 2:
          file_path(path, sizeof path, t, other, i);
          if (stat(path, &st) != 0) fail("stat", path);
          break;
        case 3:
          file_path(path, sizeof path, t, t, i);
          if (unlink(path) != 0) fail("unlink", path);
          break;
      }
      done[t][phase]++;
    }
    pthread_barrier_wait(&barrier);
    if (t == 0) ended[phase] = now_s();
  }
  return NULL;
}

int main(int argc, char** argv) {
  if (argc != 5 && argc != 6) {
    fprintf(stderr, "usage: mdshared2 DIR_A DIR_B THREADS FILES_PER_THREAD [SECONDS]\n");
    return 2;
  }
  roots[0] = argv[1];
  roots[1] = argv[2];
  threads = atoi(argv[3]);
  files = atoi(argv[4]);
  limit_s = argc == 6 ? atof(argv[5]) : 0;
  if (threads < 2 || threads > kMaxThreads || files < 1 || limit_s < 0) {
    fprintf(stderr, "mdshared2: THREADS must be 2..%d (half on each mount), FILES_PER_THREAD >= 1\n",
            kMaxThreads);
    return 2;
  }
  char dir[4200];
  snprintf(dir, sizeof dir, "%s/shared2", roots[0]);
  if (mkdir(dir, 0755) != 0 && errno != EEXIST) fail("mkdir", dir);
  pthread_barrier_init(&barrier, NULL, threads);
  pthread_t ids[kMaxThreads];
  for (long t = 0; t < threads; t++) pthread_create(&ids[t], NULL, worker, (void*)t);
  for (int t = 0; t < threads; t++) pthread_join(ids[t], NULL);
  long left = 0;
  for (int phase = 0; phase < kPhases; phase++) {
    long ops = 0;
    for (int t = 0; t < threads; t++) ops += done[t][phase];
    double s = ended[phase] - started[phase];
    printf("%s %ld %.3f %.1f\n", kPhaseNames[phase], ops, s, ops / s);
  }
  for (int t = 0; t < threads; t++) left += made[t] - done[t][3];
  if (left > 0) {
    fprintf(stderr, "mdshared2: %ld files left in %s/shared2 (the unlink phase ran out of time)\n",
            left, roots[0]);
    return 0;
  }
  /* Through the other mount: the directory must be empty there too. */
  snprintf(dir, sizeof dir, "%s/shared2", roots[1]);
  if (rmdir(dir) != 0) fail("rmdir", dir);
  return 0;
}
