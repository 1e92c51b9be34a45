// Each plain Lockstep op written as its standard ONNX op. A Conv2D or MatMul whose only reader
// is a BiasAdd becomes one Conv or Gemm with the bias (as exporters of other frameworks write
// them); any other op fails naming its node.

#include "inference/onnx_export.h"

#include <functional>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ckpt/file_io.h"
#include "onnx/checker.h"
#include "train/dataset_source.h"

namespace lockstep::inference {
namespace {

class OnnxWriter {
 public:
  OnnxWriter(const InferenceModel& model, onnx::GraphProto* graph)
      : model_(model), graph_(graph), consumers_(model.graph->Consumers()) {}

  absl::Status Write() {
    for (const auto& node : model_.graph->nodes()) {
      if (absorbed_.contains(node.get())) continue;
      if (node->IsInput()) {
        WriteInput(*node);
      } else {
        LS_RETURN_IF_ERROR(WriteNode(*node));
      }
    }
    const GraphOutput* logits = model_.graph->FindOutput("logits");
    AddValueInfo(graph_->add_output(), Name(logits->value), logits->value->shape());
    return absl::OkStatus();
  }

 private:
  // ONNX names: the graph's inputs and output by their names, other values by their node's.
  std::string Name(const Value* value) const {
    if (value == model_.graph->FindOutput("logits")->value) return "logits";
    const Node& node = *value->producer;
    return value->index == 0 ? node.name : absl::StrCat(node.name, ":", value->index);
  }

  // (N, ...) with N the dynamic batch dimension "N".
  void AddValueInfo(onnx::ValueInfoProto* info, const std::string& name, const Shape& shape) {
    info->set_name(name);
    onnx::TypeProto::Tensor* tensor = info->mutable_type()->mutable_tensor_type();
    tensor->set_elem_type(onnx::TensorProto::FLOAT);
    for (size_t i = 0; i < shape.size(); ++i) {
      onnx::TensorShapeProto::Dimension* dim = tensor->mutable_shape()->add_dim();
      i == 0 ? dim->set_dim_param("N") : dim->set_dim_value(shape[i]);
    }
  }

  void AddInitializer(const std::string& name, const Tensor& value, const Shape& dims) {
    onnx::TensorProto* tensor = graph_->add_initializer();
    tensor->set_name(name);
    tensor->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) tensor->add_dims(d);
    tensor->set_raw_data(value.data<float>(), value.nbytes());  // little-endian, as ONNX's
  }

  void WriteInput(const Node& node) {
    if (node.role() == InputRole::kData) {
      AddValueInfo(graph_->add_input(), node.name, node.output()->shape());
    } else {
      AddInitializer(node.name, model_.weights.at(node.name), node.output()->shape());
    }
  }

  onnx::NodeProto* AddNode(const Node& node, const std::string& op,
                           const std::vector<std::string>& inputs, const Value* output) {
    onnx::NodeProto* out = graph_->add_node();
    out->set_name(node.name);
    out->set_op_type(op);
    for (const std::string& input : inputs) out->add_input(input);
    out->add_output(Name(output));
    return out;
  }

  static void SetInts(onnx::NodeProto* node, const std::string& name,
                      const std::vector<int64_t>& values) {
    onnx::AttributeProto* attr = node->add_attribute();
    attr->set_name(name);
    attr->set_type(onnx::AttributeProto::INTS);
    for (int64_t v : values) attr->add_ints(v);
  }
  static void SetInt(onnx::NodeProto* node, const std::string& name, int64_t value) {
    onnx::AttributeProto* attr = node->add_attribute();
    attr->set_name(name);
    attr->set_type(onnx::AttributeProto::INT);
    attr->set_i(value);
  }
  static void SetFloat(onnx::NodeProto* node, const std::string& name, double value) {
    onnx::AttributeProto* attr = node->add_attribute();
    attr->set_name(name);
    attr->set_type(onnx::AttributeProto::FLOAT);
    attr->set_f(static_cast<float>(value));
  }

  // Lockstep's symmetric [h, w] padding as ONNX's [top, left, bottom, right].
  static std::vector<int64_t> Pads(const Attrs& attrs) {
    const std::vector<int64_t>& p = attrs.GetInts("padding");
    return {p[0], p[1], p[0], p[1]};
  }

  // The BiasAdd that alone reads `node`'s output with a parameter bias: absorbed into it.
  const Node* AbsorbedBias(const Node& node) {
    const std::vector<Node*>& readers = consumers_[node.output()->id];
    if (readers.size() != 1 || readers[0]->op->name() != "BiasAdd") return nullptr;
    const Node* bias = readers[0]->inputs[1]->producer;
    if (!bias->IsInput() || bias->role() == InputRole::kData) return nullptr;
    absorbed_.insert(readers[0]);
    return readers[0];
  }

