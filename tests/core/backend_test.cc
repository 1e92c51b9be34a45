#include "core/backend.h"

#include <gtest/gtest.h>

#include "core/layout.h"
#include "core/tensor.h"

namespace lockstep {
namespace {

// core/ alone has the host backend for the CPU: plain layouts, 64-byte alignment.
TEST(BackendTest, TheCpuAlwaysHasOne) {
  absl::StatusOr<Backend*> cpu = FindBackend(DeviceType::kCPU);
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  EXPECT_EQ((*cpu)->name(), "cpu");
  EXPECT_EQ((*cpu)->alignment(), 64u);
}

TEST(BackendTest, ADeviceWithoutBackendIsAnErrorNamingIt) {
  const auto type = static_cast<DeviceType>(static_cast<int>(DeviceType::kFirstOther) + 5);
  absl::StatusOr<Backend*> none = FindBackend(type);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("no backend for device type 21"), std::string::npos)
      << none.status();
  absl::StatusOr<Tensor> t = Tensor::Allocate({4}, DType::kF32, Device{type, 0}, false);
  EXPECT_FALSE(t.ok());
}

// More than any machine has: a Status naming the bytes and the device, not an abort.
TEST(BackendTest, AFailedAllocationIsAStatus) {
  const int64_t huge = int64_t{1} << 60;
  absl::StatusOr<Tensor> t = Tensor::Allocate({huge}, DType::kU8, Device::CPU(), false);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), absl::StatusCode::kResourceExhausted) << t.status();
  EXPECT_NE(t.status().message().find("allocating 1152921504606846976 bytes on cpu"),
            std::string::npos)
      << t.status();
}

TEST(LayoutTest, RegisteredLayoutsHaveNamesEligibilityAndBytes) {
  static const Layout pairs = RegisterLayout(
      {"test_pairs", [](const Shape& shape, DType) { return shape.back() % 2 == 0; },
       [](const Shape& shape, DType dtype) { return NumElements(shape) * SizeOf(dtype) + 8; }});
  EXPECT_STREQ(LayoutName(pairs), "test_pairs");
  EXPECT_STREQ(LayoutName(Layout::kPlain), "plain");
  Layout parsed;
  ASSERT_TRUE(ParseLayout("test_pairs", &parsed));
  EXPECT_EQ(parsed, pairs);
  EXPECT_FALSE(ParseLayout("no_such_layout", &parsed));
  EXPECT_TRUE(LayoutEligible(pairs, {3, 4}, DType::kF32));
  EXPECT_FALSE(LayoutEligible(pairs, {3, 5}, DType::kF32));
  EXPECT_TRUE(LayoutEligible(Layout::kPlain, {3, 5}, DType::kF32));
  EXPECT_EQ(LayoutBytes(pairs, {3, 4}, DType::kF32), 56u);
  EXPECT_EQ(LayoutBytes(Layout::kPlain, {3, 4}, DType::kF32), 48u);
}

}  // namespace
}  // namespace lockstep
