# Third-party headers, found without copying any of them into this tree:
#   nlohmann-json: Debian's nlohmann-json3-dev (a CMake package), or else the `nlohmann-json`
#                  package from PyPI, which pyproject.toml lists in [build-system] requires, so
#                  `pip install` / `python -m build` bring it into the isolated build environment;
#   CLI11:         Debian's libcli11-dev (no PyPI package ships it); a clear error otherwise.

find_package(nlohmann_json 3 QUIET)
if(NOT nlohmann_json_FOUND)
  if(NOT Python_EXECUTABLE)
    find_package(Python COMPONENTS Interpreter QUIET)
  endif()
  if(Python_EXECUTABLE)
    execute_process(
      COMMAND "${Python_EXECUTABLE}" -c
              "import nlohmann_json, os; print(os.path.join(os.path.dirname(nlohmann_json.__file__), 'include'))"
      OUTPUT_VARIABLE TORCHPORT_NLOHMANN_INCLUDE OUTPUT_STRIP_TRAILING_WHITESPACE
      ERROR_QUIET RESULT_VARIABLE _tp_rc)
  endif()
  if(_tp_rc EQUAL 0 AND EXISTS "${TORCHPORT_NLOHMANN_INCLUDE}/nlohmann/json.hpp")
    add_library(nlohmann_json::nlohmann_json INTERFACE IMPORTED)
    target_include_directories(nlohmann_json::nlohmann_json SYSTEM INTERFACE
                               "${TORCHPORT_NLOHMANN_INCLUDE}")
    message(STATUS "nlohmann-json: the PyPI package's headers in ${TORCHPORT_NLOHMANN_INCLUDE}")
  else()
    message(FATAL_ERROR " torchport: building from source needs nlohmann-json >= 3: "
                        "`apt-get install nlohmann-json3-dev` or `pip install nlohmann-json`")
  endif()
endif()

find_package(CLI11 QUIET)
if(NOT CLI11_FOUND)
  message(FATAL_ERROR " torchport: building from source needs the CLI11 headers: "
                      "`apt-get install libcli11-dev` (or -DCLI11_DIR=<dir with CLI11Config.cmake>); "
                      "the prebuilt wheel needs nothing")
endif()
