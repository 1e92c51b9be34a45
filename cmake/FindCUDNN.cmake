# Finds cuDNN, which ships no CMake package: CUDNN_FOUND and the imported target CUDNN::cudnn.
# Looks in the CUDA toolkit (CUDAToolkit_ROOT, $CUDA_PATH, /usr/local/cuda) before the system.
# Lockstep's build uses it, and its installed package for the user's find_dependency(CUDNN).
find_path(CUDNN_INCLUDE_DIR cudnn.h
  HINTS ${CUDAToolkit_ROOT} ENV CUDA_PATH /usr/local/cuda PATH_SUFFIXES include)
find_library(CUDNN_LIBRARY cudnn
  HINTS ${CUDAToolkit_ROOT} ENV CUDA_PATH /usr/local/cuda PATH_SUFFIXES lib64 lib)
mark_as_advanced(CUDNN_INCLUDE_DIR CUDNN_LIBRARY)

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(CUDNN REQUIRED_VARS CUDNN_LIBRARY CUDNN_INCLUDE_DIR)
if(CUDNN_FOUND AND NOT TARGET CUDNN::cudnn)
  add_library(CUDNN::cudnn UNKNOWN IMPORTED)
  set_target_properties(CUDNN::cudnn PROPERTIES
    IMPORTED_LOCATION ${CUDNN_LIBRARY}
    INTERFACE_INCLUDE_DIRECTORIES ${CUDNN_INCLUDE_DIR})
endif()
