#include "common/config/config.h"

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/status/status.h"

namespace weft {

absl::StatusOr<Config> Config::Parse(absl::string_view text, absl::string_view origin) {
  Config config;
  std::string section;
  int line_no = 0;
  for (absl::string_view raw : absl::StrSplit(text, '\n')) {
    ++line_no;
    absl::string_view line = absl::StripAsciiWhitespace(raw);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    if (line.front() == '[') {
      if (line.back() != ']' || line.size() < 3) {
        return absl::InvalidArgumentError(
            absl::StrCat(origin, ":", line_no, ": bad section header '", line, "'"));
      }
      section = std::string(absl::StripAsciiWhitespace(line.substr(1, line.size() - 2)));
      if (section == "global") section.clear();
      continue;
    }
    size_t eq = line.find('=');
    if (eq == absl::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat(origin, ":", line_no, ": expected 'key = value', got '", line, "'"));
    }
    std::string key(absl::StripAsciiWhitespace(line.substr(0, eq)));
    if (key.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(origin, ":", line_no, ": empty key"));
    }
    // Ceph-style configs write "osd max object size" or "osd_max_object_size".
    for (char& c : key) {
      if (c == ' ') c = '_';
    }
    if (!section.empty()) key = absl::StrCat(section, ".", key);
    config.values_[key] = std::string(absl::StripAsciiWhitespace(line.substr(eq + 1)));
  }
  return config;
}

absl::StatusOr<Config> Config::Load(const std::string& path) {
  std::ifstream in(path);
  if (!in) return ErrnoToStatus(errno, absl::StrCat("cannot read config ", path));
  std::stringstream text;
  text << in.rdbuf();
  ASSIGN_OR_RETURN(Config config, Parse(text.str(), path));
  config.path_ = path;
  return config;
}

std::string Config::DefaultPath(const std::string& flag_path) {
  if (!flag_path.empty()) return flag_path;
  if (const char* env = std::getenv("WEFT_CONF"); env != nullptr && *env != '\0') return env;
  return "/etc/weft/weft.conf";
}

bool Config::Has(absl::string_view key) const { return values_.find(key) != values_.end(); }

std::string Config::Get(absl::string_view key, absl::string_view fallback) const {
  auto it = values_.find(key);
  return it == values_.end() ? std::string(fallback) : it->second;
}

std::vector<std::string> Config::GetList(absl::string_view key) const {
  std::vector<std::string> out;
  for (absl::string_view item : absl::StrSplit(Get(key), ',')) {
    item = absl::StripAsciiWhitespace(item);
    if (!item.empty()) out.emplace_back(item);
  }
  return out;
}

absl::StatusOr<int64_t> Config::GetInt(absl::string_view key, int64_t fallback) const {
  auto it = values_.find(key);
  if (it == values_.end()) return fallback;
  int64_t value = 0;
  if (!absl::SimpleAtoi(it->second, &value)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path_, ": ", key, " = '", it->second, "' is not an integer"));
  }
  return value;
}

void Config::Set(absl::string_view key, absl::string_view value) {
  values_[std::string(key)] = std::string(value);
}

absl::StatusOr<std::string> Config::Fsid() const {
  std::string fsid = Get("fsid");
  if (fsid.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(path_, ": no 'fsid' set"));
  }
  for (char c : fsid) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') {
      return absl::InvalidArgumentError(absl::StrCat(path_, ": fsid '", fsid,
                                                     "' may hold only letters, digits, - and _"));
    }
  }
  return fsid;
}

absl::StatusOr<std::vector<std::string>> Config::EtcdEndpoints() const {
  std::vector<std::string> endpoints = GetList("etcd");
  if (endpoints.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(path_, ": no 'etcd' endpoints set"));
  }
  return endpoints;
}

absl::StatusOr<std::vector<std::string>> Config::MdsAddresses() const {
  std::vector<std::string> addrs = GetList("mds");
  if (addrs.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(path_, ": no 'mds' addresses set"));
  }
  return addrs;
}

std::string ClusterPrefix(absl::string_view fsid) { return absl::StrCat("/weft/", fsid, "/"); }

bool IsPlainName(absl::string_view name, size_t max_len) {
  if (name.empty() || name.size() > max_len) return false;
  for (char c : name) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') {
      return false;
    }
  }
  return true;
}

absl::StatusOr<uint64_t> ParseSize(absl::string_view text, uint64_t max) {
  auto bad = [&] {
    return ErrnoError(absl::StatusCode::kInvalidArgument, EINVAL,
                      absl::StrCat("not a size: '", absl::CHexEscape(text.substr(0, 64)),
                                   "' (bytes, or a number with K, M or G)"));
  };
  absl::string_view digits = text;
  if (absl::EndsWithIgnoreCase(digits, "ib")) digits.remove_suffix(2);
  int shift = 0;
  if (!digits.empty()) {
    switch (absl::ascii_tolower(static_cast<unsigned char>(digits.back()))) {
      case 'k': shift = 10; break;
      case 'm': shift = 20; break;
      case 'g': shift = 30; break;
      default: break;
    }
    if (shift != 0) digits.remove_suffix(1);
  }
  if (shift == 0 && digits.size() != text.size()) return bad();  // "iB" alone
  if (digits.empty() || digits.find_first_not_of("0123456789") != absl::string_view::npos) {
    return bad();
  }
  uint64_t n = 0;  // digits only by now: SimpleAtoi fails only past 2^64
  if (!absl::SimpleAtoi(digits, &n) || n > (max >> shift)) {
    return ErrnoError(absl::StatusCode::kInvalidArgument, EINVAL,
                      absl::StrCat("size '", text, "' is over the limit of ", max, " bytes"));
  }
  return n << shift;
}

}  // namespace weft
