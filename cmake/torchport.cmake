# Helpers shared by every layer.

function(torchport_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Werror -Wshadow
                                           -Wnon-virtual-dtor -Wimplicit-fallthrough)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    # GCC 12 at -O3 reports impossible std::string memcpy overlaps inside libstdc++ (GCC bug
    # 105329) and "maybe uninitialized" std::optional payloads (GCC bug 80635); neither is in
    # our code, and the ASan+UBSan build checks what they would.
    target_compile_options(${target} PRIVATE -Wno-restrict -Wno-maybe-uninitialized)
  endif()
endfunction()

if(TORCHPORT_SANITIZE)
  add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer
                      -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
endif()
if(TORCHPORT_FUZZ)
  # Instrument the whole library for coverage-guided fuzzing.
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined)
  add_link_options(-fsanitize=address,undefined)
endif()

# torchport_layer(NAME [DEPS ...]): one static library per directory src/torchport/NAME,
# built from every *.cc there except *_test.cc. Include paths are rooted at src/, so code
# includes <torchport/NAME/file.h>.
function(torchport_layer name)
  cmake_parse_arguments(ARG "" "" "DEPS" ${ARGN})
  file(GLOB sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/torchport/${name}/*.cc)
  list(FILTER sources EXCLUDE REGEX "_test\\.cc$")
  add_library(tp_${name} STATIC ${sources} ${PROJECT_SOURCE_DIR}/cmake/empty.cc)
  target_include_directories(tp_${name} PUBLIC ${PROJECT_SOURCE_DIR}/src)
  target_link_libraries(tp_${name} PUBLIC ${ARG_DEPS})
  target_compile_definitions(tp_${name} PUBLIC TORCHPORT_VERSION="${PROJECT_VERSION}")
  set_target_properties(tp_${name} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  torchport_warnings(tp_${name})
endfunction()
