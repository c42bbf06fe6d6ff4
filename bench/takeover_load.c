/* takeover_load: metadata load that times every call, for measuring how
 * long a metadata server's failover stops a filesystem.
 *
 *   takeover_load DIR THREADS OUTFILE
 *
 * THREADS threads, each in DIR/tN, create a file (open O_CREAT|O_EXCL +
 * close) and unlink the one before, until SIGTERM or SIGINT. Then OUTFILE
 * gets one line per call, "start_ns end_ns ok" (CLOCK_REALTIME, so that a
 * script can compare them with the time it killed a daemon; ok is 0 for a
 * failed call), and stdout "calls N errors E". A failed call is counted and
 * the thread goes on. Build: gcc -O2 -pthread -o /tmp/takeover_load
 * bench/takeover_load.c */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum { kMaxThreads = 64 };

struct Call {
  int64_t start_ns, end_ns;
  int ok;
};

struct Thread {
  int id;
  struct Call* calls;
  size_t n, cap;
  long errors;
};

static const char* root;
static volatile sig_atomic_t stopping;

static int64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void on_signal(int sig) {
  (void)sig;
  stopping = 1;
}

static void record(struct Thread* t, int64_t start, int ok) {
  if (t->n == t->cap) {
    t->cap = t->cap ? t->cap * 2 : 65536;
    t->calls = realloc(t->calls, t->cap * sizeof *t->calls);
    if (t->calls == NULL) {
      perror("takeover_load: realloc");
      exit(1);
    }
  }
  t->calls[t->n++] = (struct Call){start, now_ns(), ok};
  if (!ok && t->errors++ < 5) {
    fprintf(stderr, "takeover_load: thread %d: %s\n", t->id, strerror(errno));
  }
}

static void* worker(void* arg) {
  struct Thread* t = arg;
  char dir[4096], path[4200];
  snprintf(dir, sizeof dir, "%s/t%d", root, t->id);
  if (mkdir(dir, 0755) != 0 && errno != EEXIST) {
    perror(dir);
    exit(1);
  }
  for (long i = 0; !stopping; i++) {
    snprintf(path, sizeof path, "%s/f%ld", dir, i);
    int64_t start = now_ns();
    int fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0644);
    int ok = fd >= 0 && close(fd) == 0;
    record(t, start, ok);
    if (i > 0) {
      snprintf(path, sizeof path, "%s/f%ld", dir, i - 1);
      start = now_ns();
      record(t, start, unlink(path) == 0);
    }
  }
  return NULL;
}

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: takeover_load DIR THREADS OUTFILE\n");
    return 2;
  }
  root = argv[1];
  int threads = atoi(argv[2]);
  if (threads < 1 || threads > kMaxThreads) {
    fprintf(stderr, "takeover_load: THREADS must be 1..%d\n", kMaxThreads);
    return 2;
  }
  struct sigaction sa = {0};
  sa.sa_handler = on_signal;
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  static struct Thread state[kMaxThreads];
  pthread_t ids[kMaxThreads];
  for (int i = 0; i < threads; i++) {
    state[i].id = i;
    pthread_create(&ids[i], NULL, worker, &state[i]);
  }
  for (int i = 0; i < threads; i++) pthread_join(ids[i], NULL);
  FILE* out = fopen(argv[3], "w");
  if (out == NULL) {
    perror(argv[3]);
    return 1;
  }
  long calls = 0, errors = 0;
  for (int i = 0; i < threads; i++) {
    for (size_t c = 0; c < state[i].n; c++) {
      fprintf(out, "%lld %lld %d\n", (long long)state[i].calls[c].start_ns,
              (long long)state[i].calls[c].end_ns, state[i].calls[c].ok);
    }
    calls += (long)state[i].n;
    errors += state[i].errors;
  }
  fclose(out);
  printf("calls %ld errors %ld\n", calls, errors);
  return 0;
}
