// Every flag of lockstep-train is classified: a setting every rank must share
// (SettingsThatMustMatch) or a per-rank flag with its reason (PerRankFlags). A flag that changes
// the collectives a rank issues, left free to differ, would hang the job or corrupt its sums, so
// a flag added to neither list fails here, naming it.

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "examples/train_flags.h"

namespace lockstep::train {
namespace {

// The flag a setting is about ("--ckpt-dir given": --ckpt-dir); empty for an environment
// variable.
std::string FlagOf(const std::string& setting) {
  return setting.starts_with("--") ? setting.substr(0, setting.find(' ')) : "";
}

// Each flag the two lists name, with the lists that name it.
std::map<std::string, std::vector<std::string>> ClassifiedFlags() {
  std::map<std::string, std::vector<std::string>> lists;
  for (const auto& [setting, value] : SettingsThatMustMatch(Flags{}, EnvOptions{}, false)) {
    const std::string flag = FlagOf(setting);
    if (!flag.empty()) lists[flag].push_back("SettingsThatMustMatch");
  }
  for (const PerRankFlag& per_rank : PerRankFlags()) {
    EXPECT_FALSE(per_rank.why.empty()) << per_rank.flag << " in PerRankFlags says not why";
    lists[std::string(per_rank.flag)].push_back("PerRankFlags");
  }
  return lists;
}

TEST(TrainFlagsTest, EveryFlagIsSharedOrPerRank) {
  Flags flags;
  CLI::App app;  // as lockstep-train builds it
  AddFlags(app, flags);
  std::map<std::string, std::vector<std::string>> lists = ClassifiedFlags();
  for (const CLI::Option* option : app.get_options()) {
    ASSERT_FALSE(option->get_lnames().empty())
        << option->get_name(true, true) << " has no long name to classify it by";
    const std::string flag = "--" + option->get_lnames().front();
    const auto it = lists.find(flag);
    if (it == lists.end()) {
      ADD_FAILURE() << flag << " is in neither list of examples/train_flags.cc: in "
                    << "SettingsThatMustMatch when it changes the collectives a rank issues, the "
                    << "graph, the data order or the numerics, in PerRankFlags with why otherwise";
      continue;
    }
    EXPECT_EQ(it->second.size(), 1u) << flag << " is in " << absl::StrJoin(it->second, " and ");
    lists.erase(it);
  }
  for (const auto& [flag, names] : lists) {
    ADD_FAILURE() << absl::StrJoin(names, " and ") << " name " << flag
                  << ", which lockstep-train does not define";
  }
}

}  // namespace
}  // namespace lockstep::train
