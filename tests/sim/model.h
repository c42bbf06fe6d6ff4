// The simulation's model of the namespace: what the acknowledged operations
// of the simulated clients made, kept by the simplest code that can say it
// (maps of names and nodes), against which the MDS's namespace is compared.
//
// Every name belongs to the client that made it, and only that client
// changes it (clients share directories, never names), and a client sends
// its next request only after the last was answered: so applying each
// client's answers in its own order gives the namespace the MDS must have,
// whatever the interleaving between clients. Inode numbers are the MDS's,
// learned from the replies.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace weft::sim {

struct Node {
  uint32_t mode = 0;  // type and permission bits
  uint32_t uid = 0, gid = 0;
  uint64_t size = 0;
  std::string target;                         // symlinks
  std::map<std::string, std::string> xattrs;  // user.* only
  uint64_t parent = 0;                        // directories: the one directory naming it
  int links = 0;                              // dentries naming it
  int open = 0;                               // handles of every client
  bool IsDir() const { return (mode & 0170000) == 0040000; }
  bool IsReg() const { return (mode & 0170000) == 0100000; }
};

class Model {
 public:
  explicit Model(uint64_t root);

  const std::map<uint64_t, Node>& nodes() const { return nodes_; }
  const std::map<uint64_t, std::map<std::string, uint64_t>>& entries() const { return entries_; }
  const Node* Find(uint64_t ino) const;
  std::optional<uint64_t> Lookup(uint64_t dir, const std::string& name) const;
  bool Empty(uint64_t dir) const;
  // Whether `dir` is `ancestor` or below it.
  bool Under(uint64_t dir, uint64_t ancestor) const;

  // What an acknowledged change did (the MDS's inode numbers).
  void Make(uint64_t dir, const std::string& name, uint64_t ino, uint32_t mode,
            const std::string& target = "");
  void Link(uint64_t ino, uint64_t dir, const std::string& name);
  // Removes the name; its node goes once nothing names or holds it.
  void Unlink(uint64_t dir, const std::string& name);
  void Rename(uint64_t dir, const std::string& name, uint64_t new_dir, const std::string& new_name,
              bool exchange);
  void SetMode(uint64_t ino, uint32_t perm);
  void SetOwner(uint64_t ino, uint32_t uid, uint32_t gid);
  // Whether a caller (uid, gid) may read (4), write (2) or search (1) as
  // `want` asks, by the mode bits alone (the simulation sets no ACLs); root
  // always may (only directories are asked about).
  bool May(uint64_t ino, uint32_t uid, uint32_t gid, uint32_t want) const;
  void SetSize(uint64_t ino, uint64_t size);
  void Grow(uint64_t ino, uint64_t end);
  void SetXattr(uint64_t ino, const std::string& name, const std::string& value);
  void RemoveXattr(uint64_t ino, const std::string& name);
  void Open(uint64_t ino);
  void Close(uint64_t ino);
  // Every handle is gone (a client's session ended).
  void DropOpens(const std::map<uint64_t, int>& handles);

 private:
  void MaybeRemove(uint64_t ino);

  std::map<uint64_t, Node> nodes_;
  std::map<uint64_t, std::map<std::string, uint64_t>> entries_;  // dir -> name -> ino
};

}  // namespace weft::sim
