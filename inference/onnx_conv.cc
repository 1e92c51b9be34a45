// Conv2D as ONNX's Conv. A BiasAdd that alone reads it joins it as Conv's bias
// (onnx_elementwise.cc), as exporters of other frameworks write it.

#include "inference/onnx_registry.h"

namespace lockstep::inference {
namespace {

absl::Status WriteConv2D(OnnxWriter& w, const Node& node) {
  const Attrs& a = node.attrs;
  onnx::NodeProto* out = w.AddNode(node, "Conv", w.InputNames(node), node.output());
  const Shape& filter = node.inputs[1]->shape();  // (O, I / groups, kh, kw)
  SetInts(out, "kernel_shape", {filter[2], filter[3]});
  SetInts(out, "strides", a.GetInts("stride"));
  SetInts(out, "pads", OnnxPads(a));
  SetInts(out, "dilations", a.GetInts("dilation"));
  SetInt(out, "group", a.GetInt("groups"));
  w.AcceptBias(node, out);
  return absl::OkStatus();
}

REGISTER_ONNX("Conv2D", WriteConv2D);

}  // namespace
}  // namespace lockstep::inference
