// lockstep-ckpt: inspects per-rank checkpoints (.ckpt, MindSpore's format) and graph metadata
// (.meta); exports a checkpoint's inference graph as ONNX and classifies images with it. Exit
// status: 0 good, 1 the files differ / fail verification / fail their CRC, 2 an error (unreadable
// or corrupt file, bad arguments).

#include <CLI/CLI.hpp>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "ckpt/graph_meta.h"
#include "ckpt/inspect.h"
#include "ckpt/reader.h"
#include "core/json.h"
#include "core/logging.h"
#include "core/paths.h"
#include "dataset/image_folder.h"
#include "examples/flag_checks.h"
#include "inference/onnx_export.h"
#include "inference/run.h"

namespace lockstep::ckpt {
namespace {

constexpr int kDiffers = 1;
constexpr int kError = 2;

int Fail(const absl::Status& status) {
  std::cerr << LogPrefix() << "error: " << status.message() << std::endl;
  return kError;
}

// A JSON string literal.
std::string Json(absl::string_view text) { return JsonString(text); }

// A JSON number; null where JSON has none (NaN, infinities).
std::string Json(double value) {
  return std::isfinite(value) ? absl::StrFormat("%.9g", value) : "null";
}

std::string StatsJson(const TensorStats& stats) {
  return absl::StrFormat(R"("min": %s, "max": %s, "mean": %s, "std": %s, "nan_count": %d)",
                         Json(stats.min), Json(stats.max), Json(stats.mean), Json(stats.std),
                         stats.nan_count);
}

std::string CrcText(const CheckpointData& data) {
  if (data.crc_status == CrcStatus::kAbsent) return "absent";
  return absl::StrFormat("%s (stored %08x, computed %08x)", CrcStatusName(data.crc_status),
                         data.stored_crc, data.computed_crc);
}

void PrintListJson(const CheckpointData& data) {
  std::vector<std::string> tensors;
  for (const Entry& entry : data.entries) {
    std::string tensor =
        absl::StrFormat(R"({"name": %s, "dtype": %s, "shape": [%s], "bytes": %d, "slices": %d)",
                        Json(entry.name), Json(entry.type->name), absl::StrJoin(entry.shape, ", "),
                        entry.content.size(), entry.slices);
    absl::StrAppend(&tensor, ", ",
                    entry.type->numeric() ? StatsJson(ComputeStats(entry))
                                          : absl::StrCat(R"("text": )", Json(entry.content)),
                    "}");
    tensors.push_back(std::move(tensor));
  }
  std::vector<std::string> maps;
  for (const std::string& name : data.map_parameters) maps.push_back(Json(name));
  std::cout << absl::StrFormat(
      "{\"file\": %s, \"bytes\": %d, \"crc\": {\"status\": %s, \"stored\": %d, \"computed\": %d},"
      "\n \"tensors\": [\n  %s\n ],\n \"map_parameters\": [%s]}\n",
      Json(data.path), data.file_bytes, Json(CrcStatusName(data.crc_status)), data.stored_crc,
      data.computed_crc, absl::StrJoin(tensors, ",\n  "), absl::StrJoin(maps, ", "));
}

void PrintListText(const CheckpointData& data) {
  size_t width = 4;
  for (const Entry& entry : data.entries) width = std::max(width, entry.name.size());
  std::cout << absl::StrFormat("%s: %d tensors, %d bytes, CRC %s\n", data.path, data.entries.size(),
                               data.file_bytes, CrcText(data));
  std::cout << absl::StrFormat("%-*s  %-8s  %-18s  %12s  %12s  %12s  %12s  %12s\n", width, "name",
                               "dtype", "shape", "bytes", "min", "max", "mean", "std");
  for (const Entry& entry : data.entries) {
    std::string values;
    if (entry.type->numeric()) {
      const TensorStats s = ComputeStats(entry);
      values = absl::StrFormat("%12.6g  %12.6g  %12.6g  %12.6g", s.min, s.max, s.mean, s.std);
      if (s.nan_count > 0) absl::StrAppend(&values, "  (", s.nan_count, " NaN)");
    } else {
      values = Json(entry.content);
    }
    std::cout << absl::StrFormat("%-*s  %-8s  %-18s  %12d  %s\n", width, entry.name,
                                 entry.type->name, ShapeToString(entry.shape), entry.content.size(),
                                 values);
  }
  for (const std::string& name : data.map_parameters) {
    std::cout << absl::StrFormat("%-*s  MapParameter (not loaded)\n", width, name);
  }
}

int List(const std::string& path, bool json) {
  absl::StatusOr<CheckpointData> data =
      ReadCheckpoint(path, {.require_crc = false, .fail_on_crc_mismatch = false});
  if (!data.ok()) return Fail(data.status());
  json ? PrintListJson(*data) : PrintListText(*data);
  return data->crc_status == CrcStatus::kMismatch ? kDiffers : 0;
}

int Meta(const std::string& path) {
  absl::StatusOr<lockstep::proto::GraphDef> graph = ReadGraphMeta(path);
  if (!graph.ok()) return Fail(graph.status());
  const GraphSummary summary = SummarizeGraph(*graph);
  std::cout << absl::StrFormat("%s: %d nodes, fingerprint %s (%s)\n", path, graph->nodes_size(),
                               summary.fingerprint,
                               summary.fingerprint_matches ? "matches the graph" : "MISMATCH");
  std::cout << "nodes by op type:\n";
  for (const auto& [op, count] : summary.op_counts) {
    std::cout << absl::StrFormat("  %-28s %d\n", op, count);
  }
  std::cout << absl::StrFormat("AllReduce fusion groups: %d\n", summary.fusion_groups.size());
  for (const FusionGroup& group : summary.fusion_groups) {
    std::cout << absl::StrFormat("  group %-4d %4d AllReduce node(s) %14d bytes\n", group.group,
                                 group.nodes, group.bytes);
  }
  std::cout << absl::StrFormat("parameters: %d, %d elements, %d bytes\n", graph->parameters_size(),
                               summary.parameter_elements, summary.parameter_bytes);
  for (const lockstep::proto::Parameter& parameter : graph->parameters()) {
    std::cout << absl::StrFormat("  %-40s %-5s [%s]\n", parameter.name(), parameter.dtype(),
                                 absl::StrJoin(parameter.dims(), ", "));
  }
  return summary.fingerprint_matches ? 0 : kDiffers;
}

int Diff(const std::string& a_path, const std::string& b_path, double atol) {
  absl::StatusOr<CheckpointData> a = ReadCheckpoint(a_path, {.require_crc = false});
  if (!a.ok()) return Fail(a.status());
  absl::StatusOr<CheckpointData> b = ReadCheckpoint(b_path, {.require_crc = false});
  if (!b.ok()) return Fail(b.status());
  int differing = 0;
  for (const TensorDiff& diff : DiffCheckpoints(*a, *b)) {
    const bool exceeds = diff.Exceeds(atol);
    differing += exceeds ? 1 : 0;
    const std::string detail = diff.problem.empty() ? absl::StrFormat("max abs %.6g  max rel %.6g",
                                                                      diff.max_abs, diff.max_rel)
                                                    : diff.problem;
    std::cout << absl::StrFormat("%s %s: %s\n", exceeds ? "DIFF" : "  ok", diff.name, detail);
  }
  std::cout << absl::StrFormat("%d tensor(s) differ beyond atol %g\n", differing, atol);
  return differing > 0 ? kDiffers : 0;
}

// `dirs`: the job's checkpoint directory, or those gathered from each of its hosts.
int Verify(const std::vector<std::string>& dirs, const std::string& prefix,
           std::optional<int64_t> step) {
  absl::StatusOr<proto::Manifest> manifest = FindManifest(dirs, prefix, step);
  if (!manifest.ok()) {
    std::cout << LogPrefix() << "verify: " << manifest.status().message() << std::endl;
    return kDiffers;
  }
  std::cout << absl::StrFormat(
      "%s: prefix %s, step %d (epoch %d, step %d in epoch), world size %d, %s, fingerprint %s\n",
      absl::StrJoin(dirs, " "), manifest->prefix(), manifest->global_step(), manifest->epoch(),
      manifest->step_in_epoch(), manifest->world_size(),
      manifest->all_ranks() ? "all ranks saved" : "rank 0 saved",
      manifest->graph_fingerprint().empty() ? "(none)" : manifest->graph_fingerprint());
  const VerifyReport report = VerifyStep(dirs, *manifest);
  for (const std::string& path : report.checked) std::cout << "  ok " << path << "\n";
  for (const std::string& problem : report.problems) {
    std::cout << LogPrefix() << "verify: " << problem << "\n";
  }
  std::cout << (report.problems.empty() ? "verified" : "FAILED") << std::endl;
  return report.problems.empty() ? 0 : kDiffers;
}

struct InferenceFlags {
  std::string meta;  // default: the rank's -graph.meta beside the checkpoint
  std::string data;  // an ImageFolder root (or its train/) for the class names
  bool fold_bn = true;
};

// --meta, or the rank's -graph.meta beside the checkpoint.
absl::StatusOr<std::string> MetaPath(const std::string& ckpt, const InferenceFlags& f) {
  if (!f.meta.empty()) return f.meta;
  return inference::GraphMetaBeside(ckpt);
}

absl::StatusOr<inference::InferenceModel> LoadModel(const std::string& ckpt,
                                                    const InferenceFlags& f, int64_t batch) {
  LS_ASSIGN_OR_RETURN(const std::string meta, MetaPath(ckpt, f));
  return inference::LoadInferenceModel(ckpt, meta,
                                       {.batch_size = batch, .fold_batch_norm = f.fold_bn});
}

// The ONNX file may not replace what it is made from.
absl::Status CheckExportOutput(const std::string& ckpt, const std::string& out,
                               const InferenceFlags& f) {
  std::vector<NamedPath> inputs = {{"the checkpoint", ckpt}, {"--data", f.data}};
  if (absl::StatusOr<std::string> meta = MetaPath(ckpt, f); meta.ok()) {
    inputs.push_back({"the graph meta", *meta});
  }
  return CheckOutputsAreNotInputs({{"--out", out}}, inputs);
}

// The sorted class folders of DIR/train (or DIR), as lockstep-train labelled them: as many as the
// model has classes (another data set's would name them wrongly), or none without --data.
absl::StatusOr<std::vector<std::string>> ClassNames(const std::string& data, int64_t classes) {
  if (data.empty()) return std::vector<std::string>{};
  const std::string root = std::filesystem::exists(data + "/train") ? data + "/train" : data;
  LS_ASSIGN_OR_RETURN(dataset::Dataset folder, dataset::ImageFolder(root, {}));
  std::vector<std::string> names = folder.class_names();
  if (static_cast<int64_t>(names.size()) != classes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--data ", data, " has ", names.size(), " class folder(s), the model ", classes,
        " classes: give the data set it was trained on, or no --data for class numbers"));
  }
  return names;
}

