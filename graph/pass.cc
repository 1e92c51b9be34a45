#include "graph/pass.h"

#include <filesystem>
#include <fstream>

#include "absl/strings/str_format.h"
#include "core/paths.h"

namespace lockstep {
namespace {

absl::Status WriteDump(const std::string& dir, int index, absl::string_view pass,
                       const Graph& graph) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  std::string path = absl::StrFormat("%s/%02d_%s.txt", dir, index, pass);
  LS_RETURN_IF_ERROR(CheckOutputPath(path));
  std::ofstream out(path);
  out << DumpGraph(graph);
  if (!out) return absl::InternalError(absl::StrCat("cannot write graph dump ", path));
  return absl::OkStatus();
}

}  // namespace

absl::Status PassManager::Run(Graph& graph, PassContext& ctx) const {
  LS_RETURN_IF_ERROR(Annotate(VerifyGraph(graph), "input graph"));
  if (!ctx.dump_dir.empty()) LS_RETURN_IF_ERROR(WriteDump(ctx.dump_dir, 0, "input", graph));
  for (size_t i = 0; i < passes_.size(); ++i) {
    const Pass& pass = *passes_[i];
    LS_RETURN_IF_ERROR(Annotate(passes_[i]->Run(graph, ctx), absl::StrCat("pass ", pass.name())));
    LS_RETURN_IF_ERROR(Annotate(VerifyGraph(graph), absl::StrCat("after pass ", pass.name())));
    if (!ctx.dump_dir.empty()) {
      LS_RETURN_IF_ERROR(WriteDump(ctx.dump_dir, static_cast<int>(i + 1), pass.name(), graph));
    }
  }
  return absl::OkStatus();
}

}  // namespace lockstep
