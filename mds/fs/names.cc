#include "mds/fs/names.h"

#include <algorithm>
#include <cerrno>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/status/status.h"
#include "xxhash.h"

namespace weft::mds {

absl::Status ValidateName(absl::string_view name) {
  if (name.empty()) return ErrnoError(absl::StatusCode::kInvalidArgument, EINVAL, "empty name");
  if (name.size() > kNameMax) {
    return ErrnoError(absl::StatusCode::kInvalidArgument, ENAMETOOLONG,
                      absl::StrCat("name of ", name.size(), " bytes is over 255"));
  }
  if (name == "." || name == "..") {
    return ErrnoError(absl::StatusCode::kInvalidArgument, EINVAL, "name is . or ..");
  }
  if (name.find('/') != absl::string_view::npos || name.find('\0') != absl::string_view::npos) {
    return ErrnoError(absl::StatusCode::kInvalidArgument, EINVAL, "name contains / or NUL");
  }
  return absl::OkStatus();
}

uint64_t NameHash(absl::string_view name) {
  uint64_t h = XXH3_64bits(name.data(), name.size()) >> 1;
  return h < 3 ? 3 : h;
}

uint64_t FragStart(Frag f) {
  uint32_t bits = FragBits(f);
  return bits == 0 ? 0 : static_cast<uint64_t>(FragValue(f)) << (63 - bits);
}

uint64_t FragEnd(Frag f) {
  uint32_t bits = FragBits(f);
  return bits == 0 ? (1ull << 63) : (static_cast<uint64_t>(FragValue(f)) + 1) << (63 - bits);
}

bool FragContains(Frag f, uint64_t hash) { return hash >= FragStart(f) && hash < FragEnd(f); }

Frag FragFor(const std::vector<Frag>& frags, uint64_t hash) {
  for (Frag f : frags) {
    if (FragContains(f, hash)) return f;
  }
  return kRootFrag;
}

std::pair<Frag, Frag> SplitFrag(Frag f) {
  uint32_t bits = FragBits(f) + 1;
  return {MakeFrag(bits, FragValue(f) << 1), MakeFrag(bits, (FragValue(f) << 1) | 1)};
}

std::vector<Frag> SortedFrags(const std::vector<Frag>& frags) {
  if (frags.empty()) return {kRootFrag};
  std::vector<Frag> sorted = frags;
  std::sort(sorted.begin(), sorted.end(),
            [](Frag a, Frag b) { return FragStart(a) < FragStart(b); });
  return sorted;
}

std::string InodeTableObject(uint32_t fs, uint64_t ino) {
  return absl::StrFormat("fs%u.inodes.%x", fs, ino >> 12);
}

std::string InodeKey(uint64_t ino) { return absl::StrFormat("%016x", ino); }

std::string InlineKey(uint64_t ino) { return absl::StrFormat("%016x.d", ino); }

std::string DirFragObject(uint32_t fs, uint64_t dir, Frag frag) {
  return absl::StrFormat("fs%u.dir.%x.%08x", fs, dir, frag);
}

uint64_t RankFirstIno(uint32_t rank) { return rank == 0 ? kFirstFreeIno : uint64_t{rank} << 40; }

namespace {

std::string RankPrefix(uint32_t fs, uint32_t rank) {
  return rank == 0 ? absl::StrFormat("fs%u.", fs) : absl::StrFormat("fs%u.r%u.", fs, rank);
}

}  // namespace

std::string JournalHeadObject(uint32_t fs, uint32_t rank) {
  return RankPrefix(fs, rank) + "journal.head";
}

std::string JournalSegmentObject(uint32_t fs, uint32_t rank, uint64_t segment) {
  return RankPrefix(fs, rank) + absl::StrFormat("journal.%016x", segment);
}

std::string TableObject(uint32_t fs, uint32_t rank, absl::string_view table) {
  return absl::StrCat(RankPrefix(fs, rank), table);
}

}  // namespace weft::mds