int Export(const std::string& ckpt, const std::string& out, const InferenceFlags& f) {
  if (absl::Status distinct = CheckExportOutput(ckpt, out, f); !distinct.ok()) {
    return Fail(distinct);
  }
  absl::StatusOr<inference::InferenceModel> model = LoadModel(ckpt, f, 1);
  if (!model.ok()) return Fail(model.status());
  inference::Preprocessing preprocessing = inference::ValidationPreprocessing(*model);
  absl::StatusOr<std::vector<std::string>> names = ClassNames(f.data, model->classes);
  if (!names.ok()) return Fail(names.status());
  preprocessing.class_names = *names;
  const absl::Status written = inference::ExportOnnx(*model, preprocessing, out);
  if (!written.ok()) return Fail(written);
  std::cout << absl::StrFormat("%s: %s, %dx%d RGB images -> %d logits, ONNX opset %d%s\n", out,
                               model->name, model->image_shape[1], model->image_shape[2],
                               model->classes, inference::kOnnxOpset,
                               f.fold_bn ? ", batch norm folded into the convolutions" : "");
  return 0;
}

int Predict(const std::string& ckpt, const std::vector<std::string>& images,
            const InferenceFlags& f) {
  absl::StatusOr<inference::InferenceModel> model =
      LoadModel(ckpt, f, static_cast<int64_t>(images.size()));
  if (!model.ok()) return Fail(model.status());
  absl::StatusOr<std::vector<std::string>> names = ClassNames(f.data, model->classes);
  if (!names.ok()) return Fail(names.status());
  absl::StatusOr<Tensor> batch = inference::LoadImages(images, model->image_shape[1]);
  if (!batch.ok()) return Fail(batch.status());
  absl::StatusOr<std::unique_ptr<Executor>> executor = inference::CompileInference(*model);
  if (!executor.ok()) return Fail(executor.status());
  absl::StatusOr<Tensor> logits = inference::Infer(**executor, *batch);
  if (!logits.ok()) return Fail(logits.status());
  const auto top = inference::TopK(*logits, 5);
  for (size_t i = 0; i < images.size(); ++i) {
    std::cout << images[i] << ":\n";
    for (const inference::Scored& s : top[i]) {
      const std::string name = names->empty() ? absl::StrCat("class ", s.label) : (*names)[s.label];
      std::cout << absl::StrFormat("  %6.2f%%  %s (logit %.4f)\n", 100.0 * s.probability, name,
                                   s.logit);
    }
  }
  return 0;
}

}  // namespace
}  // namespace lockstep::ckpt

