#include "common/log/crash_handler.h"

#include <execinfo.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <ctime>

#include "absl/debugging/symbolize.h"

namespace weft::log {
namespace {

// Set at install: the handler may not allocate, lock or read the time zone.
char g_tag[64];
long g_utc_offset_s = 0;  // the log's lines carry local time
constexpr size_t kAlternateStackBytes = 256 << 10;  // Symbolize needs a few pages

// A line built without allocating (async-signal-safe).
class LineBuffer {
 public:
  void Append(const char* s, size_t n) {
    n = std::min(n, sizeof(data_) - size_);
    std::memcpy(data_ + size_, s, n);
    size_ += n;
  }
  void Append(const char* s) { Append(s, std::strlen(s)); }
  // `value` in decimal, zero-padded to `width` digits.
  void Decimal(unsigned long value, int width) {
    char digits[24];
    int n = 0;
    do {
      digits[n++] = static_cast<char>('0' + value % 10);
      value /= 10;
    } while (value != 0);
    while (n < width) digits[n++] = '0';
    while (n > 0) Append(&digits[--n], 1);
  }
  // Adds the NUL (dropping the last byte when full) for c_str().
  void Terminate() {
    if (size_ == sizeof(data_)) --size_;
    data_[size_] = '\0';
  }
  const char* c_str() const { return data_; }
  void WriteTo(int fd) const {
    size_t done = 0;
    while (done < size_) {
      const ssize_t n = ::write(fd, data_ + done, size_ - done);
      if (n <= 0) return;
      done += static_cast<size_t>(n);
    }
  }

 private:
  char data_[1024];
  size_t size_ = 0;
};

// Month and day of `days` since 1970-01-01 (H. Hinnant's civil_from_days).
void MonthDay(long days, unsigned* month, unsigned* day) {
  days += 719468;
  const long era = (days >= 0 ? days : days - 146096) / 146097;
  const auto doe = static_cast<unsigned>(days - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  *day = doy - (153 * mp + 2) / 5 + 1;
  *month = mp < 10 ? mp + 3 : mp - 9;
}

// Writes `text` as one line of the log:
// "F<mmdd hh:mm:ss.uuuuuu> <tid> <tag> crash] <text>".
void WriteLogLine(const char* text) {
  timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  const long local = now.tv_sec + g_utc_offset_s;
  long days = local / 86400;
  long secs = local % 86400;
  if (secs < 0) {
    secs += 86400;
    --days;
  }
  unsigned month = 0, day = 0;
  MonthDay(days, &month, &day);
  LineBuffer line;
  line.Append("F");
  line.Decimal(month, 2);
  line.Decimal(day, 2);
  line.Append(" ");
  line.Decimal(static_cast<unsigned long>(secs / 3600), 2);
  line.Append(":");
  line.Decimal(static_cast<unsigned long>(secs / 60 % 60), 2);
  line.Append(":");
  line.Decimal(static_cast<unsigned long>(secs % 60), 2);
  line.Append(".");
  line.Decimal(static_cast<unsigned long>(now.tv_nsec / 1000), 6);
  line.Append(" ");
  line.Decimal(static_cast<unsigned long>(syscall(SYS_gettid)), 0);
  line.Append(" ");
  if (g_tag[0] != '\0') {
    line.Append(g_tag);
    line.Append(" ");
  }
  line.Append("crash] ");
  line.Append(text);
  line.Append("\n");
  line.WriteTo(STDERR_FILENO);
}

const char* SignalName(int sig) {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGTRAP: return "SIGTRAP";
    case SIGABRT: return "SIGABRT";
    default: return "signal";
  }
}

constexpr int kFatalSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGABRT};
constexpr int kMaxFrames = 64;
std::atomic<long> g_reporting_tid{0};

void Hex(LineBuffer* line, uintptr_t value) {
  char digits[2 * sizeof(value)];
  int n = 0;
  do {
    digits[n++] = "0123456789abcdef"[value & 15];
    value >>= 4;
  } while (value != 0);
  line->Append("0x");
  while (n > 0) line->Append(&digits[--n], 1);
}

void OnFatalSignal(int sig, siginfo_t* info, void* context) {
  const long tid = syscall(SYS_gettid);
  long expected = 0;
  if (!g_reporting_tid.compare_exchange_strong(expected, tid)) {
    // A second fault in this very thread: its action is back to the
    // default, and the signal raised now is delivered once we return.
    if (expected == tid) {
      raise(sig);
      return;
    }
    for (;;) pause();  // another thread is reporting and will end the process
  }
  alarm(5);  // a report that hangs (a lock held by the faulting code) still ends

  LineBuffer head;
  head.Append("*** ");
  head.Append(SignalName(sig));
  if (info->si_code <= 0) {  // sent by a process (kill, raise, abort)
    head.Append(" sent by pid ");
    head.Decimal(static_cast<unsigned long>(info->si_pid), 0);
  } else if (sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL) {
    head.Append(" at address ");  // only a fault fills si_addr
    Hex(&head, reinterpret_cast<uintptr_t>(info->si_addr));
  }
  char thread_name[17] = {};
  prctl(PR_GET_NAME, thread_name, 0, 0, 0);
  head.Append(" in thread ");
  head.Append(thread_name);
  head.Append("; stack: ***");
  head.Terminate();
  WriteLogLine(head.c_str());

  // The interrupted instruction itself, then return addresses.
  const auto* uc = static_cast<const ucontext_t*>(context);
  const auto interrupted = static_cast<uintptr_t>(uc->uc_mcontext.gregs[REG_RIP]);
  void* frames[kMaxFrames];
  const int n = backtrace(frames, kMaxFrames);
  for (int i = 1; i < n; ++i) {  // frame 0 is this handler
    char symbol[512];
    const auto address = reinterpret_cast<uintptr_t>(frames[i]);
    LineBuffer line;
    line.Append("    @ ");
    Hex(&line, address);
    line.Append("  ");
    // A return address points after its call: look up the call itself.
    const uintptr_t pc = address == interrupted ? address : address - 1;
    const bool named = absl::Symbolize(reinterpret_cast<const void*>(pc), symbol, sizeof(symbol));
    line.Append(named ? symbol : "(unknown)");
    line.Terminate();
    WriteLogLine(line.c_str());
  }
  WriteLogLine("*** end of stack");
  // The default action now: the exit status and core dump are the signal's.
  signal(sig, SIG_DFL);
  raise(sig);
}

}  // namespace

void InstallCrashHandler(absl::string_view tag) {
  const size_t n = std::min(tag.size(), sizeof(g_tag) - 1);
  std::memcpy(g_tag, tag.data(), n);
  g_tag[n] = '\0';
  const time_t t = time(nullptr);
  tm local;
  localtime_r(&t, &local);
  g_utc_offset_s = local.tm_gmtoff;

  absl::InitializeSymbolizer("/proc/self/exe");
  // backtrace() loads libgcc's unwinder on first use, which must not
  // happen inside the handler.
  void* warm[2];
  (void)backtrace(warm, 2);
  // The main thread's stack may be what overflowed: the handler runs on a
  // stack of its own there (other threads report what they can).
  static char* alternate = new char[kAlternateStackBytes];
  stack_t stack = {};
  stack.ss_sp = alternate;
  stack.ss_size = kAlternateStackBytes;
  sigaltstack(&stack, nullptr);

  struct sigaction action = {};
  action.sa_sigaction = OnFatalSignal;
  action.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESETHAND;
  sigemptyset(&action.sa_mask);
  for (int sig : kFatalSignals) sigaction(sig, &action, nullptr);
}

}  // namespace weft::log
