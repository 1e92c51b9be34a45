#include "dataset/folder_walk.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <deque>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace lockstep::dataset {
namespace {

namespace fs = std::filesystem;

// A directory as the file system knows it, whichever path or link reached it.
struct DirId {
  dev_t device;
  ino_t inode;
  auto operator<=>(const DirId&) const = default;
};

// The directories from a class's own down to one inside it.
using Chain = std::vector<DirId>;

absl::Status FsError(absl::string_view what, const fs::path& path, const std::error_code& error) {
  return absl::Status(absl::ErrnoToStatusCode(error.value()),
                      absl::StrCat(what, " '", path.string(), "': ", error.message()));
}

absl::StatusOr<DirId> IdOf(const fs::path& path) {
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) {
    return absl::ErrnoToStatus(errno, absl::StrCat("cannot read '", path.string(), "'"));
  }
  return DirId{info.st_dev, info.st_ino};
}

bool Hidden(const fs::path& path) { return path.filename().string().starts_with("."); }

bool Matches(const fs::path& file, const std::vector<std::string>& lowered_extensions) {
  if (lowered_extensions.empty()) return true;
  std::string name = absl::AsciiStrToLower(file.filename().string());
  return std::any_of(lowered_extensions.begin(), lowered_extensions.end(),
                     [&](const std::string& ext) { return absl::EndsWith(name, ext); });
}

