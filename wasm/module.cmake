# The wasm module (included from the top CMakeLists.txt under em++).
# Each flag's reason is in docs/building.md ("Emscripten flags").

# The core never throws; compiling it without exception support makes a
# stray try/throw a build error instead of a runtime abort in the browser.
# Every layer library (CMakeLists.txt, core/layers.txt) gets the flag.
foreach(layer_target IN LISTS STAGECRAFT_LAYER_TARGETS)
  target_compile_options(${layer_target} PRIVATE -fno-exceptions)
endforeach()

add_executable(stagecraft_wasm ${CMAKE_CURRENT_SOURCE_DIR}/wasm/bridge.cc)
target_link_libraries(stagecraft_wasm PRIVATE stagecraft_core)
target_compile_options(stagecraft_wasm PRIVATE -Wall -Wextra -fno-exceptions)
set_target_properties(stagecraft_wasm PROPERTIES SUFFIX ".js")
target_link_options(stagecraft_wasm PRIVATE
  --bind
  -O3
  -sMODULARIZE=1
  -sEXPORT_ES6=1
  -sEXPORT_NAME=createStagecraft
  -sENVIRONMENT=web,worker
  -sALLOW_MEMORY_GROWTH=1
  -sINITIAL_MEMORY=32MB
  -sMAXIMUM_MEMORY=4GB
  -sDISABLE_EXCEPTION_CATCHING=1
  -sFILESYSTEM=0)

