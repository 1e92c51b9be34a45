# lockstep_find_cuda_library(NAME <package> HEADER <file.h> LIBRARY <name> TARGET <ns::target>)
#   For libraries of the CUDA world that ship no CMake package (cuDNN, NCCL): finds the header and
#   the library in the CUDA toolkit (CUDAToolkit_ROOT, $CUDA_PATH, /usr/local/cuda) before the
#   system, sets <package>_FOUND and creates the imported target. FindCUDNN and FindNCCL use it,
#   in Lockstep's build and in its installed package.
include(FindPackageHandleStandardArgs)

macro(lockstep_find_cuda_library)
  cmake_parse_arguments(ARG "" "NAME;HEADER;LIBRARY;TARGET" "" ${ARGN})
  find_path(${ARG_NAME}_INCLUDE_DIR ${ARG_HEADER}
    HINTS ${CUDAToolkit_ROOT} ENV CUDA_PATH /usr/local/cuda PATH_SUFFIXES include)
  find_library(${ARG_NAME}_LIBRARY ${ARG_LIBRARY}
    HINTS ${CUDAToolkit_ROOT} ENV CUDA_PATH /usr/local/cuda PATH_SUFFIXES lib64 lib)
  mark_as_advanced(${ARG_NAME}_INCLUDE_DIR ${ARG_NAME}_LIBRARY)
  find_package_handle_standard_args(${ARG_NAME}
    REQUIRED_VARS ${ARG_NAME}_LIBRARY ${ARG_NAME}_INCLUDE_DIR)
  if(${ARG_NAME}_FOUND AND NOT TARGET ${ARG_TARGET})
    add_library(${ARG_TARGET} UNKNOWN IMPORTED)
    set_target_properties(${ARG_TARGET} PROPERTIES
      IMPORTED_LOCATION ${${ARG_NAME}_LIBRARY}
      INTERFACE_INCLUDE_DIRECTORIES ${${ARG_NAME}_INCLUDE_DIR})
  endif()
endmacro()
