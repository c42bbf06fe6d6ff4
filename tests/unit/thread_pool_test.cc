// common/executor/thread_pool: tasks run, the queue pushes back, Cancel drops
// what has not started, and the threads carry the pool's name.
#include <catch2/catch.hpp>

#include <pthread.h>

#include <atomic>
#include <string>

#include "absl/synchronization/notification.h"
#include "common/executor/thread_pool.h"

namespace weft {

TEST_CASE("thread pool: every task runs before the destructor returns", "[unit]") {
  std::atomic<int> ran{0};
  {
    ThreadPool pool("unit-pool", 3, 8);
    for (int i = 0; i < 100; ++i) pool.Submit([&ran] { ran++; });  // blocks while 8 are queued
  }
  REQUIRE(ran == 100);
}

TEST_CASE("thread pool: cancel drops queued tasks and later ones", "[unit]") {
  absl::Notification started, free;
  std::atomic<int> ran{0};
  {
    ThreadPool pool("unit-pool", 1, 16);
    pool.Submit([&] {
      started.Notify();
      free.WaitForNotification();
    });
    started.WaitForNotification();
    for (int i = 0; i < 5; ++i) pool.Submit([&ran] { ran++; });
    REQUIRE(pool.queued() == 5);
    pool.Cancel();
    REQUIRE(pool.queued() == 0);
    pool.Submit([&ran] { ran++; });
    REQUIRE(pool.queued() == 0);
    free.Notify();
  }  // the destructor runs whatever is still queued: nothing
  REQUIRE(ran == 0);
}

TEST_CASE("thread pool: threads are named after the pool", "[unit]") {
  std::string name;
  absl::Notification done;
  {
    ThreadPool pool("a-long-pool-name-cut", 1, 4);
    pool.Submit([&] {
      char buf[32] = {};
      pthread_getname_np(pthread_self(), buf, sizeof buf);
      name = buf;
      done.Notify();
    });
    done.WaitForNotification();
  }
  REQUIRE(name == "a-long-pool-nam");  // the kernel keeps 15 characters
}

}  // namespace weft
