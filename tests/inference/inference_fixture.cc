// For onnx_interop_test.py: trains MODEL for a few steps at SIZE x SIZE under DIR, saves its
// checkpoint, and writes DIR/MODEL/images.npy and logits.npy (Lockstep's own evaluation of the
// validation images); prints the checkpoint's path.
//
// usage: inference_fixture MODEL SIZE DIR

#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "trained_checkpoint.h"

namespace {

// numpy's .npy format, version 1.0: little-endian float32, C order.
void WriteNpy(const std::string& path, const lockstep::Tensor& t) {
  std::string header = absl::StrCat("{'descr': '<f4', 'fortran_order': False, 'shape': (",
                                    absl::StrJoin(t.shape(), ", "), ",), }");
  header.append(63 - (10 + header.size()) % 64, ' ');
  header.push_back('\n');
  std::ofstream out(path, std::ios::binary);
  out.write("\x93NUMPY\x01\x00", 8);
  const uint16_t length = static_cast<uint16_t>(header.size());
  out.write(reinterpret_cast<const char*>(&length), 2);
  out << header;
  out.write(reinterpret_cast<const char*>(t.data<float>()),
            static_cast<std::streamsize>(t.nbytes()));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: inference_fixture MODEL SIZE DIR\n";
    return 2;
  }
  const std::string model = argv[1], dir = argv[3];
  auto trained = lockstep::inference::TrainAndSave(model, std::stoll(argv[2]), dir);
  if (!trained.ok()) {
    std::cerr << "inference_fixture: " << trained.status().message() << "\n";
    return 1;
  }
  WriteNpy(dir + "/" + model + "/images.npy", trained->images);
  WriteNpy(dir + "/" + model + "/logits.npy", trained->logits);
  std::cout << trained->ckpt << std::endl;
  return 0;
}
