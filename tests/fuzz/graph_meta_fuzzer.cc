// libFuzzer target of the graph .meta reader: the input is read as a .meta file and summarized
// as `lockstep-ckpt meta` and `lockstep-ckpt verify` do. A rejected file must be a clear error
// naming the file.

#include <cstddef>
#include <cstdint>
#include <string>

#include "ckpt/graph_meta.h"
#include "core/logging.h"
#include "tests/fuzz/fuzz_dir.h"


extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace lockstep::ckpt;
  static const lockstep::fuzz::FuzzDir dir;
  const std::string path = dir.Write("net_0-graph.meta", data, size);
  absl::StatusOr<lockstep::proto::GraphDef> graph = ReadGraphMeta(path);
  if (!graph.ok()) {
    LS_CHECK(graph.status().message().find(path) != absl::string_view::npos) << graph.status();
    return 0;
  }
  SummarizeGraph(*graph);
  return 0;
}