  absl::Status WriteNode(const Node& node) {
    const std::string& op = node.op->name();
    const Attrs& a = node.attrs;
    std::vector<std::string> inputs;
    for (const Value* input : node.inputs) inputs.push_back(Name(input));
    if (op == "Conv2D" || op == "MatMul") {
      if (op == "MatMul" && a.GetBool("transpose_a")) return Unsupported(node, "transpose_a");
      const Node* bias = AbsorbedBias(node);
      if (bias != nullptr) inputs.push_back(Name(bias->inputs[1]));
      const Value* output = bias != nullptr ? bias->output() : node.output();
      onnx::NodeProto* out = AddNode(node, op == "Conv2D" ? "Conv" : "Gemm", inputs, output);
      if (op == "MatMul") {
        SetInt(out, "transB", a.GetBool("transpose_b") ? 1 : 0);
        return absl::OkStatus();
      }
      const Shape& w = node.inputs[1]->shape();
      SetInts(out, "kernel_shape", {w[2], w[3]});
      SetInts(out, "strides", a.GetInts("stride"));
      SetInts(out, "pads", Pads(a));
      SetInts(out, "dilations", a.GetInts("dilation"));
      SetInt(out, "group", a.GetInt("groups"));
    } else if (op == "BiasAdd") {
      // ONNX broadcasts from the last dimension: a (C) bias over (N, C, H, W) needs (C, 1, 1).
      const Node& bias = *node.inputs[1]->producer;
      Shape dims = {node.inputs[1]->shape()[0]};
      dims.resize(node.output()->shape().size() - 1, 1);
      const std::string name = absl::StrCat(bias.name, ":", dims.size(), "d");
      AddInitializer(name, model_.weights.at(bias.name), dims);
      AddNode(node, "Add", {inputs[0], name}, node.output());
    } else if (op == "BatchNormInference") {
      SetFloat(AddNode(node, "BatchNormalization", inputs, node.output()), "epsilon",
               a.GetFloat("epsilon"));
    } else if (op == "MaxPool" || op == "AvgPool") {
      onnx::NodeProto* out =
          AddNode(node, op == "MaxPool" ? "MaxPool" : "AveragePool", inputs, node.output());
      SetInts(out, "kernel_shape", a.GetInts("kernel"));
      SetInts(out, "strides", a.GetInts("stride"));
      SetInts(out, "pads", Pads(a));
      if (op == "AvgPool") SetInt(out, "count_include_pad", a.GetBool("count_include_pad"));
    } else if (op == "Flatten") {
      SetInt(AddNode(node, "Flatten", inputs, node.output()), "axis", 1);
    } else if (op == "Relu" || op == "Add") {
      AddNode(node, op, inputs, node.output());
    } else if (op == "GlobalAvgPool") {
      AddNode(node, "GlobalAveragePool", inputs, node.output());
    } else {
      return Unsupported(node, "no ONNX form");
    }
    return absl::OkStatus();
  }

  static absl::Status Unsupported(const Node& node, const std::string& why) {
    return absl::UnimplementedError(
        absl::StrCat("cannot export ", node.Describe(), " to ONNX: ", why));
  }

  const InferenceModel& model_;
  onnx::GraphProto* graph_;
  std::vector<std::vector<Node*>> consumers_;
  std::set<const Node*> absorbed_;
};

void AddMetadata(onnx::ModelProto* model, const std::string& key, const std::string& value) {
  onnx::StringStringEntryProto* entry = model->add_metadata_props();
  entry->set_key(key);
  entry->set_value(value);
}

// A JSON array of strings, so that names with commas survive.
std::string JsonStrings(const std::vector<std::string>& names) {
  std::vector<std::string> quoted;
  for (const std::string& name : names) {
    std::string q = "\"";
    for (char c : name) {
      if (c == '"' || c == '\\') q.push_back('\\');
      q.push_back(c);
    }
    quoted.push_back(q + "\"");
  }
  return absl::StrCat("[", absl::StrJoin(quoted, ", "), "]");
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

absl::Status ExportOnnx(const InferenceModel& model, const Preprocessing& preprocessing,
                        const std::string& path) {
  LS_ASSIGN_OR_RETURN(onnx::ModelProto onnx, ToOnnx(model, preprocessing));
  std::string bytes;
  if (!onnx.SerializeToString(&bytes)) {
    return absl::InternalError(absl::StrCat("cannot serialize the ONNX model for ", path));
  }
  return ckpt::WriteFileAtomically(path, bytes);
}

}  // namespace lockstep::inference
