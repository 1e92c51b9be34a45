#include "graph/attr.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "core/logging.h"

namespace lockstep {
namespace {

template <typename T>
const T& GetAs(const std::map<std::string, AttrValue>& items, const std::string& name,
               const char* type) {
  auto it = items.find(name);
  LS_CHECK(it != items.end()) << "attribute '" << name << "' missing";
  const T* value = std::get_if<T>(&it->second);
  LS_CHECK(value != nullptr) << "attribute '" << name << "' is not " << type;
  return *value;
}

}  // namespace

std::string AttrToString(const AttrValue& value) {
  struct Printer {
    std::string operator()(int64_t v) const { return absl::StrCat(v); }
    std::string operator()(double v) const { return absl::StrCat(v); }
    std::string operator()(bool v) const { return v ? "true" : "false"; }
    std::string operator()(const std::string& v) const { return absl::StrCat("\"", v, "\""); }
    std::string operator()(const std::vector<int64_t>& v) const {
      return absl::StrCat("[", absl::StrJoin(v, ", "), "]");
    }
    std::string operator()(const std::vector<double>& v) const {
      return absl::StrCat("[", absl::StrJoin(v, ", "), "]");
    }
  };
  return std::visit(Printer{}, value);
}

const AttrValue& Attrs::Get(const std::string& name) const {
  auto it = items_.find(name);
  LS_CHECK(it != items_.end()) << "attribute '" << name << "' missing";
  return it->second;
}

int64_t Attrs::GetInt(const std::string& name) const {
  return GetAs<int64_t>(items_, name, "an int");
}
double Attrs::GetFloat(const std::string& name) const {
  return GetAs<double>(items_, name, "a float");
}
bool Attrs::GetBool(const std::string& name) const { return GetAs<bool>(items_, name, "a bool"); }
const std::string& Attrs::GetString(const std::string& name) const {
  return GetAs<std::string>(items_, name, "a string");
}
const std::vector<int64_t>& Attrs::GetInts(const std::string& name) const {
  return GetAs<std::vector<int64_t>>(items_, name, "a list of ints");
}

std::string Attrs::ToString() const {
  return absl::StrCat("{",
                      absl::StrJoin(items_, ", ",
                                    [](std::string* out, const auto& item) {
                                      absl::StrAppend(out, item.first, "=",
                                                      AttrToString(item.second));
                                    }),
                      "}");
}

}  // namespace lockstep
