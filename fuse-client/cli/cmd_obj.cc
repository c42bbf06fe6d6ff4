// obj put|get|stat|rm|ls.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "fuse-client/cli/commands.h"
#include "common/objects/object_client.h"

namespace weft::cli {
namespace {

absl::StatusOr<std::string> ReadInput(const std::string& path) {
  std::stringstream buf;
  if (path.empty() || path == "-") {
    buf << std::cin.rdbuf();
  } else {
    std::ifstream in(path, std::ios::binary);
    if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
    buf << in.rdbuf();
  }
  return buf.str();
}

absl::Status WriteOutput(const std::string& path, const std::string& data) {
  if (path.empty() || path == "-") {
    size_t done = 0;
    while (done < data.size()) {
      ssize_t n = ::write(STDOUT_FILENO, data.data() + done, data.size() - done);
      if (n <= 0) return absl::InternalError("write to stdout failed");
      done += n;
    }
    return absl::OkStatus();
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
  out.close();
  if (!out) return absl::InternalError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<objects::ObjectClient>> ConnectClient(const Config& config) {
  auto mds = config.MdsAddresses();
  if (!mds.ok()) return mds.status();
  objects::ClientOptions options;
  options.mds_addrs = *mds;
  return objects::ObjectClient::Connect(options);
}

int CmdObj(const Config& config, const Args& args) {
  const char* usage = "usage: weft obj put|get|stat|rm POOL NAME [FILE] | weft obj ls POOL\n";
  if (args.positional.size() < 2) {
    std::fputs(usage, stderr);
    return 2;
  }
  const std::string& sub = args.positional[0];
  auto client = ConnectClient(config);
  if (!client.ok()) return Fail(client.status());
  auto pool = (*client)->LookupPool(args.positional[1]);
  if (!pool.ok()) return Fail(pool.status());
  if (sub == "ls") {
    auto names = (*client)->List(*pool);
    if (!names.ok()) return Fail(names.status(), "obj ls");
    for (const auto& n : *names) std::printf("%s\n", n.c_str());
    return 0;
  }
  if (args.positional.size() < 3) {
    std::fputs(usage, stderr);
    return 2;
  }
  const std::string& name = args.positional[2];
  const std::string file = args.positional.size() > 3 ? args.positional[3] : "";
  if (sub == "put") {
    auto data = ReadInput(file);
    if (!data.ok()) return Fail(data.status());
    auto status = (*client)->Put(*pool, name, *data);
    if (!status.ok()) return Fail(status, "obj put");
    return 0;
  }
  if (sub == "get") {
    auto data = (*client)->Get(*pool, name);
    if (!data.ok()) return Fail(data.status(), "obj get");
    auto status = WriteOutput(file, *data);
    return status.ok() ? 0 : Fail(status);
  }
  if (sub == "stat") {
    auto st = (*client)->Stat(*pool, name);
    if (!st.ok()) return Fail(st.status(), "obj stat");
    std::printf("%s/%s size %lu mtime_ns %ld version %lu.%lu\n", args.positional[1].c_str(),
                name.c_str(), static_cast<unsigned long>(st->size), static_cast<long>(st->mtime_ns),
                static_cast<unsigned long>(st->version_epoch),
                static_cast<unsigned long>(st->version_seq));
    return 0;
  }
  if (sub == "rm") {
    auto status = (*client)->Remove(*pool, name);
    if (!status.ok()) return Fail(status, "obj rm");
    return 0;
  }
  std::fputs(usage, stderr);
  return 2;
}

}  // namespace weft::cli