int main(int argc, char** argv) {
  CLI::App app{"Inspects Lockstep/MindSpore checkpoints (.ckpt) and graph metadata (.meta)."};
  app.require_subcommand(1);
  std::string file, a, b, prefix;
  std::vector<std::string> dirs;
  bool json = false;
  double atol = 0.0;
  std::optional<int64_t> step;

  CLI::App* list = app.add_subcommand(
      "list", "every tensor's name, dtype, shape, bytes, min/max/mean/std, and the CRC status");
  list->add_option("file", file, ".ckpt file")->required()->check(lockstep::NonEmptyPath());
  list->add_flag("--json", json, "print JSON");
  CLI::App* meta = app.add_subcommand(
      "meta", "graph summary: nodes by op type, AllReduce fusion groups, parameters, fingerprint");
  meta->add_option("file", file, ".meta file")->required()->check(lockstep::NonEmptyPath());
  CLI::App* diff = app.add_subcommand(
      "diff", "per-tensor max absolute and relative difference; exit 1 beyond --atol");
  diff->add_option("a", a, "first .ckpt")->required()->check(lockstep::NonEmptyPath());
  diff->add_option("b", b, "second .ckpt")->required()->check(lockstep::NonEmptyPath());
  diff->add_option("--atol", atol, "tolerated max absolute difference")
      ->check(lockstep::NumberIn(0.0, lockstep::kNoLimit))
      ->capture_default_str();
  CLI::App* verify = app.add_subcommand(
      "verify", "a saved step: every rank's file, CRCs, manifest, identical replicas");
  verify->add_option("dirs", dirs, "checkpoint directory, or one per host without a shared disk")
      ->required()
      ->check(lockstep::NonEmptyPath());
  verify->add_option("--step", step, "global step (step_num) to check; default the newest")
      ->check(lockstep::IntegerIn(0));
  verify->add_option("--prefix", prefix, "checkpoint prefix, when the directory holds several");
  lockstep::ckpt::InferenceFlags inference;
  std::string out;
  std::vector<std::string> images;
  auto add_inference_flags = [&](CLI::App* command) {
    command
        ->add_option("--meta", inference.meta,
                     "graph .meta (default: the rank's -graph.meta beside the checkpoint)")
        ->check(lockstep::NonEmptyPath());
    command
        ->add_option("--data", inference.data,
                     "ImageFolder root the model was trained on, for the class names")
        ->check(lockstep::NonEmptyPath());
    command->add_flag("--fold-bn,!--no-fold-bn", inference.fold_bn,
                      "fold batch norm into the convolution before it (default on)");
  };
  CLI::App* export_onnx = app.add_subcommand(
      "export", "the checkpoint's inference graph as ONNX (opset 13, dynamic batch)");
  export_onnx->add_option("ckpt", file, ".ckpt file")->required()->check(lockstep::NonEmptyPath());
  export_onnx->add_option("--out", out, ".onnx file to write")
      ->required()
      ->check(lockstep::NonEmptyPath());
  add_inference_flags(export_onnx);
  CLI::App* predict = app.add_subcommand(
      "predict", "the top-5 classes of each image, with lockstep-train's validation transforms");
  predict->add_option("ckpt", file, ".ckpt file")->required()->check(lockstep::NonEmptyPath());
  predict->add_option("images", images, "image files (JPEG, PNG)")
      ->required()
      ->check(lockstep::NonEmptyPath());
  add_inference_flags(predict);
  if (std::optional<int> exit = lockstep::ParseOrExitCode(app, argc, argv, /*error_status=*/2)) {
    return *exit;
  }

  if (list->parsed()) return lockstep::ckpt::List(file, json);
  if (meta->parsed()) return lockstep::ckpt::Meta(file);
  if (diff->parsed()) return lockstep::ckpt::Diff(a, b, atol);
  if (export_onnx->parsed()) return lockstep::ckpt::Export(file, out, inference);
  if (predict->parsed()) return lockstep::ckpt::Predict(file, images, inference);
  return lockstep::ckpt::Verify(dirs, prefix, step);
}
