#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

namespace lockstep {

// A node attribute: integer, float, bool, string, or a list of integers or floats.
using AttrValue =
    std::variant<int64_t, double, bool, std::string, std::vector<int64_t>, std::vector<double>>;

std::string AttrToString(const AttrValue& value);

// Named attributes of a node, kept sorted by name so dumps and fingerprints are canonical.
class Attrs {
 public:
  Attrs() = default;
  Attrs(std::initializer_list<std::pair<const std::string, AttrValue>> items) : items_(items) {}

  void Set(const std::string& name, AttrValue value) { items_[name] = std::move(value); }
  bool Has(const std::string& name) const { return items_.count(name) > 0; }
  const AttrValue& Get(const std::string& name) const;

  int64_t GetInt(const std::string& name) const;
  double GetFloat(const std::string& name) const;
  bool GetBool(const std::string& name) const;
  const std::string& GetString(const std::string& name) const;
  const std::vector<int64_t>& GetInts(const std::string& name) const;

  const std::map<std::string, AttrValue>& items() const { return items_; }
  // "{groups=1, stride=[2, 2]}"
  std::string ToString() const;

 private:
  std::map<std::string, AttrValue> items_;
};

}  // namespace lockstep
