# CUDA detection: AUTO builds the CUDA parts when /usr/local/cuda has nvcc, cuDNN and NCCL.
# A CPU-only configure always works; LOCKSTEP_CUDA=ON makes a missing toolkit an error.
set(LOCKSTEP_CUDA_ROOT /usr/local/cuda)
set(LOCKSTEP_WITH_CUDA OFF)
if(NOT LOCKSTEP_CUDA STREQUAL "OFF")
  find_package(CUDNN QUIET)  # cmake/FindCUDNN.cmake: CUDNN::cudnn
  find_package(NCCL QUIET)   # cmake/FindNCCL.cmake: NCCL::nccl
  if(EXISTS ${LOCKSTEP_CUDA_ROOT}/bin/nvcc AND CUDNN_FOUND AND NCCL_FOUND)
    set(LOCKSTEP_WITH_CUDA ON)
  elseif(LOCKSTEP_CUDA STREQUAL "ON")
    message(FATAL_ERROR "LOCKSTEP_CUDA=ON but nvcc, cuDNN or NCCL is missing under ${LOCKSTEP_CUDA_ROOT}")
  endif()
endif()

if(LOCKSTEP_WITH_CUDA)
  set(CMAKE_CUDA_COMPILER ${LOCKSTEP_CUDA_ROOT}/bin/nvcc)
  set(CMAKE_CUDA_ARCHITECTURES 90-real 90-virtual)
  # CMake 3.25 knows no CUDA20 dialect for nvcc; .cu files hold only device code and launchers.
  set(CMAKE_CUDA_STANDARD 17)
  enable_language(CUDA)
  find_package(CUDAToolkit REQUIRED)
  message(STATUS "Lockstep: CUDA parts enabled (${LOCKSTEP_CUDA_ROOT})")
else()
  message(STATUS "Lockstep: CPU-only build")
endif()
