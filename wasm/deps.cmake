# Dependencies of the core under em++ (included from the top CMakeLists.txt
# when EMSCRIPTEN is set). Nothing here may point em++ at /usr/include:
# glibc's headers there break the wasm build.

# protoc is the native Debian binary; it must be the same version as the
# wasm runtime below (3.21.12), since generated code checks the version.
find_program(STAGECRAFT_PROTOC protoc REQUIRED NO_CMAKE_FIND_ROOT_PATH)

# libprotobuf-lite compiled with em++ by wasm/build-protobuf-lite.sh.
set(STAGECRAFT_PROTOBUF_WASM_PREFIX ${STAGECRAFT_CACHE_DIR}/protobuf-wasm CACHE PATH
    "Install prefix of the wasm libprotobuf-lite")
if(NOT EXISTS ${STAGECRAFT_PROTOBUF_WASM_PREFIX}/lib/libprotobuf-lite.a)
  message(FATAL_ERROR "wasm protobuf-lite missing in ${STAGECRAFT_PROTOBUF_WASM_PREFIX}; "
                      "run wasm/build-protobuf-lite.sh (or .ci/build)")
endif()
add_library(stagecraft_protobuf_lite_wasm STATIC IMPORTED)
set_target_properties(stagecraft_protobuf_lite_wasm PROPERTIES
  IMPORTED_LOCATION ${STAGECRAFT_PROTOBUF_WASM_PREFIX}/lib/libprotobuf-lite.a
  INTERFACE_INCLUDE_DIRECTORIES ${STAGECRAFT_PROTOBUF_WASM_PREFIX}/include)
set(STAGECRAFT_PROTOBUF_LITE stagecraft_protobuf_lite_wasm)

# nlohmann/json is header-only: copy Debian's headers into an include dir of
# their own (re-copied only when the Debian headers are newer).
set(STAGECRAFT_WASM_INCLUDE ${STAGECRAFT_CACHE_DIR}/include)
if(NOT EXISTS /usr/include/nlohmann/json.hpp)
  message(FATAL_ERROR "nlohmann-json3-dev is not installed (run .ci/setup)")
endif()
if(/usr/include/nlohmann/json.hpp IS_NEWER_THAN ${STAGECRAFT_WASM_INCLUDE}/nlohmann/json.hpp)
  file(COPY /usr/include/nlohmann DESTINATION ${STAGECRAFT_WASM_INCLUDE})
endif()
add_library(stagecraft_json_wasm INTERFACE)
target_include_directories(stagecraft_json_wasm INTERFACE ${STAGECRAFT_WASM_INCLUDE})
set(STAGECRAFT_JSON stagecraft_json_wasm)
