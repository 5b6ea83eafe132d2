# gemlet_layer(NAME DEPS...): one static library per layer from the *.cc files of the current
# directory (tests, benchmarks and fuzz targets excluded), and one GoogleTest binary from its
# *_test.cc files. A layer links only the layers below it, so a wrong include fails to link.
function(gemlet_layer name)
  file(GLOB _srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*.cc)
  list(FILTER _srcs EXCLUDE REGEX "_(test|bench|fuzz)\\.cc$")
  if(NOT _srcs)  # a layer still being written: keep the build graph whole
    file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/${name}_empty.cc "")
    set(_srcs ${CMAKE_CURRENT_BINARY_DIR}/${name}_empty.cc)
  endif()
  add_library(${name} STATIC ${_srcs})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR})
  target_link_libraries(${name} PUBLIC ${ARGN})
  gemlet_tests(${name} ${name})
  file(GLOB _benches CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*_bench.cc)
  if(GEMLET_BENCH AND _benches)
    add_executable(${name}_bench ${_benches})
    target_link_libraries(${name}_bench PRIVATE ${name} benchmark::benchmark)
    target_compile_definitions(${name}_bench PRIVATE GEMLET_SHARED_DIR="${GEMLET_SHARED_DIR}")
  endif()
endfunction()

# gemlet_tests(NAME LIBS...): a test binary NAME_tests from the *_test.cc files here.
function(gemlet_tests name)
  if(NOT GEMLET_TESTS)
    return()
  endif()
  file(GLOB _tests CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/*_test.cc)
  if(_tests)
    add_executable(${name}_tests ${_tests})
    target_link_libraries(${name}_tests PRIVATE ${ARGN} GTest::gtest GTest::gtest_main)
    target_compile_definitions(${name}_tests PRIVATE
      GEMLET_SHARED_DIR="${GEMLET_SHARED_DIR}"
      GEMLET_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
      GEMLET_BINARY_DIR="${PROJECT_BINARY_DIR}")
    add_test(NAME ${name} COMMAND ${name}_tests)
    set_tests_properties(${name} PROPERTIES TIMEOUT 900)
  endif()
endfunction()
