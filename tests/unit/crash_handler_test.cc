// common/log/crash_handler: a process that dies of a fatal signal leaves its
// stack in its log and still dies of that signal. Each case runs in a forked
// child whose stderr is a pipe read by the test.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <string>

#undef CHECK  // Catch's; this file uses the log's CHECK, which aborts
#include "common/log/log.h"

namespace weft::log {
namespace {

struct ChildResult {
  std::string output;  // what it wrote to stderr
  int status = 0;      // from waitpid
};

// Runs `body` in a child that called StartProcess("crashtest") first, with
// the signal actions a daemon starts with (not Catch's handlers).
ChildResult RunChild(const std::function<void()>& body) {
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    close(fds[0]);
    dup2(fds[1], STDERR_FILENO);
    for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGABRT, SIGTERM, SIGINT}) {
      signal(sig, SIG_DFL);
    }
    StartProcess("crashtest");
    body();
    _exit(0);
  }
  close(fds[1]);
  ChildResult result;
  char buf[4096];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof(buf))) > 0) result.output.append(buf, n);
  close(fds[0]);
  REQUIRE(waitpid(pid, &result.status, 0) == pid);
  return result;
}

// Kept out of line, so that the report can name it.
__attribute__((noinline)) void WeftCrashHandlerTestWriteThroughNull(volatile int* p) {
  *p = 1;
}

}  // namespace

TEST_CASE("a segfault leaves a symbolized stack in the log and dies of SIGSEGV", "[unit]") {
  const ChildResult r = RunChild([] { WeftCrashHandlerTestWriteThroughNull(nullptr); });
  INFO(r.output);
  REQUIRE(WIFSIGNALED(r.status));
  REQUIRE(WTERMSIG(r.status) == SIGSEGV);
  REQUIRE(r.output.find("*** SIGSEGV at address 0x0 in thread ") != std::string::npos);
  REQUIRE(r.output.find("WeftCrashHandlerTestWriteThroughNull") != std::string::npos);
  // Every line is in the log's format, with the program's tag.
  size_t lines = 0;
  size_t start = 0;
  while (start < r.output.size()) {
    size_t end = r.output.find('\n', start);
    if (end == std::string::npos) end = r.output.size();
    const std::string line = r.output.substr(start, end - start);
    start = end + 1;
    if (line.empty()) continue;
    ++lines;
    REQUIRE(line[0] == 'F');
    REQUIRE(line.find(" crashtest crash] ") != std::string::npos);
  }
  REQUIRE(lines >= 4);  // the signal, the faulting function, its caller, the end
  REQUIRE(r.output.find("*** end of stack") != std::string::npos);
}

TEST_CASE("a failed CHECK writes its message and the stack and dies of SIGABRT", "[unit]") {
  const ChildResult r = RunChild([] { CHECK(getpid() == 0) << "the test's own check"; });
  INFO(r.output);
  REQUIRE(WIFSIGNALED(r.status));
  REQUIRE(WTERMSIG(r.status) == SIGABRT);
  const size_t check = r.output.find("Check failed: getpid() == 0 the test's own check");
  const size_t report = r.output.find("*** SIGABRT");
  REQUIRE(check != std::string::npos);
  REQUIRE(report != std::string::npos);
  REQUIRE(check < report);
}

TEST_CASE("SIGTERM keeps its default action after the handler is installed", "[unit]") {
  // libfuse installs its unmounting handler only over the default action.
  const ChildResult r = RunChild([] {
    struct sigaction current = {};
    sigaction(SIGTERM, nullptr, &current);
    if (current.sa_handler != SIG_DFL) _exit(3);
    raise(SIGTERM);
    _exit(4);
  });
  INFO(r.output);
  REQUIRE(WIFSIGNALED(r.status));
  REQUIRE(WTERMSIG(r.status) == SIGTERM);
  REQUIRE(r.output.find("***") == std::string::npos);  // no crash report
}

}  // namespace weft::log
