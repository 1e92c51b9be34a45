#include "examples/precision_flags.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "core/backend.h"

namespace lockstep {
namespace {

// The flags' names for dtypes: fp16 as PyTorch and MindSpore users write it.
const std::map<std::string, DType>& FlagDTypes() {
  static const auto* dtypes = new std::map<std::string, DType>{
      {"f32", DType::kF32}, {"bf16", DType::kBF16}, {"fp16", DType::kF16}};
  return *dtypes;
}

DType FlagDType(const std::string& name) { return FlagDTypes().at(name); }

std::string FlagName(DType dtype) {
  for (const auto& [name, value] : FlagDTypes()) {
    if (value == dtype) return name;
  }
  return DTypeName(dtype);
}

}  // namespace

void AddPrecisionFlags(CLI::App& app, PrecisionFlags& flags) {
  app.add_option("--amp-level", flags.amp_level,
                 "mixed precision as MindSpore's amp_level: O0 float32; O1 convolutions and "
                 "matmuls in --amp-dtype; O2 all but batch-norm parameters and the loss; O3 all "
                 "but the loss")
      ->check(CLI::IsMember({"O0", "O1", "O2", "O3"}))
      ->capture_default_str();
  app.add_option("--amp-dtype", flags.amp_dtype,
                 "low precision of --amp-level: bf16, or fp16 (pair it with --loss-scale dynamic)")
      ->check(CLI::IsMember({"bf16", "fp16"}))
      ->capture_default_str();
  app.add_option("--allreduce-dtype", flags.allreduce_dtype,
                 "dtype of the gradient AllReduce on the wire (gradients stay float32)")
      ->check(CLI::IsMember({"f32", "bf16", "fp16"}))
      ->capture_default_str();
}

void ApplyPrecisionFlags(const PrecisionFlags& flags, train::ModelOptions& options) {
  AmpLevel level = AmpLevel::kO0;
  ParseAmpLevel(flags.amp_level, &level);  // CLI11 checked the name
  options.amp_level = level;
  options.amp_dtype = FlagDType(flags.amp_dtype);
  options.parallel.allreduce_dtype = FlagDType(flags.allreduce_dtype);
}

std::string PrecisionLine(const train::ModelOptions& options) {
  std::string line = options.amp_level == AmpLevel::kO0
                         ? "float32"
                         : absl::StrCat(AmpLevelName(options.amp_level), " in ",
                                        FlagName(options.amp_dtype), ", float32 master weights");
  if (options.parallel.mode == parallel::ParallelMode::kDataParallel) {
    absl::StrAppend(&line, ", gradients reduced in ", FlagName(options.parallel.allreduce_dtype));
  }
  const Backend& backend = BackendOf(options.device);
  if (options.amp_level != AmpLevel::kO0 && !backend.ComputesNatively(options.amp_dtype)) {
    absl::StrAppend(&line, " (this ", DeviceTypeName(options.device.type), " has no native ",
                    FlagName(options.amp_dtype), " arithmetic: kernels convert through float32, so ",
                    options.amp_dtype == DType::kBF16
                        ? "the speed-up needs a CPU with AVX512-BF16 or AMX)"
                        : "expect no speed-up; bf16 is native on CPUs with AVX512-BF16 or AMX)");
  }
  return line;
}

}  // namespace lockstep
