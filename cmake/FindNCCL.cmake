# Finds NCCL, which ships no CMake package: NCCL_FOUND and the imported target NCCL::nccl.
include(${CMAKE_CURRENT_LIST_DIR}/CudaLibraryFinder.cmake)
lockstep_find_cuda_library(NAME NCCL HEADER nccl.h LIBRARY nccl TARGET NCCL::nccl)
