// Names, hashes and fragments of the namespace.
//
// A directory's entries are ordered by a 63-bit hash of their name. That
// order is the readdir order and the hash is the readdir cookie, so a cookie
// stays meaningful however the directory is fragmented: fragment (bits, value)
// holds the names whose hash starts with the `bits`-bit prefix `value`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace weft::mds {

inline constexpr size_t kNameMax = 255;
inline constexpr size_t kXattrValueMax = 64 * 1024;
inline constexpr size_t kSymlinkMax = 4095;
inline constexpr uint64_t kRootIno = 1;
// Inode numbers below this are reserved (root, future system inodes).
inline constexpr uint64_t kFirstFreeIno = 0x1000;

// EINVAL for "", ".", "..", '/' or NUL inside; ENAMETOOLONG over 255 bytes.
absl::Status ValidateName(absl::string_view name);

// The readdir cookie of a name: 63 bits, never 0, 1 or 2 (0 means "from the
// start"; 1 and 2 are left to "." and ".." by frontends that emit them).
uint64_t NameHash(absl::string_view name);

// A fragment: (bits << 24) | value, value < 2^bits, bits <= 24.
using Frag = uint32_t;
inline constexpr Frag kRootFrag = 0;
inline uint32_t FragBits(Frag f) { return f >> 24; }
inline uint32_t FragValue(Frag f) { return f & 0xffffff; }
inline Frag MakeFrag(uint32_t bits, uint32_t value) { return (bits << 24) | value; }
bool FragContains(Frag f, uint64_t hash);
// The first hash in the fragment and one past its last (2^63 for the last).
uint64_t FragStart(Frag f);
uint64_t FragEnd(Frag f);
// The fragment of `frags` (a directory's leaves; empty = one root fragment)
// that holds `hash`.
Frag FragFor(const std::vector<Frag>& frags, uint64_t hash);
// The two halves of `f`.
std::pair<Frag, Frag> SplitFrag(Frag f);
// The leaves sorted by hash range; {kRootFrag} for an unfragmented directory.
std::vector<Frag> SortedFrags(const std::vector<Frag>& frags);

// The first inode number rank `rank` allocates: each rank has its own range
// ((rank << 40) up; rank 0 from kFirstFreeIno), so ranks never hand out the
// same number.
uint64_t RankFirstIno(uint32_t rank);

// Object names in the metadata pool of filesystem `fs`. The journal and the
// tables are per rank (rank 0's names are those from before ranks: fsN.X;
// rank R's fsN.rR.X); inodes and directory fragments are the filesystem's.
std::string InodeTableObject(uint32_t fs, uint64_t ino);
std::string InodeKey(uint64_t ino);
// A file's inline data (pb::InlineRec), beside its inode in the same object:
// loading an inode does not read it.
std::string InlineKey(uint64_t ino);
std::string DirFragObject(uint32_t fs, uint64_t dir, Frag frag);
std::string JournalHeadObject(uint32_t fs, uint32_t rank);
std::string JournalSegmentObject(uint32_t fs, uint32_t rank, uint64_t segment);
// sessions, strays, purge, trims, inotable
std::string TableObject(uint32_t fs, uint32_t rank, absl::string_view table);

}  // namespace weft::mds
