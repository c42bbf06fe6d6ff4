#include "fuse-client/fuse/dev_io.h"

#include <linux/fuse.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>

namespace weft::fuse {
namespace {

// Protocol 7.39 (Linux 6.6); Debian 12's <linux/fuse.h> (7.38) lacks it.
constexpr uint32_t kDirectIoAllowMmapMinor = 39;
constexpr uint64_t kDirectIoAllowMmap = uint64_t{1} << 36;

std::atomic<bool> g_installed{false};
std::atomic<bool> g_patch{false};     // the INIT reply gets the flag
std::atomic<uint64_t> g_init_unique{0};  // the INIT request's, until its reply

ssize_t ReadDev(int fd, void* buf, size_t len, void* /*userdata*/) {
  const ssize_t n = read(fd, buf, len);
  if (n >= static_cast<ssize_t>(sizeof(fuse_in_header))) {
    const auto* in = static_cast<const fuse_in_header*>(buf);
    if (in->opcode == FUSE_INIT) g_init_unique.store(in->unique);
  }
  return n;
}

ssize_t WritevDev(int fd, struct iovec* iov, int count, void* /*userdata*/) {
  // libfuse sends a reply as the header in iov[0] and the argument after it.
  if (count >= 2 && g_patch.load() && iov[0].iov_len >= sizeof(fuse_out_header) &&
      iov[1].iov_len >= sizeof(fuse_init_out)) {
    auto* out = static_cast<fuse_out_header*>(iov[0].iov_base);
    const uint64_t init = g_init_unique.load();
    if (init != 0 && out->unique == init && out->error == 0) {
      auto* arg = static_cast<fuse_init_out*>(iov[1].iov_base);
      arg->flags |= FUSE_INIT_EXT;  // flags2 is read only with it
      arg->flags2 |= static_cast<uint32_t>(kDirectIoAllowMmap >> 32);
      g_init_unique.store(0);
    }
  }
  return writev(fd, iov, count);
}

}  // namespace

bool InstallDevIo(fuse_session* se) {
  fuse_custom_io io = {};
  io.read = ReadDev;
  io.writev = WritevDev;
  // The same descriptor libfuse mounted with; the session still closes it.
  if (fuse_session_custom_io(se, &io, fuse_session_fd(se)) != 0) return false;
  g_installed.store(true);
  return true;
}

bool RequestDirectIoMmap(unsigned proto_minor) {
  const bool patch = g_installed.load() && proto_minor >= kDirectIoAllowMmapMinor;
  g_patch.store(patch);
  return patch;
}

}  // namespace weft::fuse
