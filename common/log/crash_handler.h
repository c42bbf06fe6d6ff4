// What a process writes when it dies of a fatal signal.
//
// On SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP or SIGABRT (which a failed
// CHECK and LOG(FATAL) raise) the process writes the signal, the faulting
// address and thread, and its symbolized stack to stderr, which is the
// daemon's log, each line in the log's own format ("F<mmdd
// hh:mm:ss.uuuuuu> <tid> <tag> crash] ..."); then it dies of the same
// signal, so its exit status and core dump are what they would have been
// without the handler. The stack comes from glibc's backtrace() (DWARF
// unwinding: the build keeps no frame pointers, which Abseil's own failure
// handler needs) and the names from absl::Symbolize (the binary's symbol
// table; async-signal-safe). SIGTERM is left alone: the daemons wait for it
// with sigwait, and libfuse installs its handler only over the default.
#pragma once

#include "absl/strings/string_view.h"

namespace weft::log {

// Installs the handler for the whole process; `tag` prefixes its lines.
// Call once, early in main (StartProcess does).
void InstallCrashHandler(absl::string_view tag);

}  // namespace weft::log
