// How a rank's journal lies in its segment objects (mds/journal/journal.h
// writes it; replay and `weft fs journal inspect` read it). A leaf of the
// MDS: the CLI links it without the MDS.
//
// A segment object ("<fs>.journal.<segment>", names.h) is a run of frames:
//
//   u32 length   little-endian, of the payload
//   u32 check    low 32 bits of XXH3-64 of the payload
//   payload      one encoded JournalEvent (mds/store/records.proto)
//
// Writers append whole batches of frames at the segment's end; a crash can
// leave a torn last frame, which ends the journal there (nothing after it was
// acknowledged). The head object holds a JournalHead: events up to
// trimmed_seq are in the backing objects, and segments below first_segment
// are gone.
#pragma once

#include <string>
#include <vector>

namespace weft::mds {

// Appends one frame holding `payload` to *out.
void AppendFrame(const std::string& payload, std::string* out);
// Splits a segment into frames; stops at the first torn or corrupt frame and
// says where through `valid_bytes`.
std::vector<std::string> ParseFrames(const std::string& segment, size_t* valid_bytes);

}  // namespace weft::mds
