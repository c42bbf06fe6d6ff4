// A small argument parser for `weft SUBCOMMAND ... [--opt value] [--flag]`.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace weft::cli {

struct Args {
  std::vector<std::string> positional;
  std::map<std::string, std::string> options;  // --name value / --name=value
  std::set<std::string> flags;                 // --name alone (listed as boolean)

  std::string Get(const std::string& name, const std::string& fallback = "") const;
  absl::StatusOr<int64_t> GetInt(const std::string& name, int64_t fallback) const;
  absl::StatusOr<double> GetDouble(const std::string& name, double fallback) const;
  // Sizes: 4096, 4K, 4KiB, 4M, 1G.
  absl::StatusOr<uint64_t> GetBytes(const std::string& name, uint64_t fallback) const;
  bool Has(const std::string& name) const { return flags.count(name) || options.count(name); }
};

// `booleans` are options that take no value.
absl::StatusOr<Args> ParseArgs(const std::vector<std::string>& argv,
                               const std::set<std::string>& booleans);

}  // namespace weft::cli
