// The ONNX file's class_names metadata is JSON that a real parser (python3's json module, strict
// about control characters and UTF-8) reads back as the names, whatever characters they hold.

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "core/file_io.h"
#include "graph/builder.h"
#include "inference/onnx_export.h"
#include "tests/testing/temp_dir.h"

namespace lockstep::inference {
namespace {

// images (1, C, 2, 2) -> GlobalAvgPool -> Flatten -> logits (1, C): one class per channel.
InferenceModel PoolingModel(int64_t classes) {
  InferenceModel model{.name = "pool", .graph = std::make_unique<Graph>()};
  Builder b(model.graph.get());
  Value* pooled = b.Op1("GlobalAvgPool", {b.Input("images", {1, classes, 2, 2})});
  model.graph->AddOutput("logits", b.Op1("Flatten", {pooled}), OutputKind::kResult);
  LS_CHECK(b.status().ok()) << b.status();
  model.image_shape = {classes, 2, 2};
  model.classes = classes;
  return model;
}

// The strings of the JSON array in file `path`, each as the hex of its UTF-8 bytes, as python3
// parses them; "python3 failed" if it cannot.
std::vector<std::string> ParsedByPython(const std::string& path) {
  const std::string command =
      "python3 -c 'import json, sys\n"
      "for name in json.load(open(sys.argv[1], encoding=\"utf-8\")):\n"
      "    print(name.encode(\"utf-8\").hex())' " +
      path + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  LS_CHECK(pipe != nullptr);
  std::string output;
  char buffer[256];
  while (size_t n = fread(buffer, 1, sizeof(buffer), pipe)) output.append(buffer, n);
  if (pclose(pipe) != 0) return {"python3 failed: " + output};
  std::vector<std::string> lines;
  for (size_t start = 0, end; (end = output.find('\n', start)) != std::string::npos;
       start = end + 1) {
    lines.push_back(output.substr(start, end - start));
  }
  return lines;
}

TEST(OnnxMetadataTest, ClassNamesAreJsonWhateverTheyHold) {
  if (std::system("python3 -c 'import json' 2>/dev/null") != 0) GTEST_SKIP() << "no python3";
  const std::vector<std::string> names = {R"(say "hi")",   R"(back\slash)",
                                          "two\nlines",    std::string("bell\x07 nul\0", 10),
                                          "caf\xc3\xa9",  // café
                                          "latin1 caf\xe9"};
  InferenceModel model = PoolingModel(static_cast<int64_t>(names.size()));
  Preprocessing preprocessing = ValidationPreprocessing(model);
  preprocessing.class_names = names;
  testing::TempDir dir;
  const std::string onnx_path = dir.Join("pool.onnx");
  ASSERT_TRUE(ExportOnnx(model, preprocessing, onnx_path).ok());

  onnx::ModelProto exported;
  ASSERT_TRUE(exported.ParseFromString(*ReadWholeFile(onnx_path)));
  std::string class_names;
  for (const onnx::StringStringEntryProto& entry : exported.metadata_props()) {
    if (entry.key() == "class_names") class_names = entry.value();
  }
  const std::string json_path = dir.Join("class_names.json");
  std::ofstream(json_path, std::ios::binary) << class_names;

  std::vector<std::string> expected;
  for (const std::string& name : names) expected.push_back(absl::BytesToHexString(name));
  expected.back() = absl::BytesToHexString("latin1 caf\xef\xbf\xbd");  // U+FFFD for the lone byte
  EXPECT_EQ(ParsedByPython(json_path), expected) << class_names;
}

}  // namespace
}  // namespace lockstep::inference
