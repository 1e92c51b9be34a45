#pragma once

// The options of one compilation, keyed by their type: whoever compiles a graph puts in what its
// passes and kernels need (the optimizer's settings, the data-parallel options, the
// communication groups of the collectives, how float32 math may be done), and each pass or
// kernel factory reads its own type. graph/ knows none of these types: each is declared beside
// the pass or kernel that reads it. Values are immutable once set and shared between copies, so
// a PassConfig is cheap to copy.
//
//   PassConfig config;
//   config.Set(ApplyOptimizerOptions{.momentum = 0.9});
//   LS_ASSIGN_OR_RETURN(const ApplyOptimizerOptions* options,
//                       config.Require<ApplyOptimizerOptions>("pass ApplyOptimizer"));

#include <cxxabi.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <typeindex>
#include <typeinfo>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "core/status.h"

namespace lockstep {

class PassConfig {
 public:
  // Sets (or replaces) the value of type T.
  template <typename T>
  void Set(T value) {
    values_[std::type_index(typeid(T))] = std::make_shared<const T>(std::move(value));
  }

  // The value of type T, or null when none was set.
  template <typename T>
  const T* Get() const {
    auto it = values_.find(std::type_index(typeid(T)));
    return it == values_.end() ? nullptr : static_cast<const T*>(it->second.get());
  }

  // The value of type T, or an error saying that `user` (a pass, a node) needs it.
  template <typename T>
  absl::StatusOr<const T*> Require(absl::string_view user) const {
    if (const T* value = Get<T>()) return value;
    return absl::FailedPreconditionError(absl::StrCat(
        user, " needs ", TypeName(typeid(T)), " in the compile options (CompileOptions::config)"));
  }

 private:
  // "lockstep::ApplyOptimizerOptions" rather than the mangled name.
  static std::string TypeName(const std::type_info& type) {
    int status = 0;
    std::unique_ptr<char, void (*)(void*)> name(
        abi::__cxa_demangle(type.name(), nullptr, nullptr, &status), std::free);
    return status == 0 && name != nullptr ? std::string(name.get()) : std::string(type.name());
  }

  std::map<std::type_index, std::shared_ptr<const void>> values_;
};

}  // namespace lockstep
