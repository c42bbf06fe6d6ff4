#include "common/log/log.h"

#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>

#include "absl/synchronization/mutex.h"
#include "common/log/crash_handler.h"

namespace weft::log {
namespace {

std::atomic<int> g_min_severity{0};
std::atomic<int> g_verbosity{0};
std::string* g_tag = new std::string();

const char* Basename(const char* path) {
  const char* slash = std::strrchr(path, '/');
  return slash ? slash + 1 : path;
}

}  // namespace

void SetMinSeverity(Severity severity) { g_min_severity = static_cast<int>(severity); }
void SetVerbosity(int level) { g_verbosity = level; }
int Verbosity() { return g_verbosity.load(std::memory_order_relaxed); }
void SetProgramTag(absl::string_view tag) { *g_tag = std::string(tag); }
void SetDebugChecks(bool on) { debug_checks.store(on, std::memory_order_relaxed); }

void StartProcess(absl::string_view tag) {
  SetProgramTag(tag);
  InstallCrashHandler(tag);
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
}

bool IsEnabled(Severity severity) {
  return static_cast<int>(severity) >= g_min_severity.load(std::memory_order_relaxed);
}

LogMessage::LogMessage(const char* file, int line, Severity severity)
    : file_(file), line_(line), severity_(severity) {}

LogMessage::~LogMessage() {
  static constexpr char kLetters[] = {'I', 'W', 'E', 'F'};
  timeval tv;
  gettimeofday(&tv, nullptr);
  tm local;
  localtime_r(&tv.tv_sec, &local);
  char head[96];
  std::snprintf(head, sizeof(head), "%c%02d%02d %02d:%02d:%02d.%06ld %ld ",
                kLetters[static_cast<int>(severity_)], local.tm_mon + 1, local.tm_mday,
                local.tm_hour, local.tm_min, local.tm_sec, static_cast<long>(tv.tv_usec),
                static_cast<long>(syscall(SYS_gettid)));
  std::string line = head;
  if (!g_tag->empty()) line += *g_tag + " ";
  line += Basename(file_);
  line += ":" + std::to_string(line_) + "] " + stream_.str() + "\n";
  // One write per line so that concurrent threads do not interleave.
  ssize_t ignored = ::write(STDERR_FILENO, line.data(), line.size());
  (void)ignored;
  if (severity_ == Severity::kFatal) std::abort();
}

}  // namespace weft::log
