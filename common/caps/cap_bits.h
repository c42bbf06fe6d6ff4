// The capability bits of DESIGN.md, "Capabilities": what a client session
// may know or do with one inode without asking the MDS. A cap is a set of
// these with a sequence number, held by one session on one inode
// (mds/caps/cap_table.h keeps them at the MDS); revokes and their
// acknowledgements name the bits they take back (pb::LeaseEvent.caps).
//
// Which bits are leased and recalled today: `Ls` (a directory's names and
// absent names), `As` and `Fs` (the inode's mode, owner, ACL, size and
// times: granted and revoked together). The file bits `Fr Fc Fw Fb Fx`
// describe what the MDS lets an opener do with a file's data (the openers
// of a file decide them: Leases::FileCaps); they are not leased by time but
// held while the file is open.
#pragma once

#include <cstdint>
#include <string>

namespace weft::caps {

inline constexpr uint32_t kLs = 1u << 0;  // dentries and absent names of a directory
inline constexpr uint32_t kAs = 1u << 1;  // mode, owner, ACLs may be cached
inline constexpr uint32_t kAx = 1u << 2;  // ... and changed locally
inline constexpr uint32_t kFs = 1u << 3;  // size and times may be cached
inline constexpr uint32_t kFr = 1u << 4;  // read
inline constexpr uint32_t kFc = 1u << 5;  // cache reads
inline constexpr uint32_t kFw = 1u << 6;  // write
inline constexpr uint32_t kFb = 1u << 7;  // buffer writes
inline constexpr uint32_t kFx = 1u << 8;  // exclusive: nobody else has the file open
inline constexpr int kBitCount = 9;

// The attribute part, granted and revoked together.
inline constexpr uint32_t kAttrs = kAs | kFs;
// The bits leased by time and renewed by the heartbeat.
inline constexpr uint32_t kLeased = kLs | kAttrs;
// The bits of an opener.
inline constexpr uint32_t kFile = kFr | kFc | kFw | kFb | kFx;

// "LsAsFs", "FrFcFwFbFx", "-" for none: CephFS's way of printing them,
// without its `p`.
std::string CapString(uint32_t bits);

}  // namespace weft::caps
