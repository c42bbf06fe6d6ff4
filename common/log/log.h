// A small logging shim shaped like absl/log (which Abseil 20220623 lacks):
// LOG(INFO) << "key=value ...";  VLOG(2) << ...;  CHECK(cond) << ...;
// Lines go to stderr as "<level><mmdd hh:mm:ss.uuuuuu> <tid> file:line] message".
// LOG(FATAL) and a failed CHECK abort after writing the line. DCHECK(cond)
// asserts what is costly to check: it evaluates `cond` only once
// SetDebugChecks(true) (unit tests and the simulation turn it on; daemons
// leave it off), so the same build both runs fast and is checked.
#pragma once

#include <atomic>
#include <sstream>
#include "absl/strings/string_view.h"

namespace weft::log {

enum class Severity { kInfo = 0, kWarning = 1, kError = 2, kFatal = 3 };

// Lines below this severity are dropped. Default kInfo.
void SetMinSeverity(Severity severity);
// VLOG(n) lines are written when n <= the verbosity. Default 0.
void SetVerbosity(int level);
int Verbosity();
// Prefix for every line, such as "osd.3". Call once at startup.
void SetProgramTag(absl::string_view tag);
// What every daemon and the CLI call first: the program tag, the crash
// handler (common/log/crash_handler.h), and Abseil's
// mutex deadlock detection turned off. Debian's Abseil leaves it on, which
// costs a lock-graph update on every Mutex acquisition (2-3 % of the MDS's
// and weft-fuse's CPU in a create benchmark). Test binaries keep it on.
void StartProcess(absl::string_view tag);
bool IsEnabled(Severity severity);
void SetDebugChecks(bool on);
inline std::atomic<bool> debug_checks{false};
inline bool DebugChecks() { return debug_checks.load(std::memory_order_relaxed); }

class LogMessage {
 public:
  LogMessage(const char* file, int line, Severity severity);
  ~LogMessage();
  LogMessage(const LogMessage&) = delete;
  LogMessage& operator=(const LogMessage&) = delete;
  std::ostream& stream() { return stream_; }

 private:
  const char* file_;
  int line_;
  Severity severity_;
  std::ostringstream stream_;
};

// Swallows the stream expression when a line is disabled.
struct Voidify {
  void operator&(std::ostream&) {}
};

}  // namespace weft::log

#define WEFT_LOG_SEVERITY_INFO ::weft::log::Severity::kInfo
#define WEFT_LOG_SEVERITY_WARNING ::weft::log::Severity::kWarning
#define WEFT_LOG_SEVERITY_ERROR ::weft::log::Severity::kError
#define WEFT_LOG_SEVERITY_FATAL ::weft::log::Severity::kFatal

#define LOG(severity)                                                    \
  !::weft::log::IsEnabled(WEFT_LOG_SEVERITY_##severity)                  \
      ? (void)0                                                          \
      : ::weft::log::Voidify() &                                         \
            ::weft::log::LogMessage(__FILE__, __LINE__, WEFT_LOG_SEVERITY_##severity).stream()

#define VLOG(level)                                                                 \
  ((level) > ::weft::log::Verbosity())                                              \
      ? (void)0                                                                     \
      : ::weft::log::Voidify() &                                                    \
            ::weft::log::LogMessage(__FILE__, __LINE__, ::weft::log::Severity::kInfo).stream()

#define CHECK(cond)                                                                   \
  (cond) ? (void)0                                                                    \
         : ::weft::log::Voidify() &                                                   \
               ::weft::log::LogMessage(__FILE__, __LINE__, ::weft::log::Severity::kFatal) \
                       .stream()                                                      \
                   << "Check failed: " #cond " "

#define DCHECK(cond)                                                                  \
  (!::weft::log::DebugChecks() || (cond))                                             \
      ? (void)0                                                                       \
      : ::weft::log::Voidify() &                                                      \
            ::weft::log::LogMessage(__FILE__, __LINE__, ::weft::log::Severity::kFatal)    \
                    .stream()                                                         \
                << "Debug check failed: " #cond " "

#define CHECK_OK(expr)                                                                \
  do {                                                                                \
    auto weft_check_status_ = (expr);                                                 \
    CHECK(weft_check_status_.ok()) << weft_check_status_;                             \
  } while (0)
