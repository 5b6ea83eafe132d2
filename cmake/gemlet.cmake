# gemlet_layer(NAME DEPS... [PRIVATE DEPS...] [TEST DEPS...]): one static library per layer from
# the *.cc files of the current directory (tests, benchmarks and fuzz targets excluded), and one
# GoogleTest binary from its *_test.cc files. A layer links only the layers below it, so a wrong
# include fails to link (scripts/check_layering.sh says which includes are allowed).
# The DEPS before PRIVATE are public: the layer's headers include them, so its users need them
# too. The DEPS after PRIVATE only its .cc files use. For a static library both are linked into
# every user (CMake links a PRIVATE dependency as $<LINK_ONLY:...>); PRIVATE keeps the
# dependency's usage requirements (include folders, definitions) from reaching the users, and
# says that a user must not count on them. The layer's own tests and benchmarks get both, and
# the DEPS after TEST, which only they use.
function(gemlet_layer name)
  cmake_parse_arguments(PARSE_ARGV 1 _dep "" "" "PRIVATE;TEST")
  set(_public ${_dep_UNPARSED_ARGUMENTS})
  set(_private ${_dep_PRIVATE})
  file(GLOB _srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cc)
  list(FILTER _srcs EXCLUDE REGEX "_(test|bench|fuzz)\\.cc$")
  if(NOT _srcs)  # a layer still being written: keep the build graph whole
    file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/${name}_empty.cc "")
    set(_srcs ${CMAKE_CURRENT_BINARY_DIR}/${name}_empty.cc)
  endif()
  add_library(${name} STATIC ${_srcs})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR})
  target_link_libraries(${name} PUBLIC ${_public})
  if(_private)
    target_link_libraries(${name} PRIVATE ${_private})
  endif()
  gemlet_tests(${name} ${name} ${_private} ${_dep_TEST})
  file(GLOB _benches CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*_bench.cc)
  if(GEMLET_BENCH AND _benches)
    add_executable(${name}_bench ${_benches})
    target_link_libraries(${name}_bench PRIVATE ${name} ${_private} ${_dep_TEST} benchmark::benchmark)
    target_compile_definitions(${name}_bench PRIVATE GEMLET_SHARED_DIR="${GEMLET_SHARED_DIR}")
  endif()
endfunction()

# gemlet_optional_library(TARGET NAME HEADER LIBRARY): when HEADER and LIBRARY are found, TARGET
# defines GEMLET_HAVE_<NAME>=1 (PUBLIC), includes HEADER's folder and links LIBRARY (PRIVATE)
# and the result is TRUE in GEMLET_HAVE_<NAME> (parent scope); otherwise it is FALSE. In the
# Arm64 cross build the multiarch headers under /usr/include come after the compiler's own
# (GEMLET_CROSS_AFTER_INCLUDES, cmake/toolchain-aarch64.cmake), so that folder is not added.
function(gemlet_optional_library target name header library)
  find_path(GEMLET_${name}_INCLUDE ${header})
  find_library(GEMLET_${name}_LIB ${library})
  if(GEMLET_${name}_INCLUDE AND GEMLET_${name}_LIB)
    target_compile_definitions(${target} PUBLIC GEMLET_HAVE_${name}=1)
    if(NOT GEMLET_${name}_INCLUDE IN_LIST GEMLET_CROSS_AFTER_INCLUDES)
      target_include_directories(${target} PRIVATE ${GEMLET_${name}_INCLUDE})
    endif()
    target_link_libraries(${target} PRIVATE ${GEMLET_${name}_LIB})
    set(GEMLET_HAVE_${name} TRUE PARENT_SCOPE)
  else()
    set(GEMLET_HAVE_${name} FALSE PARENT_SCOPE)
  endif()
endfunction()

# ctest -j starts the tests in decreasing COST, which it takes from the previous run's times;
# a fresh CI clone has none and would start them in declaration order, leaving the longest
# ones to run alone at the end. gemlet_test_cost(NAME) gives the long tests a COST from this
# table (seconds, roughly, in the ASan stage; the 131,072-token oracle, which runs in the
# release stage alone, ranks first there), so that they start first. gemlet_test_cost(NAME
# KEY) takes KEY's entry (the shards of gemlet_integration share one).
set(GEMLET_TEST_COSTS gemlet_oracle_long_128k=400 gemlet_server_e2e=300 gemlet_cli=150
    gemlet_integration=130 gemlet_runtime=90 gemlet_kernels=55 gemlet_server_vision=60
    gemlet_format=30 gemlet_ops=25 gemlet_convert=20 gemlet_speculative_identity=20)
