// Linked into the fuzz targets of the protobuf readers as a source, not from a library: libFuzzer
// only looks LLVMFuzzerInitialize up, which would not pull it out of an archive.

#include <google/protobuf/stubs/logging.h>

// Protobuf logs every invalid UTF-8 string it rejects; the readers' errors say enough.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  google::protobuf::SetLogHandler(nullptr);
  return 0;
}
