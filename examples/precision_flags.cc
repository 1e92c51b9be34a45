#include "examples/precision_flags.h"

#include "absl/strings/str_cat.h"
#include "core/backend.h"

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

void AddPrecisionFlags(CLI::App& app, PrecisionFlags& flags) {
  const std::map<std::string, AmpLevel> levels = {
      {"O0", AmpLevel::kO0}, {"O1", AmpLevel::kO1}, {"O2", AmpLevel::kO2}, {"O3", AmpLevel::kO3}};
  app.add_option("--amp-level", flags.amp_level,
                 "mixed precision as MindSpore's amp_level: O0 float32; O1 convolutions and "
                 "matmuls in --amp-dtype; O2 all but batch-norm parameters and the loss; O3 all "
                 "but batch-norm statistics and the loss")
      ->transform(CLI::CheckedTransformer(levels))
      ->default_str("O0");
  std::map<std::string, DType> low = FloatDTypeFlags();
  low.erase("f32");
  app.add_option("--amp-dtype", flags.amp_dtype,
                 "low precision of --amp-level: bf16, or fp16 (pair it with --loss-scale dynamic)")
      ->transform(CLI::CheckedTransformer(low))
      ->default_str("bf16");
  app.add_option("--allreduce-dtype", flags.allreduce_dtype,
                 "dtype of the gradient AllReduce on the wire (gradients stay float32)")
      ->transform(CLI::CheckedTransformer(FloatDTypeFlags()))
      ->default_str("f32");
}

void ApplyPrecisionFlags(const PrecisionFlags& flags, train::ModelOptions& options) {
  options.amp_level = flags.amp_level;
  options.amp_dtype = flags.amp_dtype;
  options.parallel.allreduce_dtype = flags.allreduce_dtype;
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
