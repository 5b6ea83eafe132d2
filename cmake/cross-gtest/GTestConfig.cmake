# GTest for cross builds (cmake/toolchain-aarch64.cmake points GTest_DIR here): Debian ships
# GoogleTest as source (package googletest, /usr/src/googletest), so build it for the target
# architecture instead of linking the host's libgtest.
if(NOT TARGET gtest)
  set(BUILD_GMOCK OFF CACHE BOOL "" FORCE)
  set(INSTALL_GTEST OFF CACHE BOOL "" FORCE)
  add_subdirectory(/usr/src/googletest ${CMAKE_BINARY_DIR}/_googletest EXCLUDE_FROM_ALL)
endif()
if(NOT TARGET GTest::gtest)  # googletest ≥ 1.11 defines these aliases itself
  add_library(GTest::gtest ALIAS gtest)
  add_library(GTest::gtest_main ALIAS gtest_main)
endif()
set(GTest_FOUND TRUE)
