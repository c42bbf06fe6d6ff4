// A fresh directory under /tmp for one test, removed with everything in it
// when the object goes out of scope (also when an assertion fails).
//   TempDir dir("weft-kv");  // dir.path: "/tmp/weft-kv-XXXXXX", made
#pragma once

#include <stdio.h>
#include <stdlib.h>

#include <filesystem>
#include <string>

namespace weft::testing {

struct TempDir {
  explicit TempDir(const std::string& prefix = "weft-test") {
    std::string tmpl = "/tmp/" + prefix + "-XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) {
      perror("mkdtemp");  // /tmp unusable: no test can run
      abort();
    }
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  std::string path;
};

}  // namespace weft::testing
