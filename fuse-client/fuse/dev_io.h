// The session's reads and writes of /dev/fuse, through libfuse's custom I/O
// hooks, so that the INIT reply can carry a flag libfuse 3.14 does not know:
// FUSE_DIRECT_IO_ALLOW_MMAP (protocol 7.39, Linux 6.6), which lets files
// opened with FOPEN_DIRECT_IO be mapped shared.
#pragma once

#define FUSE_USE_VERSION 35
#include <fuse_lowlevel.h>

namespace weft::fuse {

// Installs the hooks on a mounted session, before its loop starts. False
// (and nothing changed) if libfuse refuses them.
bool InstallDevIo(fuse_session* se);

// From the INIT handler, with the kernel's protocol minor: true if the
// reply will carry FUSE_DIRECT_IO_ALLOW_MMAP (the hooks are in and the
// kernel knows the flag), so that files opened with direct I/O can still be
// mapped shared.
bool RequestDirectIoMmap(unsigned proto_minor);

}  // namespace weft::fuse
