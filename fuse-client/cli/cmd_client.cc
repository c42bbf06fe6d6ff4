// client commands: ls, evict (the client sessions of a filesystem's rank).
#include <cstdio>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/fs/mds_roles.h"
#include "common/rpc/rpc.h"
#include "fuse-client/cli/commands.h"
#include "fuse-client/lib/meta_client.h"
#include "proto/mds_client.grpc.pb.h"

namespace weft::cli {
namespace {

constexpr char kClientUsage[] = "client ls [FS] | client evict SESSION [--reason TEXT]";

int ClientUsage() {
  std::fprintf(stderr, "usage: weft %s\n", kClientUsage);
  return 2;
}

std::unique_ptr<pb::Mds::Stub> RankStub(rpc::ChannelCache& channels, const pb::FsInfo& fs) {
  return pb::Mds::NewStub(channels.Get(fs::RankOf(fs, 0).addr()));
}

int ClientList(const pb::FsMap& map, const std::string& name) {
  rpc::ChannelCache channels;
  int shown = 0;
  for (const pb::FsInfo& fs : map.filesystems()) {
    if (!name.empty() && fs.name() != name) continue;
    ++shown;
    grpc::ClientContext ctx;
    ctx.set_deadline(rpc::DeadlineIn(10000));
    pb::ClientListRequest req;
    req.set_fs(fs.name());
    pb::ClientListReply reply;
    absl::Status status = rpc::FromGrpc(RankStub(channels, fs)->ClientList(&ctx, req, &reply), "mds");
    if (status.ok()) status = rpc::FromProto(reply.status());
    if (!status.ok()) return Fail(status, absl::StrCat("client ls ", fs.name()));
    std::printf("%s: %d sessions\n", fs.name().c_str(), reply.clients_size());
    for (const pb::ClientInfo& c : reply.clients()) {
      std::printf(
          "  session %lu: client %s, osd identity %s, opened %ld s ago, idle %.1f s, "
          "open files %lu, caps %lu (Ls %lu, AsFs %lu), inodes cached %lu, revoke stream %s\n",
          static_cast<unsigned long>(c.session()), absl::CHexEscape(c.client()).c_str(),
          c.osd_client().empty() ? "- (cannot be fenced)" : absl::CHexEscape(c.osd_client()).c_str(),
          static_cast<long>((absl::ToUnixMillis(absl::Now()) - c.opened_ms()) / 1000),
          c.idle_ms() / 1000.0, static_cast<unsigned long>(c.open_files()),
          static_cast<unsigned long>(c.caps()), static_cast<unsigned long>(c.dir_leases()),
          static_cast<unsigned long>(c.attr_caps()), static_cast<unsigned long>(c.cached_inodes()),
          c.lease_stream() ? "up" : "down");
    }
  }
  if (shown == 0 && !name.empty()) {
    return Fail(absl::NotFoundError(absl::StrCat("no filesystem named ", name)), "client ls");
  }
  return 0;
}

int ClientEvict(const pb::FsMap& map, const std::string& session_arg, const std::string& reason) {
  uint64_t session = 0;
  if (!absl::SimpleAtoi(session_arg, &session) || session == 0) {
    return Fail(absl::InvalidArgumentError(absl::StrCat(
                    "'", session_arg, "' is not a session id (weft client ls shows them)")),
                "client evict");
  }
  if (reason.size() > 256) {
    return Fail(absl::InvalidArgumentError("--reason is at most 256 bytes"), "client evict");
  }
  // A session id names its filesystem: (fs id << 40) | n.
  const uint32_t fs_id = static_cast<uint32_t>(session >> 40);
  for (const pb::FsInfo& fs : map.filesystems()) {
    if (fs.id() != fs_id) continue;
    rpc::ChannelCache channels;
    grpc::ClientContext ctx;
    ctx.set_deadline(rpc::DeadlineIn(60000));  // the fence waits for the OSD map
    pb::ClientEvictRequest req;
    req.set_fs(fs.name());
    req.set_session(session);
    req.set_reason(reason);
    pb::ClientEvictReply reply;
    absl::Status status =
        rpc::FromGrpc(RankStub(channels, fs)->ClientEvict(&ctx, req, &reply), "mds");
    if (status.ok()) status = rpc::FromProto(reply.status());
    if (!status.ok()) return Fail(status, absl::StrCat("client evict ", session));
    std::printf("evicted session %lu of %s: blocklisted at the OSDs from osdmap epoch %lu\n",
                static_cast<unsigned long>(session), fs.name().c_str(),
                static_cast<unsigned long>(reply.osd_epoch()));
    return 0;
  }
  return Fail(absl::NotFoundError(absl::StrCat("no filesystem has session ", session)),
              "client evict");
}

}  // namespace

int CmdClient(const Config& config, const Args& args) {
  if (args.positional.empty()) return ClientUsage();
  auto mds = config.MdsAddresses();
  if (!mds.ok()) return Fail(mds.status());
  client::FsAdmin admin(*mds);
  const std::string& sub = args.positional[0];
  if (sub == "ls" && args.positional.size() <= 2) {
    auto map = admin.FsList();
    if (!map.ok()) return Fail(map.status(), "client ls");
    return ClientList(*map, args.positional.size() == 2 ? args.positional[1] : "");
  }
  if (sub == "evict" && args.positional.size() == 2) {
    auto map = admin.FsList();
    if (!map.ok()) return Fail(map.status(), "client evict");
    return ClientEvict(*map, args.positional[1], args.Get("reason", "weft client evict"));
  }
  return ClientUsage();
}

}  // namespace weft::cli