absl::Status CheckRoot(const fs::path& root) {
  std::error_code error;
  fs::file_status status = fs::status(root, error);
  if (status.type() == fs::file_type::not_found) {
    return absl::NotFoundError(
        absl::StrCat("ImageFolder root '", root.string(), "' does not exist"));
  }
  if (error) return FsError("cannot read ImageFolder root", root, error);
  if (status.type() != fs::file_type::directory) {
    return absl::InvalidArgumentError(
        absl::StrCat("ImageFolder root '", root.string(), "' is not a directory"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<fs::directory_entry>> SortedEntries(const fs::path& dir) {
  std::vector<fs::directory_entry> entries;
  std::error_code error;
  fs::directory_iterator it(dir, error);
  for (; !error && it != fs::directory_iterator(); it.increment(error)) entries.push_back(*it);
  if (error) return FsError("cannot list ImageFolder directory", dir, error);
  std::sort(entries.begin(), entries.end());
  return entries;
}

// What a directory entry is with links followed; `broken` holds why a link leads nowhere. The
// types come from the directory listing where it has them: one system call per link, not per file.
struct Kind {
  bool link = false, directory = false, regular = false;
  std::string broken;
};

absl::StatusOr<Kind> KindOf(const fs::directory_entry& entry) {
  Kind kind;
  std::error_code error;
  kind.link = entry.is_symlink(error);
  if (!error) kind.directory = entry.is_directory(error);
  if (!error) kind.regular = entry.is_regular_file(error);
  if (error && kind.link) {
    kind.broken = absl::StrCat("broken: ", error.message());
  } else if (error) {
    return FsError("cannot read", entry.path(), error);
  }
  return kind;
}

class Walker {
 public:
  Walker(fs::path root, const std::vector<std::string>& lowered_extensions)
      : root_(std::move(root)), extensions_(lowered_extensions) {}

  // The root and every directory above it are ancestors of everything the walk enters.
  absl::Status MarkAncestors() {
    std::error_code error;
    fs::path dir = fs::canonical(root_, error);
    if (error) return FsError("cannot resolve ImageFolder root", root_, error);
    while (true) {
      LS_ASSIGN_OR_RETURN(DirId id, IdOf(dir));
      ancestors_.insert(id);
      if (dir == dir.root_path()) return absl::OkStatus();
      dir = dir.parent_path();
    }
  }

  // Takes root/name (a directory) as a class and walks its own sub-directories; the reason it
  // cannot be a class otherwise.
  absl::StatusOr<std::optional<std::string>> AddClass(const std::string& name) {
    const fs::path dir = root_ / name;
    LS_ASSIGN_OR_RETURN(DirId id, IdOf(dir));
    if (std::optional<std::string> reason = SkipReason(id, -1, {})) return reason;
    classes_.push_back({name, {}});
    LS_RETURN_IF_ERROR(Enter(dir, id, static_cast<int>(classes_.size()) - 1, {}));
    return std::nullopt;
  }

  // Follows the links to directories found so far, and those found behind them, in order.
  absl::Status FollowLinks() {
    while (!links_.empty()) {
      Link link = std::move(links_.front());
      links_.pop_front();
      LS_ASSIGN_OR_RETURN(DirId id, IdOf(link.path));
      if (std::optional<std::string> reason = SkipReason(id, link.class_index, link.chain)) {
        Skip(link.path, *reason);
      } else {
        LS_RETURN_IF_ERROR(Enter(link.path, id, link.class_index, std::move(link.chain)));
      }
    }
    return absl::OkStatus();
  }

  void Skip(const fs::path& path, std::string reason) {
    std::error_code error;
    const fs::path target = fs::read_symlink(path, error);
    skipped_.push_back({path.string(), error ? "" : target.string(), std::move(reason)});
  }

  FolderTree Finish() && {
    std::sort(classes_.begin(), classes_.end(),
              [](const WalkedClass& a, const WalkedClass& b) { return a.name < b.name; });
    return {std::move(classes_), std::move(skipped_)};
  }

 private:
  struct Link {
    fs::path path;
    int class_index;
    Chain chain;  // down to the directory holding the link
  };

  std::optional<std::string> SkipReason(DirId id, int class_index, const Chain& chain) const {
    if (ancestors_.contains(id) || std::find(chain.begin(), chain.end(), id) != chain.end()) {
      return "an ancestor";
    }
    auto owner = owner_.find(id);
    if (owner == owner_.end()) return std::nullopt;
    if (owner->second == class_index) return "a directory already walked";
    return absl::StrCat("a directory of class '", classes_[owner->second].name, "'");
  }

  // Walks `dir` and its own sub-directories for class `class_index`; links to directories wait
  // in links_.
  absl::Status Enter(const fs::path& dir, DirId id, int class_index, Chain chain) {
    owner_[id] = class_index;
    chain.push_back(id);
    std::vector<std::pair<fs::path, Chain>> stack;
    stack.emplace_back(dir, std::move(chain));
    while (!stack.empty()) {
      auto [path, below] = std::move(stack.back());
      stack.pop_back();
      LS_ASSIGN_OR_RETURN(std::vector<fs::directory_entry> entries, SortedEntries(path));
      for (const fs::directory_entry& entry : entries) {
        if (Hidden(entry.path())) continue;
        LS_ASSIGN_OR_RETURN(Kind kind, KindOf(entry));
        if (!kind.broken.empty()) {
          Skip(entry.path(), kind.broken);
        } else if (kind.directory && kind.link) {
          links_.push_back({entry.path(), class_index, below});
        } else if (kind.directory) {
          LS_ASSIGN_OR_RETURN(DirId sub, IdOf(entry.path()));
          if (std::optional<std::string> reason = SkipReason(sub, class_index, below)) {
            Skip(entry.path(), *reason);  // the same directory mounted twice
            continue;
          }
          owner_[sub] = class_index;
          Chain inner = below;
          inner.push_back(sub);
          stack.emplace_back(entry.path(), std::move(inner));
        } else if (kind.regular && Matches(entry.path(), extensions_)) {
          classes_[class_index].files.push_back(entry.path().string());
        }
      }
    }
    return absl::OkStatus();
  }

  fs::path root_;
  const std::vector<std::string>& extensions_;
  std::set<DirId> ancestors_;
  std::map<DirId, int> owner_;  // every directory entered, by class index
  std::deque<Link> links_;
  std::vector<WalkedClass> classes_;
  std::vector<SkippedEntry> skipped_;
};

// The names of the root's entries that may be classes: its directories, then its links to
// directories (so that a link cannot claim what a class holds). Broken links are skipped.
struct Candidates {
  std::vector<std::string> dirs, links;
};

absl::StatusOr<Candidates> ListCandidates(const fs::path& root, Walker* walker) {
  Candidates candidates;
  LS_ASSIGN_OR_RETURN(std::vector<fs::directory_entry> entries, SortedEntries(root));
  for (const fs::directory_entry& entry : entries) {
    if (Hidden(entry.path())) continue;
    LS_ASSIGN_OR_RETURN(Kind kind, KindOf(entry));
    const std::string name = entry.path().filename().string();
    if (!kind.broken.empty()) {
      walker->Skip(entry.path(), kind.broken);
    } else if (kind.directory) {
      (kind.link ? candidates.links : candidates.dirs).push_back(name);
    }
  }
  return candidates;
}

absl::StatusOr<Candidates> NamedCandidates(const fs::path& root,
                                           const std::vector<std::string>& class_names) {
  Candidates candidates;
  for (const std::string& name : class_names) {
    std::error_code ignored;  // a missing folder is the error below
    LS_ASSIGN_OR_RETURN(Kind kind, KindOf(fs::directory_entry(root / name, ignored)));
    if (!kind.directory) {
      return absl::NotFoundError(absl::StrCat("class folder '", (root / name).string(),
                                              "' (from class_indexing) does not exist"));
    }
    (kind.link ? candidates.links : candidates.dirs).push_back(name);
  }
  return candidates;
}

}  // namespace

absl::StatusOr<FolderTree> WalkFolderTree(const std::string& root,
                                          const std::vector<std::string>& class_names,
                                          const std::vector<std::string>& lowered_extensions) {
  LS_RETURN_IF_ERROR(CheckRoot(root));
  Walker walker(root, lowered_extensions);
  LS_RETURN_IF_ERROR(walker.MarkAncestors());
  LS_ASSIGN_OR_RETURN(Candidates candidates, class_names.empty()
                                                 ? ListCandidates(root, &walker)
                                                 : NamedCandidates(root, class_names));
  for (const std::vector<std::string>* names : {&candidates.dirs, &candidates.links}) {
    for (const std::string& name : *names) {
      LS_ASSIGN_OR_RETURN(std::optional<std::string> reason, walker.AddClass(name));
      if (!reason) continue;
      const fs::path dir = fs::path(root) / name;
      if (!class_names.empty()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "class folder '", dir.string(), "' (from class_indexing) leads to ", *reason));
      }
      walker.Skip(dir, *std::move(reason));
    }
  }
  LS_RETURN_IF_ERROR(walker.FollowLinks());
  return std::move(walker).Finish();
}

std::string DescribeSkipped(const std::vector<SkippedEntry>& skipped) {
  std::vector<std::string> entries;
  for (const SkippedEntry& entry : skipped) {
    entries.push_back(entry.target.empty() ? absl::StrCat(entry.path, " (", entry.reason, ")")
                                           : absl::StrCat(entry.path, " -> ", entry.target, " (",
                                                          entry.reason, ")"));
  }
  return absl::StrCat("skipped ", skipped.size(),
                      skipped.size() == 1 ? " link: " : " links: ", absl::StrJoin(entries, ", "));
}

}  // namespace lockstep::dataset