function(gemlet_test_cost name)
  set(_key ${name})
  if(ARGC GREATER 1)
    set(_key ${ARGV1})
  endif()
  foreach(_entry ${GEMLET_TEST_COSTS})
    if(_entry MATCHES "^${_key}=([0-9]+)$")
      set_tests_properties(${name} PROPERTIES COST ${CMAKE_MATCH_1})
    endif()
  endforeach()
endfunction()

# gemlet_sharded_test(NAME SHARDS TIMEOUT COMMAND...): registers COMMAND (a gtest binary and
# its arguments) as SHARDS ctest tests NAME_1ofN ... NAME_NofN, using gtest's sharding (test i
# of the filtered list runs in shard i mod N), so that ctest -j spreads a long binary over the
# cores instead of leaving it to run alone at the end. Each shard is its own process: the tests
# must not share files by fixed names (they use per-pid scratch folders). Every shard takes
# NAME's GEMLET_TEST_COSTS entry.
function(gemlet_sharded_test name shards timeout)
  math(EXPR _last "${shards} - 1")
  foreach(_i RANGE ${_last})
    math(EXPR _n "${_i} + 1")
    set(_test ${name}_${_n}of${shards})
    add_test(NAME ${_test} COMMAND ${ARGN})
    set_tests_properties(${_test} PROPERTIES TIMEOUT ${timeout}
      ENVIRONMENT "GTEST_TOTAL_SHARDS=${shards};GTEST_SHARD_INDEX=${_i}")
    gemlet_test_cost(${_test} ${name})
  endforeach()
endfunction()

# gemlet_tests(NAME LIBS...): a test binary NAME_tests from the *_test.cc files here.
function(gemlet_tests name)
  if(NOT GEMLET_TESTS)
    return()
  endif()
  file(GLOB _tests CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*_test.cc)
  if(_tests)
    add_executable(${name}_tests ${_tests})
    gemlet_test_compile_setup(${name}_tests)
    target_link_libraries(${name}_tests PRIVATE ${ARGN} GTest::gtest GTest::gtest_main)
    target_compile_definitions(${name}_tests PRIVATE
      GEMLET_SHARED_DIR="${GEMLET_SHARED_DIR}"
      GEMLET_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
      GEMLET_BINARY_DIR="${PROJECT_BINARY_DIR}")
    add_test(NAME ${name} COMMAND ${name}_tests)
    set_tests_properties(${name} PROPERTIES TIMEOUT 900)
    gemlet_test_cost(${name})
  endif()
endfunction()

# Build time of the test binaries (they are most of the build: CI builds three times).
# GEMLET_TEST_OPT: the optimization level of the test code itself (the libraries under test
# keep the build type's); -O1 compiles the template-heavy GoogleTest and nlohmann-json code
# about a third faster than -O3. GEMLET_PCH: one precompiled header of the third-party
# headers, shared by every test binary. It carries no test-specific macros (clang refuses a
# PCH whose macros differ from the command line's), and it is built by a small executable so
# that its code model (-fPIE) is the test binaries' own. GEMLET_TEST_UNITY: the test files of
# a binary are compiled GEMLET_TEST_UNITY at a time as one unit (CMake's unity build), which
# parses and instantiates the GoogleTest and JSON templates once per unit instead of once per
# file: about 2.5x less compile time for the tests. Each test file's helpers live in a
# namespace named after the file (`namespace safetensors_test {`), not an anonymous one, so
# that files compiled together cannot collide.
if(CMAKE_BUILD_TYPE STREQUAL "Release" AND NOT GEMLET_SANITIZE AND NOT GEMLET_FUZZ)
  set(GEMLET_TEST_OPT "-O1" CACHE STRING "optimization flags of test code (empty: the build type's)")
else()
  set(GEMLET_TEST_OPT "" CACHE STRING "optimization flags of test code (empty: the build type's)")
endif()
set(GEMLET_TEST_UNITY "6" CACHE STRING "unity build of the test binaries: test files per compiled unit (empty: one unit per file)")
option(GEMLET_PCH "precompile the third-party headers (tests, and the JSON-using libraries)" ON)

