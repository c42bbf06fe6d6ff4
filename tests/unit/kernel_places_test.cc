// Where weft-fuse believes the kernel keeps each inode: puts, renames
// (over another directory, exchanges, onto itself) and forgets.
#include <catch2/catch.hpp>

#include <optional>
#include <string>
#include <utility>

#include "fuse-client/fuse/kernel_places.h"

namespace weft::fuse {
namespace {

using Place = std::optional<std::pair<uint64_t, std::string>>;

Place At(uint64_t parent, const std::string& name) { return std::make_pair(parent, name); }

TEST_CASE("kernel places: put - replace - drop", "[unit][fuse]") {
  KernelPlaces dirs;
  CHECK(dirs.Where(7) == std::nullopt);
  dirs.Put(7, 1, "a", /*dir=*/true);
  CHECK(dirs.Where(7) == At(1, "a"));
  CHECK(dirs.WhereDir(7) == At(1, "a"));
  // The same directory given again under another name (a rename seen only
  // through a later lookup): one place, the newest.
  dirs.Put(7, 1, "b", /*dir=*/true);
  CHECK(dirs.Where(7) == At(1, "b"));
  CHECK(dirs.size() == 1);
  // Another directory now at 1/b: 7 is no longer there.
  dirs.Put(8, 1, "b", /*dir=*/true);
  CHECK(dirs.Where(8) == At(1, "b"));
  CHECK(dirs.Where(7) == std::nullopt);
  dirs.Drop(8);
  CHECK(dirs.Where(8) == std::nullopt);
  CHECK(dirs.size() == 0);
  dirs.Drop(8);  // twice: nothing
  CHECK(dirs.size() == 0);
}

TEST_CASE("kernel places: renames - over another - exchange - files and unknown names",
          "[unit][fuse]") {
  KernelPlaces dirs;
  dirs.Put(7, 1, "a", /*dir=*/true);
  dirs.Put(8, 2, "b", /*dir=*/true);
  // A plain move across parents.
  dirs.Rename(1, "a", 3, "c", /*exchange=*/false);
  CHECK(dirs.Where(7) == At(3, "c"));
  CHECK(dirs.WhereDir(7) == At(3, "c"));  // still known as a directory
  // Over another directory: the one replaced is gone.
  dirs.Rename(3, "c", 2, "b", /*exchange=*/false);
  CHECK(dirs.Where(7) == At(2, "b"));
  CHECK(dirs.Where(8) == std::nullopt);
  // An exchange swaps the two places.
  dirs.Put(9, 4, "d", /*dir=*/true);
  dirs.Rename(2, "b", 4, "d", /*exchange=*/true);
  CHECK(dirs.Where(7) == At(4, "d"));
  CHECK(dirs.Where(9) == At(2, "b"));
  // An exchange with a name that holds no directory (a file): the directory moves.
  dirs.Rename(4, "d", 5, "file", /*exchange=*/true);
  CHECK(dirs.Where(7) == At(5, "file"));
  // A rename of a name that holds no directory leaves the others alone.
  dirs.Rename(6, "x", 6, "y", /*exchange=*/false);
  CHECK(dirs.Where(7) == At(5, "file"));
  CHECK(dirs.Where(9) == At(2, "b"));
  // Onto itself: nothing changes.
  dirs.Rename(2, "b", 2, "b", /*exchange=*/false);
  CHECK(dirs.Where(9) == At(2, "b"));
  CHECK(dirs.size() == 2);
}

TEST_CASE("kernel places: a file under two names - the last given is where it is dropped",
          "[unit][fuse]") {
  KernelPlaces places;
  places.Put(20, 1, "a", /*dir=*/false);
  places.Put(20, 2, "link", /*dir=*/false);  // a hard link looked up later
  CHECK(places.WhereDir(20) == std::nullopt);  // not a directory
  CHECK(places.Where(20) == At(2, "link"));
  // The first name no longer leads to it here: a rename of it moves nothing.
  places.Rename(1, "a", 1, "b", /*exchange=*/false);
  CHECK(places.Where(20) == At(2, "link"));
  CHECK(places.size() == 1);
  places.Drop(20);  // the kernel's FORGET
  CHECK(places.Where(20) == std::nullopt);
  CHECK(places.size() == 0);
}

}  // namespace
}  // namespace weft::fuse
