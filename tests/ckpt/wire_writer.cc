// ckpt_wire_writer: writes checkpoints for wire_compat_test.py, which reads them back with an
// independent reader (Python protobuf generated from the same schema, zlib's CRC).
//
//   ckpt_wire_writer tensors OUT SLICE_BYTES NAME:TYPE:D0,D1... ...
//       one Value per spec, byte i of spec k's content (i * 7 + k) % 251, then epoch_num = 3
//       and step_num = 42; Lockstep dtypes go through Tensors, the others through AddRaw
//   ckpt_wire_writer run DIR
//       two ranks, two committed steps (global steps 10 and 20), graph .meta files

#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "ckpt/manager.h"
#include "core/logging.h"
#include "graph/serialize.h"

namespace lockstep::ckpt {
namespace {

std::string Pattern(size_t bytes, int k) {
  std::string content(bytes, '\0');
  for (size_t i = 0; i < bytes; ++i) content[i] = static_cast<char>((i * 7 + k) % 251);
  return content;
}

absl::Status AddSpec(CheckpointWriter& writer, const std::string& spec, int k) {
  std::vector<std::string> parts = absl::StrSplit(spec, ':');
  const TensorTypeInfo* type = parts.size() == 3 ? FindTensorType(parts[1]) : nullptr;
  if (type == nullptr) return absl::InvalidArgumentError("bad spec " + spec);
  Shape shape;
  for (absl::string_view dim : absl::StrSplit(parts[2], ',', absl::SkipEmpty())) {
    if (!absl::SimpleAtoi(dim, &shape.emplace_back())) {
      return absl::InvalidArgumentError("bad spec " + spec);
    }
  }
  const std::string content = Pattern(NumElements(shape) * type->size, k);
  if (!type->dtype.has_value()) return writer.AddRaw(parts[0], *type, shape, content);
  Tensor tensor = Tensor::Empty(shape, *type->dtype);
  std::copy(content.begin(), content.end(), static_cast<char*>(tensor.raw_data()));
  return writer.Add(parts[0], tensor);
}

absl::Status WriteTensors(const std::string& out, uint64_t slice_bytes,
                          const std::vector<std::string>& specs) {
  LS_ASSIGN_OR_RETURN(CheckpointWriter writer,
                      CheckpointWriter::Open(out, {.slice_bytes = slice_bytes}));
  for (size_t k = 0; k < specs.size(); ++k) {
    LS_RETURN_IF_ERROR(AddSpec(writer, specs[k], static_cast<int>(k)));
  }
  LS_RETURN_IF_ERROR(writer.AddInt64("epoch_num", 3));
  LS_RETURN_IF_ERROR(writer.AddInt64("step_num", 42));
  return writer.Finish().status();
}

lockstep::proto::GraphDef SampleGraph() {
  lockstep::proto::GraphDef graph;
  for (const char* op : {"Input", "Conv2D", "Relu", "AllReduce", "AllReduce", "Momentum"}) {
    lockstep::proto::NodeDef* node = graph.add_nodes();
    node->set_op(op);
    if (node->op() != "AllReduce") continue;
    (*node->mutable_attrs())["fusion"].set_i(graph.nodes_size() - 4);
    (*node->mutable_attrs())["bytes"].set_i(4096);
  }
  lockstep::proto::Parameter* parameter = graph.add_parameters();
  parameter->set_name("conv.weight");
  parameter->add_dims(8);
  parameter->add_dims(3);
  parameter->set_dtype("f32");
  parameter->set_bytes(96);
  graph.set_fingerprint(Fingerprint(graph));
  return graph;
}

absl::Status WriteRun(const std::string& dir) {
  const lockstep::proto::GraphDef graph = SampleGraph();
  std::vector<CheckpointManager> ranks;
  for (int rank = 0; rank < 2; ++rank) {
    ranks.emplace_back(CheckpointConfig{.directory = dir}, "net", rank, 2);
    LS_RETURN_IF_ERROR(ranks.back().SaveGraphMeta(graph));
  }
  for (int64_t step : {10, 20}) {
    RankState state{.epoch = 1, .global_step = step, .step_in_epoch = step};
    Tensor weight = Tensor::Empty({8, 3}, DType::kF32);
    for (int64_t i = 0; i < weight.numel(); ++i) weight.data<float>()[i] = 0.5f * i - step;
    state.tensors = {{"conv.weight", weight}};
    std::vector<WrittenFile> files;
    for (CheckpointManager& rank : ranks) {
      LS_ASSIGN_OR_RETURN(files.emplace_back(), rank.Save(state));
    }
    LS_RETURN_IF_ERROR(ranks[0].Commit(state, files, graph.fingerprint()).status());
  }
  return absl::OkStatus();
}

absl::Status Main(const std::vector<std::string>& args) {
  uint64_t slice_bytes = 0;
  if (args.size() >= 3 && args[0] == "tensors" && absl::SimpleAtoi(args[2], &slice_bytes)) {
    return WriteTensors(args[1], slice_bytes, {args.begin() + 3, args.end()});
  }
  if (args.size() == 2 && args[0] == "run") return WriteRun(args[1]);
  return absl::InvalidArgumentError("usage: ckpt_wire_writer tensors OUT SLICE SPEC... | run DIR");
}

}  // namespace
}  // namespace lockstep::ckpt

int main(int argc, char** argv) {
  absl::Status status = lockstep::ckpt::Main({argv + 1, argv + argc});
  if (!status.ok()) {
    std::cerr << lockstep::LogPrefix() << "error: " << status.message() << std::endl;
    return 1;
  }
  return 0;
}
