#include "parallel/shared_layouts.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/backend.h"

namespace lockstep::parallel {
namespace {

// Room for each rank's offer as comma-separated names: a handful of short layout names.
constexpr int64_t kOfferBytes = 256;

}  // namespace

std::vector<std::string> CommonLayouts(const std::vector<std::vector<std::string>>& offers) {
  std::vector<std::string> common;
  if (offers.empty()) return common;
  for (const std::string& layout : offers[0]) {
    const bool everywhere = std::all_of(offers.begin(), offers.end(), [&](const auto& offer) {
      return std::find(offer.begin(), offer.end(), layout) != offer.end();
    });
    if (everywhere) common.push_back(layout);
  }
  return common;
}

absl::StatusOr<std::vector<Layout>> AgreeSharedLayouts(Communicator& host_world, Device device) {
  LS_ASSIGN_OR_RETURN(const Backend* backend, FindBackend(device.type));
  std::vector<std::string> names;
  for (Layout layout : backend->SharedLayoutOffer()) names.push_back(LayoutName(layout));
  const std::string mine = absl::StrJoin(names, ",");
  if (static_cast<int64_t>(mine.size()) >= kOfferBytes) {
    return absl::InternalError(
        absl::StrCat("the shared layouts offered (", mine, ") exceed ", kOfferBytes - 1, " bytes"));
  }
  Tensor offer = Tensor::Zeros({kOfferBytes}, DType::kU8);
  std::memcpy(offer.raw_data(), mine.data(), mine.size());
  Tensor all = Tensor::Empty({host_world.size(), kOfferBytes}, DType::kU8);
  LS_RETURN_IF_ERROR(
      Annotate(host_world.AllGather(offer, all), "agreeing on the layouts of shared values"));
  std::vector<std::vector<std::string>> offers;
  for (int rank = 0; rank < host_world.size(); ++rank) {
    const char* text = static_cast<const char*>(all.raw_data()) + rank * kOfferBytes;
    offers.push_back(
        absl::StrSplit(std::string(text, strnlen(text, kOfferBytes)), ',', absl::SkipEmpty()));
  }
  std::vector<Layout> common;
  for (const std::string& name : CommonLayouts(offers)) {
    Layout layout;
    if (!ParseLayout(name, &layout)) {
      return absl::InternalError(absl::StrCat("rank 0 offered layout ", name, ", unknown here"));
    }
    common.push_back(layout);
  }
  return common;
}

}  // namespace lockstep::parallel
