// The cluster configuration file (weft.conf): `key = value` lines, `#` or `;`
// comments, optional `[section]` headers whose keys are read as
// "section.key". Found at -c FILE, else $WEFT_CONF, else /etc/weft/weft.conf.
//
//   fsid = 0b6f1c52-...          the cluster's id (the etcd key prefix)
//   etcd = 127.0.0.1:2379        comma-separated etcd endpoints (daemons only)
//   mds  = 127.0.0.1:6789        comma-separated MDS addresses (clients)
#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace weft {

// A size in bytes as people write it: decimal digits, optionally followed by
// K, M or G (binary units, any case, "KiB" style accepted). Nothing else: no
// sign, spaces, fractions or hex. Larger than `max`: an error. Errors are
// InvalidArgument with EINVAL and say what was wrong.
absl::StatusOr<uint64_t> ParseSize(absl::string_view text, uint64_t max);

class Config {
 public:
  // Parses `text`; `origin` names it in error messages.
  static absl::StatusOr<Config> Parse(absl::string_view text, absl::string_view origin);
  static absl::StatusOr<Config> Load(const std::string& path);
  // -c FILE if given, else $WEFT_CONF, else /etc/weft/weft.conf.
  static std::string DefaultPath(const std::string& flag_path);

  bool Has(absl::string_view key) const;
  std::string Get(absl::string_view key, absl::string_view fallback = "") const;
  // A comma-separated list, trimmed, empty items dropped.
  std::vector<std::string> GetList(absl::string_view key) const;
  absl::StatusOr<int64_t> GetInt(absl::string_view key, int64_t fallback) const;
  void Set(absl::string_view key, absl::string_view value);
  const std::string& path() const { return path_; }

  // The values every daemon and client needs, checked.
  absl::StatusOr<std::string> Fsid() const;
  absl::StatusOr<std::vector<std::string>> EtcdEndpoints() const;
  absl::StatusOr<std::vector<std::string>> MdsAddresses() const;

 private:
  std::map<std::string, std::string, std::less<>> values_;
  std::string path_;
};

// The etcd key prefix of a cluster: "/weft/<fsid>/".
std::string ClusterPrefix(absl::string_view fsid);

// 1..max_len letters, digits, '-', '_' and '.': the names of pools,
// filesystems and MDS daemons, which go into etcd keys, object names and
// logs as they are.
bool IsPlainName(absl::string_view name, size_t max_len);

}  // namespace weft
