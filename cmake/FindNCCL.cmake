# Finds NCCL, which ships no CMake package: NCCL_FOUND and the imported target NCCL::nccl.
# Looks in the CUDA toolkit (CUDAToolkit_ROOT, $CUDA_PATH, /usr/local/cuda) before the system.
# Lockstep's build uses it, and its installed package for the user's find_dependency(NCCL).
find_path(NCCL_INCLUDE_DIR nccl.h
  HINTS ${CUDAToolkit_ROOT} ENV CUDA_PATH /usr/local/cuda PATH_SUFFIXES include)
find_library(NCCL_LIBRARY nccl
  HINTS ${CUDAToolkit_ROOT} ENV CUDA_PATH /usr/local/cuda PATH_SUFFIXES lib64 lib)
mark_as_advanced(NCCL_INCLUDE_DIR NCCL_LIBRARY)

include(FindPackageHandleStandardArgs)
find_package_handle_standard_args(NCCL REQUIRED_VARS NCCL_LIBRARY NCCL_INCLUDE_DIR)
if(NCCL_FOUND AND NOT TARGET NCCL::nccl)
  add_library(NCCL::nccl UNKNOWN IMPORTED)
  set_target_properties(NCCL::nccl PROPERTIES
    IMPORTED_LOCATION ${NCCL_LIBRARY}
    INTERFACE_INCLUDE_DIRECTORIES ${NCCL_INCLUDE_DIR})
endif()
