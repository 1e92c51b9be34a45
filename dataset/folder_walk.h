#pragma once

// The walk of an ImageFolder tree (image_folder.h) that links cannot loop or mislabel: it enters
// each directory once (by device and inode), keeps every directory to one class, and lists the
// links it did not follow with the reason.
//
// torchvision's ImageFolder follows every link (os.walk(followlinks=True)) and has no guard, so
// `ln -s .. train/dots/up` loops or pulls every class into "dots". Here:
// - A class is a sub-directory of the root, or a link there to a directory that is not the root,
//   not above it and not already part of a class.
// - Every class's own sub-directories are walked first; then links to directories inside a class
//   are followed, unless they lead to an ancestor (the root, above it, or a directory on the way
//   down to the link), to a directory of another class, or to one the class already walked.
// - A link to a file is a file like any other; a link that does not resolve is skipped.

#include <string>
#include <vector>

#include "core/status.h"

namespace lockstep::dataset {

struct WalkedClass {
  std::string name;                // the sub-directory's name
  std::vector<std::string> files;  // root/name/..., by the path the walk took
};

// A link (or a directory reached twice without one) that the walk did not enter.
struct SkippedEntry {
  std::string path;    // root/dots/up
  std::string target;  // the link's text (".."); empty when not a link
  std::string reason;  // "an ancestor", "a directory of class 'cats'", ...
};

struct FolderTree {
  std::vector<WalkedClass> classes;  // sorted by name
  std::vector<SkippedEntry> skipped;
};

// Walks `root` (an existing directory). `class_names`: the sub-directories to read, each of which
// must be a class (an error names it otherwise); empty reads every non-hidden one. Files are
// the non-hidden regular files whose names end in one of `lowered_extensions` (lower case,
// compared without case; empty: every file).
absl::StatusOr<FolderTree> WalkFolderTree(const std::string& root,
                                          const std::vector<std::string>& class_names,
                                          const std::vector<std::string>& lowered_extensions);

// "skipped 2 links: root/dots/up -> .. (an ancestor), root/zz -> /gone (broken: ...)"
std::string DescribeSkipped(const std::vector<SkippedEntry>& skipped);

}  // namespace lockstep::dataset
