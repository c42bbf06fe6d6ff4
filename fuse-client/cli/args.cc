#include "fuse-client/cli/args.h"

#include <limits>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/config/config.h"

namespace weft::cli {

absl::StatusOr<Args> ParseArgs(const std::vector<std::string>& argv,
                               const std::set<std::string>& booleans) {
  Args args;
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a.size() > 2 && a.rfind("--", 0) == 0) {
      std::string name = a.substr(2);
      size_t eq = name.find('=');
      if (eq != std::string::npos) {
        args.options[name.substr(0, eq)] = name.substr(eq + 1);
      } else if (booleans.count(name)) {
        args.flags.insert(name);
      } else if (i + 1 < argv.size()) {
        args.options[name] = argv[++i];
      } else {
        return absl::InvalidArgumentError(absl::StrCat("option --", name, " needs a value"));
      }
    } else {
      args.positional.push_back(a);
    }
  }
  return args;
}

std::string Args::Get(const std::string& name, const std::string& fallback) const {
  auto it = options.find(name);
  return it == options.end() ? fallback : it->second;
}

absl::StatusOr<int64_t> Args::GetInt(const std::string& name, int64_t fallback) const {
  auto it = options.find(name);
  if (it == options.end()) return fallback;
  int64_t v = 0;
  if (!absl::SimpleAtoi(it->second, &v)) {
    return absl::InvalidArgumentError(absl::StrCat("--", name, " '", it->second,
                                                   "' is not an integer"));
  }
  return v;
}

absl::StatusOr<double> Args::GetDouble(const std::string& name, double fallback) const {
  auto it = options.find(name);
  if (it == options.end()) return fallback;
  double v = 0;
  if (!absl::SimpleAtod(it->second, &v)) {
    return absl::InvalidArgumentError(absl::StrCat("--", name, " '", it->second,
                                                   "' is not a number"));
  }
  return v;
}

absl::StatusOr<uint64_t> Args::GetBytes(const std::string& name, uint64_t fallback) const {
  auto it = options.find(name);
  if (it == options.end()) return fallback;
  return ParseSize(it->second, std::numeric_limits<uint64_t>::max());
}

}  // namespace weft::cli
