#include "ckpt/manifest.h"

#include <google/protobuf/util/json_util.h>
#include <sys/stat.h>

#include <algorithm>

#include "absl/strings/match.h"
#include "ckpt/naming.h"
#include "core/file_io.h"

namespace lockstep::ckpt {

absl::StatusOr<std::string> WriteManifest(const std::string& dir, const proto::Manifest& manifest,
                                          absl::string_view tmp_suffix) {
  std::string json;
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.always_print_primitive_fields = true;
  options.preserve_proto_field_names = true;
  auto status = google::protobuf::util::MessageToJsonString(manifest, &json, options);
  if (!status.ok()) {
    return absl::InternalError(absl::StrCat("encoding a manifest: ", status.ToString()));
  }
  const std::string path = JoinPath(
      dir, ManifestFileName(manifest.prefix(), manifest.epoch(), manifest.step_in_epoch()));
  LS_RETURN_IF_ERROR(WriteFileAtomically(path, json, tmp_suffix));
  return path;
}

absl::StatusOr<proto::Manifest> ReadManifest(const std::string& path) {
  LS_ASSIGN_OR_RETURN(std::string json, ReadWholeFile(path));
  proto::Manifest manifest;
  auto status = google::protobuf::util::JsonStringToMessage(json, &manifest);
  if (!status.ok()) {
    return absl::DataLossError(
        absl::StrCat(path, ": not a checkpoint manifest: ", status.ToString()));
  }
  if (manifest.version() != kManifestVersion) {
    return absl::DataLossError(absl::StrCat(path, ": manifest version ", manifest.version(),
                                            ", this build reads ", kManifestVersion));
  }
  // Resume and verify open these names inside the directory: a path would lead out of it.
  for (const proto::RankFile& file : manifest.files()) {
    if (file.file().empty() || file.file() == "." || file.file() == ".." ||
        absl::StrContains(file.file(), '/')) {
      return absl::DataLossError(absl::StrCat(path, ": rank ", file.rank(), "'s file '",
                                              file.file(), "' is not a file name"));
    }
  }
  return manifest;
}

absl::StatusOr<std::vector<proto::Manifest>> ListManifests(const std::string& dir,
                                                           absl::string_view prefix,
                                                           std::vector<std::string>* unreadable) {
  LS_ASSIGN_OR_RETURN(std::vector<std::string> names, ListFiles(dir));
  std::vector<proto::Manifest> manifests;
  for (const std::string& name : names) {
    std::optional<ParsedName> parsed = ParseManifestFileName(name);
    if (!parsed.has_value() || (!prefix.empty() && parsed->prefix != prefix)) continue;
    absl::StatusOr<proto::Manifest> manifest = ReadManifest(JoinPath(dir, name));
    if (manifest.ok()) {
      manifests.push_back(*std::move(manifest));
    } else if (unreadable != nullptr) {
      unreadable->emplace_back(manifest.status().message());
    } else {
      return manifest.status();
    }
  }
  std::stable_sort(manifests.begin(), manifests.end(),
                   [](const proto::Manifest& a, const proto::Manifest& b) {
                     return a.global_step() < b.global_step();
                   });
  return manifests;
}

std::optional<std::string> MissingFile(const std::string& dir, const proto::RankFile& file) {
  const std::string path = JoinPath(dir, file.file());
  struct stat info;
  if (stat(path.c_str(), &info) != 0) {
    return absl::StrCat("rank ", file.rank(), ": ", path, " is missing");
  }
  if (static_cast<uint64_t>(info.st_size) != file.bytes()) {
    return absl::StrCat("rank ", file.rank(), ": ", path, " has ", info.st_size,
                        " bytes, the manifest says ", file.bytes());
  }
  return std::nullopt;
}

std::vector<std::string> MissingFiles(const std::string& dir, const proto::Manifest& manifest) {
  std::vector<std::string> problems;
  for (const proto::RankFile& file : manifest.files()) {
    if (std::optional<std::string> problem = MissingFile(dir, file)) problems.push_back(*problem);
  }
  return problems;
}

absl::StatusOr<proto::Manifest> LatestCompleteStep(const std::string& dir,
                                                   absl::string_view prefix) {
  LS_ASSIGN_OR_RETURN(std::vector<proto::Manifest> manifests, ListManifests(dir, prefix));
  for (auto it = manifests.rbegin(); it != manifests.rend(); ++it) {
    if (MissingFiles(dir, *it).empty()) return *it;
  }
  return absl::NotFoundError(
      absl::StrCat("no complete checkpoint step of '", prefix, "' in ", dir));
}

absl::StatusOr<proto::RankFile> FileForRank(const proto::Manifest& manifest, int rank) {
  // More ranks than saved: data-parallel replicas hold the same parameters, so rank r takes the
  // file of saved rank r mod world_size.
  const int saved_world = std::max(manifest.world_size(), 1);
  const int source = manifest.all_ranks() ? rank % saved_world : 0;
  for (const proto::RankFile& file : manifest.files()) {
    if (file.rank() == source) return file;
  }
  return absl::NotFoundError(absl::StrCat("the manifest of step ", manifest.global_step(),
                                          " lists no file for rank ", source));
}

}  // namespace lockstep::ckpt
