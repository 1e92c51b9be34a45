// What the binaries read from the environment (examples/env_options.h): defaults when unset,
// the documented meanings, and malformed values refused with the variable and the value named.

#include "examples/env_options.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace lockstep {
namespace {

using std::chrono::milliseconds;

absl::StatusOr<EnvOptions> Parse(const std::map<std::string, std::string>& env) {
  return ParseEnvOptions([&env](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

TEST(EnvOptionsTest, DefaultsWhenUnset) {
  absl::StatusOr<EnvOptions> options = Parse({});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_FALSE(options->init.mpi);
  EXPECT_EQ(options->init.comm.collective_timeout, milliseconds(300000));
  EXPECT_EQ(options->init.comm.allreduce_segment_bytes, size_t{2} << 20);
  EXPECT_TRUE(options->overlap_communication);
  EXPECT_EQ(options->dump_dir, "");
  EXPECT_TRUE(options->math.allow_tf32);
  EXPECT_TRUE(options->math.deterministic);
}

TEST(EnvOptionsTest, ValuesAsDocumented) {
  absl::StatusOr<EnvOptions> options = Parse({{"OMPI_COMM_WORLD_SIZE", "2"},
                                              {"LOCKSTEP_COLLECTIVE_TIMEOUT_S", "2.5"},
                                              {"LOCKSTEP_ALLREDUCE_SEGMENT_MB", "0.5"},
                                              {"LOCKSTEP_OVERLAP_COMM", "0"},
                                              {"LOCKSTEP_DUMP_GRAPH", "/tmp/dumps"},
                                              {"LOCKSTEP_CUDA_TF32", "0"},
                                              {"LOCKSTEP_DETERMINISTIC", "0"}});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_TRUE(options->init.mpi);
  EXPECT_EQ(options->init.comm.collective_timeout, milliseconds(2500));
  EXPECT_EQ(options->init.comm.allreduce_segment_bytes, size_t{1} << 19);
  EXPECT_FALSE(options->overlap_communication);
  EXPECT_EQ(options->dump_dir, "/tmp/dumps");
  EXPECT_FALSE(options->math.allow_tf32);
  EXPECT_FALSE(options->math.deterministic);
  // 0 sends each AllReduce as one call; an empty value counts as unset.
  options = Parse({{"LOCKSTEP_ALLREDUCE_SEGMENT_MB", "0"}, {"LOCKSTEP_COLLECTIVE_TIMEOUT_S", ""}});
  ASSERT_TRUE(options.ok()) << options.status();
  EXPECT_EQ(options->init.comm.allreduce_segment_bytes, 0u);
  EXPECT_EQ(options->init.comm.collective_timeout, milliseconds(300000));
  for (const char* launcher : {"PMIX_RANK", "PMI_RANK"}) {
    EXPECT_TRUE(Parse({{launcher, "0"}})->init.mpi) << launcher;
  }
}

TEST(EnvOptionsTest, MalformedValuesAreRefusedByName) {
  const std::map<std::string, std::string> cases = {
      {"LOCKSTEP_COLLECTIVE_TIMEOUT_S='soon' is not a number of seconds",
       "LOCKSTEP_COLLECTIVE_TIMEOUT_S=soon"},
      {"LOCKSTEP_COLLECTIVE_TIMEOUT_S='5s' is not a number of seconds",
       "LOCKSTEP_COLLECTIVE_TIMEOUT_S=5s"},
      {"LOCKSTEP_COLLECTIVE_TIMEOUT_S='0' is not a positive number of seconds",
       "LOCKSTEP_COLLECTIVE_TIMEOUT_S=0"},
      {"LOCKSTEP_COLLECTIVE_TIMEOUT_S='-3' is not a positive number of seconds",
       "LOCKSTEP_COLLECTIVE_TIMEOUT_S=-3"},
      {"LOCKSTEP_COLLECTIVE_TIMEOUT_S='nan' is not a positive number of seconds",
       "LOCKSTEP_COLLECTIVE_TIMEOUT_S=nan"},
      {"LOCKSTEP_ALLREDUCE_SEGMENT_MB='-1' is not a non-negative number of MiB",
       "LOCKSTEP_ALLREDUCE_SEGMENT_MB=-1"},
      {"LOCKSTEP_ALLREDUCE_SEGMENT_MB='2MB' is not a number of MiB",
       "LOCKSTEP_ALLREDUCE_SEGMENT_MB=2MB"},
      {"LOCKSTEP_OVERLAP_COMM='yes' is not 1 or 0", "LOCKSTEP_OVERLAP_COMM=yes"},
      {"LOCKSTEP_CUDA_TF32='off' is not 1 or 0", "LOCKSTEP_CUDA_TF32=off"},
      {"LOCKSTEP_DETERMINISTIC='no' is not 1 or 0", "LOCKSTEP_DETERMINISTIC=no"},
  };
  for (const auto& [message, assignment] : cases) {
    const size_t equals = assignment.find('=');
    absl::StatusOr<EnvOptions> options =
        Parse({{assignment.substr(0, equals), assignment.substr(equals + 1)}});
    ASSERT_FALSE(options.ok()) << assignment;
    EXPECT_EQ(options.status().code(), absl::StatusCode::kInvalidArgument) << assignment;
    EXPECT_EQ(options.status().message(), message);
  }
}

}  // namespace
}  // namespace lockstep