function(gemlet_test_compile_setup target)
  # Every test process writes in a scratch folder of its own, removed at exit
  # (tests/support/test_tmpdir.cc).
  set(_tmpdir ${PROJECT_SOURCE_DIR}/tests/support/test_tmpdir.cc)
  target_sources(${target} PRIVATE ${_tmpdir})
  set_source_files_properties(${_tmpdir} PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
  gemlet_unity(${target} "${GEMLET_TEST_UNITY}")
  if(GEMLET_TEST_OPT)
    separate_arguments(_opt UNIX_COMMAND "${GEMLET_TEST_OPT}")
    target_compile_options(${target} PRIVATE ${_opt})
  endif()
  if(NOT GEMLET_PCH)
    return()
  endif()
  if(NOT TARGET gemlet_test_pch)
    file(WRITE ${PROJECT_BINARY_DIR}/gemlet_test_pch.cc "")
    add_executable(gemlet_test_pch ${PROJECT_BINARY_DIR}/gemlet_test_pch.cc)
    target_link_libraries(gemlet_test_pch PRIVATE GTest::gtest GTest::gtest_main nlohmann_json::nlohmann_json)
    if(GEMLET_TEST_OPT)
      target_compile_options(gemlet_test_pch PRIVATE ${_opt})
    endif()
    target_precompile_headers(gemlet_test_pch PRIVATE
      <gtest/gtest.h> <nlohmann/json.hpp>
      <algorithm> <cmath> <cstdint> <cstring> <filesystem> <fstream> <functional> <map>
      <memory> <random> <sstream> <string> <string_view> <thread> <tuple> <vector>)
  endif()
  target_precompile_headers(${target} REUSE_FROM gemlet_test_pch)
endfunction()

# gemlet_use_json_pch(TARGET): the libraries that parse or write JSON (format, runtime,
# convert, server) share one precompiled nlohmann/json.hpp (it is most of their compile time).
# The holder is a static library, so that its code model (-fPIC) is theirs.
function(gemlet_use_json_pch target)
  if(NOT GEMLET_PCH)
    return()
  endif()
  # A PCH must be built with its users' optimization level (clang refuses it otherwise):
  # the libraries that gemlet_hot_code() raised get a holder of their own.
  get_target_property(_hot ${target} GEMLET_HOT)
  if(_hot)
    set(_holder gemlet_json_pch_hot)
  else()
    set(_holder gemlet_json_pch)
  endif()
  if(NOT TARGET ${_holder})
    file(WRITE ${PROJECT_BINARY_DIR}/${_holder}.cc "")
    add_library(${_holder} STATIC ${PROJECT_BINARY_DIR}/${_holder}.cc)
    target_link_libraries(${_holder} PRIVATE nlohmann_json::nlohmann_json)
    if(_hot)
      gemlet_hot_code(${_holder})
    endif()
    target_precompile_headers(${_holder} PRIVATE <nlohmann/json.hpp>
      <algorithm> <cstdint> <cstring> <functional> <map> <memory> <string> <string_view> <vector>)
  endif()
  target_precompile_headers(${target} REUSE_FROM ${_holder})
endfunction()

# gemlet_unity(TARGET): TARGET's files are compiled GEMLET_UNITY at a time as one unit (CMake's
# unity build). For the libraries of parsing and plumbing (format, grammar, text, and the
# tools: server, convert, hub, the CLI), whose files each spend most of their compile time in
# the same headers (nlohmann/json, cpp-httplib, the runtime's): about half their compile time,
# which CI pays three times. A file with compile options of its own (e.g. -ffp-contract=off)
# stays out of the units (CMake does that). Not for the libraries that run the model (ops,
# model, runtime, kernels): across files in one unit the compiler may inline and contract
# floating point differently, and their bit-for-bit tests compare code paths. Files of one
# unit share a scope: file-local helpers need names of their own (the CLI's command files use
# a namespace per file).
# gemlet_unity(TARGET SIZE) takes SIZE files to a unit instead (the test binaries:
# GEMLET_TEST_UNITY); an empty size leaves TARGET one file per unit.
set(GEMLET_UNITY "8" CACHE STRING "unity build of the parsing and tool libraries: files per compiled unit (empty: one unit per file)")
function(gemlet_unity target)
  set(_size "${GEMLET_UNITY}")
  if(ARGC GREATER 1)
    set(_size "${ARGV1}")
  endif()
  if(_size)
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE ${_size})
  endif()
endfunction()

# gemlet_hot_code(TARGET): GEMLET_HOT_OPT, when set, overrides the optimization level of the
# libraries that run the model (base, format, kernels, ops, model, runtime). The ASan build
# compiles everything else at -O0 (fast to build) and these at -O1, so the tests that run
# the model, tokenizer and sampler many times stay quick under the sanitizers.
set(GEMLET_HOT_OPT "" CACHE STRING "optimization flags of the compute libraries (empty: the build type's)")
function(gemlet_hot_code target)
  if(GEMLET_HOT_OPT)
    set_property(TARGET ${target} PROPERTY GEMLET_HOT ON)
    separate_arguments(_opt UNIX_COMMAND "${GEMLET_HOT_OPT}")
    target_compile_options(${target} PRIVATE ${_opt})
  endif()
endfunction()
