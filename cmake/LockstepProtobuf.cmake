# lockstep_protobuf_generate_cpp(<srcs_var> <hdrs_var> <proto>...): protobuf_generate_cpp, but
# protoc names each file by its path from the source root ("graph/graph.proto"). That name is the
# key of protobuf's process-wide descriptor pool; a bare "graph.proto" aborts any process that
# also loads another library registering one (OpenCV's dnn does, MindSpore has "checkpoint.proto").
# CMake 3.25's protobuf_generate always puts the calling folder first on protoc's path, which
# names the files bare, so protoc is run here. Outputs keep the source layout under the binary
# root: <build>/graph/graph.pb.h, included as "graph/graph.pb.h".
include_guard(GLOBAL)

function(lockstep_protobuf_generate_cpp srcs_var hdrs_var)
  set(srcs)
  set(hdrs)
  foreach(proto IN LISTS ARGN)
    cmake_path(ABSOLUTE_PATH proto BASE_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}
               OUTPUT_VARIABLE abs_proto)
    cmake_path(RELATIVE_PATH abs_proto BASE_DIRECTORY ${PROJECT_SOURCE_DIR} OUTPUT_VARIABLE name)
    cmake_path(REMOVE_EXTENSION name LAST_ONLY OUTPUT_VARIABLE stem)
    set(out ${PROJECT_BINARY_DIR}/${stem})
    add_custom_command(
      OUTPUT ${out}.pb.cc ${out}.pb.h
      COMMAND protobuf::protoc --cpp_out=${PROJECT_BINARY_DIR} -I${PROJECT_SOURCE_DIR} ${abs_proto}
      DEPENDS ${abs_proto} protobuf::protoc
      COMMENT "Running cpp protocol buffer compiler on ${name}"
      VERBATIM)
    list(APPEND srcs ${out}.pb.cc)
    list(APPEND hdrs ${out}.pb.h)
  endforeach()
  set(${srcs_var} ${srcs} PARENT_SCOPE)
  set(${hdrs_var} ${hdrs} PARENT_SCOPE)
endfunction()
