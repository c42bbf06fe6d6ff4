// Objects kept in memory, with the semantics the OSDs give (objects.h): for
// unit tests of the MDS's parts and for the simulation of the metadata core
// (tests/sim), where a process crash is the loss of everything but a
// MemObjects.
//
// Each user takes a Client with a name, as each process has an ObjectClient
// with its own; Blocklist(name) fences that client as the OSD blocklist does
// (every later request is PermissionDenied, reads too). A hook sees every
// request before it applies and may refuse it (the request then changes
// nothing), which is how tests inject a full cluster, a dead OSD or a crash
// in the middle of a multi-object update.
//
// Thread-safe: one mutex around everything (tests only).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"
#include "common/objects/objects.h"

namespace weft::objects {

class MemObjects {
 public:
  struct Object {
    std::string data;
    std::map<std::string, std::string> xattrs;
    std::map<std::string, std::string> omap;
    uint64_t version = 0;  // bumped by every mutation
    int64_t mtime_ns = 0;
  };
  // What the hook sees of a request.
  struct Request {
    const std::string* client;
    PoolId pool;
    const std::string* oid;
    const std::vector<pb::ObjectOp>* ops;
    bool mutating;
  };
  // Returns OK to let the request apply, or the error its caller gets.
  using Hook = std::function<absl::Status(const Request&)>;

  MemObjects() = default;
  MemObjects(const MemObjects&) = delete;
  MemObjects& operator=(const MemObjects&) = delete;

  // A view whose requests carry `name`. It must not outlive this MemObjects.
  std::unique_ptr<Objects> Client(std::string name);

  // Every later request of client `name` fails (PermissionDenied).
  void Blocklist(const std::string& name);
  void SetHook(Hook hook);

  // For checks, bypassing clients and the hook: the object, if it exists.
  std::optional<Object> Find(PoolId pool, const std::string& oid);
  // Names of the objects of `pool` that begin with `prefix`, sorted.
  std::vector<std::string> Names(PoolId pool, const std::string& prefix = "");
  // How many requests applied, and how many mutated something.
  uint64_t requests() const;
  uint64_t mutations() const;

 private:
  class View;
  absl::StatusOr<OpResult> Execute(const std::string& client, PoolId pool, const std::string& oid,
                                   ObjectOperation&& op);
  absl::StatusOr<std::vector<std::string>> List(const std::string& client, PoolId pool,
                                                const std::string& prefix);
  absl::Status Admit(const Request& request) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::vector<std::string> NamesLocked(PoolId pool, const std::string& prefix) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  using Key = std::pair<uint32_t, std::string>;  // (pool, oid)
  mutable absl::Mutex mu_;
  std::map<Key, Object> objects_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<std::string> blocklist_ ABSL_GUARDED_BY(mu_);
  Hook hook_ ABSL_GUARDED_BY(mu_);
  uint64_t requests_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t mutations_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace weft::objects
