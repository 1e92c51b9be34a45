# cmake --install: the libraries with their headers under include/lockstep (included as in the
# source tree: "train/model.h"), the binaries, and the package find_package(Lockstep) loads, with
# the targets Lockstep::core, dataset, graph, ops, parallel, parallel_ops, ckpt, train, inference
# and env_options (what the binaries read from the environment, for programs of one's own),
# flag_checks (the binaries' CLI11 flag validators), precision_flags (their --amp-level,
# --amp-dtype and --allreduce-dtype), train_flags (lockstep-train's flags), termination (what a
# rank says on SIGTERM), launch (lockstep-run's parts), and cuda_status in CUDA builds.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(lockstep_libraries)
foreach(name core dataset graph ops parallel parallel_ops ckpt train inference env_options
             flag_checks precision_flags train_flags termination launch)
  set_target_properties(lockstep_${name} PROPERTIES EXPORT_NAME ${name})
  list(APPEND lockstep_libraries lockstep_${name})
endforeach()
if(LOCKSTEP_WITH_CUDA)
  set_target_properties(lockstep_cuda_status PROPERTIES EXPORT_NAME cuda_status)
  list(APPEND lockstep_libraries lockstep_cuda_status)
endif()
# The libraries of a sanitized build (cmake/Sanitize.cmake) call the sanitizer runtimes, so a
# program linking them must link those too.
if(LOCKSTEP_SANITIZE)
  target_link_options(lockstep_core INTERFACE -fsanitize=${LOCKSTEP_SANITIZE})
endif()
install(TARGETS ${lockstep_libraries} EXPORT LockstepTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  # The objects of the OBJECT libraries: ops and kernels, which Lockstep::train links into the
  # user's program, and inference with its ONNX translations, which a program links directly.
  OBJECTS DESTINATION ${CMAKE_INSTALL_LIBDIR}/lockstep
  FILE_SET HEADERS DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/lockstep
  FILE_SET protos DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/lockstep)

set(lockstep_binaries lockstep-train lockstep-ckpt lockstep-allgather lockstep-make-sample
  lockstep-run)
# The installed binaries keep finding the libraries outside the system's paths (cuDNN, NCCL).
set_target_properties(${lockstep_binaries} PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)
install(TARGETS ${lockstep_binaries})

set(lockstep_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/Lockstep)
install(EXPORT LockstepTargets NAMESPACE Lockstep:: DESTINATION ${lockstep_cmake_dir})
configure_package_config_file(cmake/LockstepConfig.cmake.in
  ${PROJECT_BINARY_DIR}/LockstepConfig.cmake INSTALL_DESTINATION ${lockstep_cmake_dir})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/LockstepConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/LockstepConfig.cmake
              ${PROJECT_BINARY_DIR}/LockstepConfigVersion.cmake
        DESTINATION ${lockstep_cmake_dir})
if(LOCKSTEP_WITH_CUDA)
  install(FILES cmake/FindCUDNN.cmake cmake/FindNCCL.cmake cmake/CudaLibraryFinder.cmake
          DESTINATION ${lockstep_cmake_dir})
endif()
