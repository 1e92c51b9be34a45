#include "core/layout.h"

#include <mutex>
#include <vector>

#include "core/logging.h"

namespace lockstep {
namespace {

struct LayoutTable {
  std::mutex mutex;
  std::vector<LayoutInfo> layouts{LayoutInfo{"plain", nullptr, nullptr}};
};

LayoutTable& Table() {
  static auto* table = new LayoutTable();
  return *table;
}

// Entries are never removed, so a reference outlives the lock.
const LayoutInfo& Info(Layout layout) {
  LayoutTable& table = Table();
  std::lock_guard<std::mutex> lock(table.mutex);
  LS_CHECK(layout.id < table.layouts.size()) << "layout id " << layout.id << " was not registered";
  return table.layouts[layout.id];
}

}  // namespace

Layout RegisterLayout(LayoutInfo info) {
  LayoutTable& table = Table();
  std::lock_guard<std::mutex> lock(table.mutex);
  for (const LayoutInfo& known : table.layouts) {
    LS_CHECK(known.name != info.name) << "layout " << info.name << " registered twice";
  }
  table.layouts.push_back(std::move(info));
  return Layout{static_cast<uint16_t>(table.layouts.size() - 1)};
}

const char* LayoutName(Layout layout) { return Info(layout).name.c_str(); }

bool ParseLayout(const std::string& name, Layout* layout) {
  LayoutTable& table = Table();
  std::lock_guard<std::mutex> lock(table.mutex);
  for (size_t id = 0; id < table.layouts.size(); ++id) {
    if (table.layouts[id].name == name) {
      *layout = Layout{static_cast<uint16_t>(id)};
      return true;
    }
  }
  return false;
}

bool LayoutEligible(Layout layout, const Shape& shape, DType dtype) {
  const LayoutInfo& info = Info(layout);
  return layout == Layout::kPlain || info.eligible(shape, dtype);
}

size_t LayoutBytes(Layout layout, const Shape& shape, DType dtype) {
  const LayoutInfo& info = Info(layout);
  return info.bytes ? info.bytes(shape, dtype) : NumElements(shape) * SizeOf(dtype);
}

}  // namespace lockstep
