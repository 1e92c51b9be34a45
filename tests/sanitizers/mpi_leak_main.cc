// Leaks on purpose between MPI_Init_thread and MPI_Finalize: under ASan the CTest test
// sanitizer_mpi_leak (tests/sanitizers/CMakeLists.txt) expects LeakSanitizer to report this leak,
// and only it, from inside MPI_Finalize (mpi_leaks.cc).

#include <mpi.h>

#include <cstdio>

namespace {

char* volatile sink;  // volatile: the compiler may not drop the allocation

__attribute__((noinline)) void LoseSeventySevenBytes() {
  sink = new char[77];
  sink = nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  LoseSeventySevenBytes();
  MPI_Finalize();
  std::puts("MPI_Finalize returned without a leak report");
  return 0;
}
