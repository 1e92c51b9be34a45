#include "graph/op_registry.h"

#include <gtest/gtest.h>

namespace lockstep {
namespace {

TEST(OpRegistryTest, TheLinkedOpsNameAddAsTheGradientSum) {
  absl::StatusOr<const OpDef*> sum = OpRegistry::Global().GradientSum();
  ASSERT_TRUE(sum.ok()) << sum.status();
  EXPECT_EQ((*sum)->name(), "Add");
}

TEST(OpRegistryTest, GradientSumNeedsExactlyOneOp) {
  OpRegistry registry;
  registry.Register("Mul");
  absl::Status none = registry.GradientSum().status();
  EXPECT_EQ(none.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(none.message().find("found 0"), std::string::npos) << none;

  registry.Register("Plus").SumsGradients();
  ASSERT_TRUE(registry.GradientSum().ok());
  EXPECT_EQ((*registry.GradientSum())->name(), "Plus");

  registry.Register("Sum").SumsGradients();
  absl::Status two = registry.GradientSum().status();
  EXPECT_EQ(two.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(two.message().find("found 2: Plus, Sum"), std::string::npos) << two;
}

TEST(OpRegistryTest, InPlacePairsRepeatPerGroupOfTensors) {
  OpRegistry registry;
  // As Momentum: (param, grad, moment) per tensor -> (param', moment').
  const OpDef& op = registry.Register("Update").InPlace(0, 0).InPlace(1, 2).InPlaceRepeats(2, 3);
  EXPECT_EQ(op.InPlaceInput(0), 0);
  EXPECT_EQ(op.InPlaceInput(1), 2);
  EXPECT_EQ(op.InPlaceInput(2), 3);
  EXPECT_EQ(op.InPlaceInput(5), 8);
  const OpDef& single = registry.Register("Single").InPlace(1, 2);
  EXPECT_EQ(single.InPlaceInput(0), -1);
  EXPECT_EQ(single.InPlaceInput(1), 2);
  EXPECT_EQ(single.InPlaceInput(3), -1);
}

TEST(OpRegistryTest, InferenceForms) {
  auto form = [](const char* op) { return (*OpRegistry::Global().Find(op))->inference_form(); };
  ASSERT_TRUE(form("Conv2D").has_value());
  EXPECT_EQ(form("Conv2D")->ops, std::vector<std::string>{"Conv2D"});
  ASSERT_TRUE(form("BatchNormRelu").has_value());
  EXPECT_EQ(form("BatchNormRelu")->ops, (std::vector<std::string>{"BatchNormInference", "Relu"}));
  EXPECT_EQ(form("BatchNormRelu")->training_only_attrs, std::vector<std::string>{"momentum"});
  ASSERT_TRUE(form("Identity").has_value());
  EXPECT_TRUE(form("Identity")->ops.empty());  // passes its input on
  EXPECT_FALSE(form("Momentum").has_value());  // training only
}

}  // namespace
}  // namespace lockstep
