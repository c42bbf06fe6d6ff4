#include "mds/journal/journal_format.h"

#include <cstdint>
#include <cstring>

#include "xxhash.h"

namespace weft::mds {
namespace {

uint32_t Checksum32(const char* data, size_t size) {
  return static_cast<uint32_t>(XXH3_64bits(data, size));
}

void PutU32(uint32_t v, std::string* out) {
  char b[4];
  std::memcpy(b, &v, 4);  // little-endian hosts only (checked in CMake)
  out->append(b, 4);
}

uint32_t GetU32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

}  // namespace

void AppendFrame(const std::string& payload, std::string* out) {
  PutU32(static_cast<uint32_t>(payload.size()), out);
  PutU32(Checksum32(payload.data(), payload.size()), out);
  out->append(payload);
}

std::vector<std::string> ParseFrames(const std::string& segment, size_t* valid_bytes) {
  std::vector<std::string> frames;
  size_t pos = 0;
  while (segment.size() - pos >= 8) {
    const uint32_t len = GetU32(segment.data() + pos);
    const uint32_t sum = GetU32(segment.data() + pos + 4);
    if (segment.size() - pos - 8 < len) break;
    if (Checksum32(segment.data() + pos + 8, len) != sum) break;
    frames.push_back(segment.substr(pos + 8, len));
    pos += 8 + len;
  }
  *valid_bytes = pos;
  return frames;
}

}  // namespace weft::mds
