# Finds cuDNN, which ships no CMake package: CUDNN_FOUND and the imported target CUDNN::cudnn.
include(${CMAKE_CURRENT_LIST_DIR}/CudaLibraryFinder.cmake)
lockstep_find_cuda_library(NAME CUDNN HEADER cudnn.h LIBRARY cudnn TARGET CUDNN::cudnn)
