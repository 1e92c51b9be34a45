// The exporter: the graph's inputs, weights and output, each node by its op family's registered
// translation (onnx_registry.h), the metadata, and ONNX's checker on the result.

#include "inference/onnx_export.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/file_io.h"
#include "core/json.h"
#include "core/paths.h"
#include "inference/onnx_registry.h"
#include "onnx/checker.h"
#include "train/dataset_source.h"

namespace lockstep::inference {

OnnxWriter::OnnxWriter(const InferenceModel& model, onnx::GraphProto* graph)
    : model_(model), graph_(graph), consumers_(model.graph->Consumers()) {}

absl::Status OnnxWriter::Write() {
  for (const auto& node : model_.graph->nodes()) {
    if (node->IsInput()) {
      WriteInput(*node);
      continue;
    }
    const OnnxTranslation* translation = OnnxRegistry::Global().Find(node->op->name());
    if (translation == nullptr) return CannotExport(*node, "no ONNX form");
    LS_RETURN_IF_ERROR((*translation)(*this, *node));
  }
  const GraphOutput* logits = model_.graph->FindOutput("logits");
  AddValueInfo(graph_->add_output(), Name(logits->value), logits->value->shape());
  return absl::OkStatus();
}

std::string OnnxWriter::Name(const Value* value) const {
  if (value == model_.graph->FindOutput("logits")->value) return "logits";
  const Node& node = *value->producer;
  return value->index == 0 ? node.name : absl::StrCat(node.name, ":", value->index);
}

std::vector<std::string> OnnxWriter::InputNames(const Node& node) const {
  std::vector<std::string> names;
  for (const Value* input : node.inputs) names.push_back(Name(input));
  return names;
}

void OnnxWriter::AddValueInfo(onnx::ValueInfoProto* info, const std::string& name,
                              const Shape& shape) {
  info->set_name(name);
  onnx::TypeProto::Tensor* tensor = info->mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(onnx::TensorProto::FLOAT);
  for (size_t i = 0; i < shape.size(); ++i) {
    onnx::TensorShapeProto::Dimension* dim = tensor->mutable_shape()->add_dim();
    i == 0 ? dim->set_dim_param("N") : dim->set_dim_value(shape[i]);
  }
}

void OnnxWriter::AddInitializer(const std::string& name, const Node& input, const Shape& dims) {
  const Tensor& value = model_.weights.at(input.name);
  onnx::TensorProto* tensor = graph_->add_initializer();
  tensor->set_name(name);
  tensor->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) tensor->add_dims(d);
  tensor->set_raw_data(value.data<float>(), value.nbytes());  // little-endian, as ONNX's
}

void OnnxWriter::WriteInput(const Node& node) {
  if (node.role() == InputRole::kData) {
    AddValueInfo(graph_->add_input(), node.name, node.output()->shape());
  } else {
    AddInitializer(node.name, node, node.output()->shape());
  }
}

onnx::NodeProto* OnnxWriter::AddNode(const Node& node, const std::string& op_type,
                                     const std::vector<std::string>& inputs, const Value* output) {
  onnx::NodeProto* out = graph_->add_node();
  out->set_name(node.name);
  out->set_op_type(op_type);
  for (const std::string& input : inputs) out->add_input(input);
  out->add_output(Name(output));
  return out;
}

void OnnxWriter::AcceptBias(const Node& node, onnx::NodeProto* out) {
  bias_takers_[node.output()] = out;
}

bool OnnxWriter::JoinBias(const Node& bias_add) {
  const Value* x = bias_add.inputs[0];
  auto taker = bias_takers_.find(x);
  const Node* bias = bias_add.inputs[1]->producer;
  if (taker == bias_takers_.end() || consumers_[x->id].size() != 1 || !bias->IsInput() ||
      bias->role() == InputRole::kData) {
    return false;
  }
  taker->second->add_input(Name(bias_add.inputs[1]));
  taker->second->set_output(0, Name(bias_add.output()));
  return true;
}

absl::Status CannotExport(const Node& node, const std::string& why) {
  return absl::UnimplementedError(
      absl::StrCat("cannot export ", node.Describe(), " to ONNX: ", why));
}

void SetInts(onnx::NodeProto* node, const std::string& name, const std::vector<int64_t>& values) {
  onnx::AttributeProto* attr = node->add_attribute();
  attr->set_name(name);
  attr->set_type(onnx::AttributeProto::INTS);
  for (int64_t v : values) attr->add_ints(v);
}

void SetInt(onnx::NodeProto* node, const std::string& name, int64_t value) {
  onnx::AttributeProto* attr = node->add_attribute();
  attr->set_name(name);
  attr->set_type(onnx::AttributeProto::INT);
  attr->set_i(value);
}

