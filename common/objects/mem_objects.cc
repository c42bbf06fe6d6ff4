#include "common/objects/mem_objects.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/status/status.h"

namespace weft::objects {

class MemObjects::View final : public Objects {
 public:
  View(MemObjects* store, std::string name) : store_(store), name_(std::move(name)) {}

  absl::StatusOr<OpResult> Execute(PoolId pool, const std::string& oid,
                                   ObjectOperation&& op) override {
    return store_->Execute(name_, pool, oid, std::move(op));
  }
  absl::StatusOr<std::vector<std::string>> List(PoolId pool, const std::string& prefix) override {
    return store_->List(name_, pool, prefix);
  }

 private:
  MemObjects* const store_;
  const std::string name_;
};

namespace {

absl::Status NoSuchObject(const std::string& oid) {
  return absl::NotFoundError(absl::StrCat("no such object ", oid.substr(0, 64)));
}

// Applies the mutations of one request to `object` (absent: nullopt); on an
// error `object` may be half changed, so the caller works on a copy.
absl::Status ApplyMutations(const std::string& oid, const std::vector<pb::ObjectOp>& ops,
                            std::optional<MemObjects::Object>* object) {
  for (const pb::ObjectOp& op : ops) {
    auto ensure = [&]() -> MemObjects::Object& {
      if (!object->has_value()) object->emplace();
      return **object;
    };
    switch (op.type()) {
      case pb::CREATE:
        if (object->has_value() && op.exclusive()) return absl::AlreadyExistsError("object exists");
        ensure();
        break;
      case pb::WRITE: {
        std::string& data = ensure().data;
        const uint64_t end = op.offset() + op.data().size();
        if (data.size() < end) data.resize(end, '\0');
        data.replace(op.offset(), op.data().size(), op.data());
        break;
      }
      case pb::WRITE_FULL:
        ensure().data = op.data();
        break;
      case pb::APPEND:
        ensure().data += op.data();
        break;
      case pb::TRUNCATE:
        ensure().data.resize(op.offset(), '\0');
        break;
      case pb::REMOVE:
        if (!object->has_value()) return NoSuchObject(oid);
        object->reset();
        break;
      case pb::SETXATTR:
        ensure().xattrs[op.name()] = op.data();
        break;
      case pb::RMXATTR:
        if (!object->has_value()) return NoSuchObject(oid);
        (*object)->xattrs.erase(op.name());
        break;
      case pb::OMAP_SET:
        for (const auto& kv : op.kvs()) ensure().omap[kv.key()] = kv.value();
        if (op.kvs().empty()) ensure();
        break;
      case pb::OMAP_RM:
        if (!object->has_value()) return NoSuchObject(oid);
        for (const std::string& key : op.keys()) (*object)->omap.erase(key);
        break;
      case pb::OMAP_CLEAR:
        if (!object->has_value()) return NoSuchObject(oid);
        (*object)->omap.clear();
        break;
      default:
        return absl::InvalidArgumentError(absl::StrCat("not a mutation: ", op.type()));
    }
  }
  return absl::OkStatus();
}

absl::Status ApplyRead(const MemObjects::Object& object, const pb::ObjectOp& op,
                       OpResult::Item* item) {
  switch (op.type()) {
    case pb::READ: {
      const uint64_t size = object.data.size();
      if (op.offset() >= size) return absl::OkStatus();  // empty at or past the end
      const uint64_t length =
          std::min<uint64_t>(op.length() == 0 ? size : op.length(), size - op.offset());
      item->data = ByteChain(object.data.substr(op.offset(), length));
      item->size = size;
      return absl::OkStatus();
    }
    case pb::STAT:
      item->size = object.data.size();
      item->mtime_ns = object.mtime_ns;
      item->version_epoch = 1;
      item->version_seq = object.version;
      return absl::OkStatus();
    case pb::GETXATTR: {
      auto it = object.xattrs.find(op.name());
      if (it == object.xattrs.end()) return absl::NotFoundError("no such xattr");
      item->data = ByteChain(it->second);
      return absl::OkStatus();
    }
    case pb::GETXATTRS:
      item->kvs.assign(object.xattrs.begin(), object.xattrs.end());
      return absl::OkStatus();
    case pb::OMAP_GET:
      for (const std::string& key : op.keys()) {
        auto it = object.omap.find(key);
        if (it != object.omap.end()) item->kvs.emplace_back(it->first, it->second);
      }
      return absl::OkStatus();
    case pb::OMAP_LIST: {
      const uint32_t max =
          op.max_entries() == 0 ? 1000 : std::min<uint32_t>(op.max_entries(), 100000);
      auto it = op.start_after().empty() ? object.omap.begin()
                                         : object.omap.upper_bound(op.start_after());
      // Keys after start_after that begin with the prefix.
      if (it != object.omap.end() && it->first < op.prefix()) {
        it = object.omap.lower_bound(op.prefix());
      }
      for (; it != object.omap.end() && absl::StartsWith(it->first, op.prefix()); ++it) {
        if (item->kvs.size() >= max) {
          item->more = true;
          break;
        }
        item->kvs.emplace_back(it->first, it->second);
      }
      return absl::OkStatus();
    }
    default:
      return absl::InvalidArgumentError(absl::StrCat("not a read: ", op.type()));
  }
}

}  // namespace

std::unique_ptr<Objects> MemObjects::Client(std::string name) {
  return std::make_unique<View>(this, std::move(name));
}

void MemObjects::Blocklist(const std::string& name) {
  absl::MutexLock lock(&mu_);
  blocklist_.insert(name);
}

void MemObjects::SetHook(Hook hook) {
  absl::MutexLock lock(&mu_);
  hook_ = std::move(hook);
}

absl::Status MemObjects::Admit(const Request& request) {
  if (blocklist_.contains(*request.client)) {
    return EvictedError(absl::StrCat("client ", *request.client, " is blocklisted"));
  }
  return hook_ ? hook_(request) : absl::OkStatus();
}

absl::StatusOr<OpResult> MemObjects::Execute(const std::string& client, PoolId pool,
                                             const std::string& oid, ObjectOperation&& op) {
  const std::vector<pb::ObjectOp> ops = std::move(op).TakeOps();
  if (oid.empty()) return absl::InvalidArgumentError("object name is empty");
  if (ops.empty()) return absl::InvalidArgumentError("request has no operations");
  size_t reads = 0, writes = 0;
  for (const pb::ObjectOp& o : ops) {
    if (IsMutation(o.type())) {
      ++writes;
    } else if (IsRead(o.type())) {
      ++reads;
    } else {
      return absl::InvalidArgumentError(absl::StrCat("unknown operation type ", o.type()));
    }
  }
  if (reads > 0 && writes > 0) {
    return absl::InvalidArgumentError("a request may not mix reads and mutations");
  }
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(Admit(Request{&client, pool, &oid, &ops, writes > 0}));
  ++requests_;
  const Key key(pool.value(), oid);
  auto found = objects_.find(key);
  OpResult result;
  if (reads > 0) {
    if (found == objects_.end()) return NoSuchObject(oid);
    for (const pb::ObjectOp& o : ops) {
      OpResult::Item item;
      RETURN_IF_ERROR(ApplyRead(found->second, o, &item));
      result.items.push_back(std::move(item));
    }
    return result;
  }
  std::optional<Object> object;
  if (found != objects_.end()) object = found->second;
  result.size_before = object ? object->data.size() : 0;
  RETURN_IF_ERROR(ApplyMutations(oid, ops, &object));
  ++mutations_;
  result.items.resize(ops.size());
  if (!object) {
    if (found != objects_.end()) objects_.erase(found);
    return result;
  }
  object->version = (found != objects_.end() ? found->second.version : 0) + 1;
  result.size_after = object->data.size();
  result.version_epoch = 1;
  result.version_seq = object->version;
  objects_[key] = std::move(*object);
  return result;
}

absl::StatusOr<std::vector<std::string>> MemObjects::List(const std::string& client, PoolId pool,
                                                          const std::string& prefix) {
  absl::MutexLock lock(&mu_);
  const std::vector<pb::ObjectOp> none;
  const std::string oid;
  RETURN_IF_ERROR(Admit(Request{&client, pool, &oid, &none, false}));
  return NamesLocked(pool, prefix);
}

std::optional<MemObjects::Object> MemObjects::Find(PoolId pool, const std::string& oid) {
  absl::MutexLock lock(&mu_);
  auto it = objects_.find(Key(pool.value(), oid));
  if (it == objects_.end()) return std::nullopt;
  return it->second;
}

std::vector<std::string> MemObjects::Names(PoolId pool, const std::string& prefix) {
  absl::MutexLock lock(&mu_);
  return NamesLocked(pool, prefix);
}

std::vector<std::string> MemObjects::NamesLocked(PoolId pool, const std::string& prefix) const {
  std::vector<std::string> out;
  for (auto it = objects_.lower_bound(Key(pool.value(), prefix));
       it != objects_.end() && it->first.first == pool.value() &&
       absl::StartsWith(it->first.second, prefix);
       ++it) {
    out.push_back(it->first.second);
  }
  return out;
}

uint64_t MemObjects::requests() const {
  absl::MutexLock lock(&mu_);
  return requests_;
}

uint64_t MemObjects::mutations() const {
  absl::MutexLock lock(&mu_);
  return mutations_;
}

}  // namespace weft::objects
