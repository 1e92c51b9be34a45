#include "examples/precision_flags.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "core/backend.h"
#include "core/logging.h"

namespace lockstep {

const std::map<std::string, DType>& FloatDTypeFlags() {
  static const auto* dtypes = new std::map<std::string, DType>{
      {"f32", DType::kF32}, {"bf16", DType::kBF16}, {"fp16", DType::kF16}};
  return *dtypes;
}

std::string FloatDTypeFlagName(DType dtype) {
  for (const auto& [name, value] : FloatDTypeFlags()) {
    if (value == dtype) return name;
  }
  return DTypeName(dtype);
}

CLI::Option* AddFloatDTypeOption(CLI::App& app, const std::string& name, std::string& value,
                                 const std::string& description, bool low_only) {
  std::vector<std::string> names;
  for (const auto& [flag_name, dtype] : FloatDTypeFlags()) {
    if (!low_only || dtype != DType::kF32) names.push_back(flag_name);
  }
  return app.add_option(name, value, description)
      ->check(CLI::IsMember(names))
      ->capture_default_str();
}

void AddPrecisionFlags(CLI::App& app, PrecisionFlags& flags) {
  app.add_option("--amp-level", flags.amp_level,
                 "mixed precision as MindSpore's amp_level: O0 float32; O1 convolutions and "
                 "matmuls in --amp-dtype; O2 all but batch-norm parameters and the loss; O3 all "
                 "but batch-norm statistics and the loss")
      ->check(CLI::IsMember({"O0", "O1", "O2", "O3"}))
      ->capture_default_str();
  AddFloatDTypeOption(app, "--amp-dtype", flags.amp_dtype,
                      "low precision of --amp-level: bf16, or fp16 (pair it with --loss-scale "
                      "dynamic)",
                      /*low_only=*/true);
  AddFloatDTypeOption(app, "--allreduce-dtype", flags.allreduce_dtype,
                      "dtype of the gradient AllReduce on the wire (gradients stay float32)");
}

void ApplyPrecisionFlags(const PrecisionFlags& flags, train::ModelOptions& options) {
  LS_CHECK(ParseAmpLevel(flags.amp_level, &options.amp_level)) << flags.amp_level;
  options.amp_dtype = FloatDTypeFlags().at(flags.amp_dtype);
  options.parallel.allreduce_dtype = FloatDTypeFlags().at(flags.allreduce_dtype);
}

std::string PrecisionLine(const train::ModelOptions& options) {
  const std::string low = FloatDTypeFlagName(options.amp_dtype);
  std::string line =
      options.amp_level == AmpLevel::kO0
          ? "float32"
          : absl::StrCat(AmpLevelName(options.amp_level), " in ", low, ", float32 master weights");
  if (options.parallel.mode == parallel::ParallelMode::kDataParallel) {
    absl::StrAppend(&line, ", gradients reduced in ",
                    FloatDTypeFlagName(options.parallel.allreduce_dtype));
  }
  if (options.amp_level != AmpLevel::kO0 &&
      !BackendOf(options.device).ComputesNatively(options.amp_dtype)) {
    absl::StrAppend(&line, " (this ", DeviceTypeName(options.device.type), " has no native ", low,
                    " arithmetic: kernels convert through float32, so ",
                    options.amp_dtype == DType::kBF16
                        ? "the speed-up needs a CPU with AVX512-BF16 or AMX)"
                        : "expect no speed-up; bf16 is native on CPUs with AVX512-BF16 or AMX)");
  }
  return line;
}

}  // namespace lockstep