void SetFloat(onnx::NodeProto* node, const std::string& name, double value) {
  onnx::AttributeProto* attr = node->add_attribute();
  attr->set_name(name);
  attr->set_type(onnx::AttributeProto::FLOAT);
  attr->set_f(static_cast<float>(value));
}

std::vector<int64_t> OnnxPads(const Attrs& attrs) {
  const std::vector<int64_t>& p = attrs.GetInts("padding");
  return {p[0], p[1], p[0], p[1]};
}

namespace {

void AddMetadata(onnx::ModelProto* model, const std::string& key, const std::string& value) {
  onnx::StringStringEntryProto* entry = model->add_metadata_props();
  entry->set_key(key);
  entry->set_value(value);
}

// A JSON array of strings, so that names with commas (or quotes, or newlines) survive.
std::string JsonStrings(const std::vector<std::string>& names) {
  return absl::StrCat("[",
                      absl::StrJoin(names, ", ",
                                    [](std::string* out, const std::string& name) {
                                      out->append(JsonString(name));
                                    }),
                      "]");
}

void WriteMetadata(const Preprocessing& p, onnx::ModelProto* model) {
  AddMetadata(model, "image_size", absl::StrCat(p.image_size));
  AddMetadata(model, "resize_shorter_side", absl::StrCat(p.resize_shorter));
  AddMetadata(model, "crop", "center");
  AddMetadata(model, "mean", absl::StrJoin(p.mean, ","));
  AddMetadata(model, "std", absl::StrJoin(p.std, ","));
  AddMetadata(model, "channel_order", p.channel_order);
  AddMetadata(model, "layout", "NCHW");
  AddMetadata(model, "pixel_range", "0-255, normalized as (pixel - mean) / std");
  if (!p.class_names.empty()) AddMetadata(model, "class_names", JsonStrings(p.class_names));
}

}  // namespace

Preprocessing ValidationPreprocessing(const InferenceModel& model) {
  const int64_t channels = model.image_shape[0];
  return {.image_size = model.image_shape[1],
          .resize_shorter = train::ClassificationResizeSize(model.image_shape[1]),
          .mean = std::vector<float>(channels, train::kClassificationMean),
          .std = std::vector<float>(channels, train::kClassificationStd)};
}

absl::StatusOr<onnx::ModelProto> ToOnnx(const InferenceModel& model,
                                        const Preprocessing& preprocessing) {
  if (!preprocessing.class_names.empty() &&
      static_cast<int64_t>(preprocessing.class_names.size()) != model.classes) {
    return absl::InvalidArgumentError(absl::StrCat(preprocessing.class_names.size(),
                                                   " class names for a model of ", model.classes,
                                                   " classes"));
  }
  onnx::ModelProto out;
  out.set_ir_version(onnx::IR_VERSION);
  out.set_producer_name("lockstep");
  out.set_doc_string(absl::StrCat(model.name, ": the inference graph of a Lockstep checkpoint"));
  onnx::OperatorSetIdProto* opset = out.add_opset_import();
  opset->set_domain("");
  opset->set_version(kOnnxOpset);
  onnx::GraphProto* graph = out.mutable_graph();
  graph->set_name(model.name);
  LS_RETURN_IF_ERROR(OnnxWriter(model, graph).Write());
  WriteMetadata(preprocessing, &out);
  try {
    onnx::checker::check_model(out);
  } catch (const std::exception& e) {
    return absl::InternalError(
        absl::StrCat("ONNX's checker rejects the exported model: ", e.what()));
  }
  return out;
}

namespace {

// An existing file at an export's path is replaced only when it is an ONNX model with a graph (an
// earlier export): never a checkpoint, a manifest or an image.
const FileKind& OnnxModelKind() {
  static const FileKind kind{"an ONNX model", [](const std::string& path) {
                               absl::StatusOr<std::string> bytes = ReadWholeFile(path);
                               onnx::ModelProto model;
                               return bytes.ok() && model.ParseFromString(*bytes) &&
                                      model.ir_version() > 0 && model.has_graph();
                             }};
  return kind;
}

}  // namespace

absl::Status ExportOnnx(const InferenceModel& model, const Preprocessing& preprocessing,
                        const std::string& path) {
  LS_RETURN_IF_ERROR(CheckOutputPath(path, &OnnxModelKind()));
  LS_ASSIGN_OR_RETURN(onnx::ModelProto onnx, ToOnnx(model, preprocessing));
  std::string bytes;
  if (!onnx.SerializeToString(&bytes)) {
    return absl::InternalError(absl::StrCat("cannot serialize the ONNX model for ", path));
  }
  return WriteFileAtomically(path, bytes);
}

}  // namespace lockstep::inference
