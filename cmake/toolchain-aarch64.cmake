# Cross-compiling for Arm64 Linux with Debian's gcc (g++-aarch64-linux-gnu); tests run under
# qemu-user (qemu-aarch64). Usage:
#   cmake -S . -B build-arm -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-aarch64.cmake -DGEMLET_BENCH=OFF
#   cmake --build build-arm --target gemlet_kernels_tests
#   qemu-aarch64 -L / -cpu cortex-a72 build-arm/src/kernels/gemlet_kernels_tests
# (cortex-a72: plain NEON; cortex-a76: + dotprod; max: + i8mm). ctest uses the emulator below,
# at -cpu max; set GEMLET_QEMU_CPU to choose another CPU model. For these three models the
# emulator also sets GEMLET_EXPECT_CPU_TIER in the guest (qemu -E), which the CPU feature and
# kernel dispatch tests assert (base/cpu_features_test.cc, kernels/kernels_test.cc).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
# Debian's multiarch Arm64 packages (scripts/deps.sh: libpng-dev:arm64, libsndfile1-dev:arm64,
# libcpp-httplib-dev:arm64, ...)
# put their libraries in /usr/lib/aarch64-linux-gnu and share /usr/include with the host's. The
# libraries are found through the root "/" and the library architecture; their headers come
# after the cross compiler's own (-idirafter), so that the C library's headers stay the
# sysroot's, and the find_path results under /usr/include are not added as -I
# (GEMLET_CROSS_AFTER_INCLUDES, see gemlet_optional_library in cmake/gemlet.cmake).
# At run time the guest runs on the same multiarch packages (qemu -L /): Debian's Arm64 loader
# /lib/ld-linux-aarch64.so.1 (libc6:arm64) searches /usr/lib/aarch64-linux-gnu by itself. The
# cross toolchain's own runtime (/usr/aarch64-linux-gnu/lib) is not used at run time: its
# loader is an older glibc build than the libc.so.6 that the packages bring, and a guest that
# mixes the two hangs in its first pthread_create.
list(APPEND CMAKE_FIND_ROOT_PATH /)
# pkg-config (cpp-httplib) reads the Arm64 packages' .pc files, not the host's.
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(GEMLET_CROSS_AFTER_INCLUDES /usr/include/aarch64-linux-gnu /usr/include)
foreach(_dir ${GEMLET_CROSS_AFTER_INCLUDES})
  string(APPEND CMAKE_C_FLAGS_INIT " -idirafter ${_dir}")
  string(APPEND CMAKE_CXX_FLAGS_INIT " -idirafter ${_dir}")
endforeach()
# Packages: header-only ones (nlohmann_json) from the host; GoogleTest built from source.
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
set(GTest_DIR ${CMAKE_CURRENT_LIST_DIR}/cross-gtest CACHE PATH "GTest built from /usr/src/googletest")

if(DEFINED ENV{GEMLET_QEMU_CPU})
  set(_gemlet_qemu_cpu $ENV{GEMLET_QEMU_CPU})
else()
  set(_gemlet_qemu_cpu max)
endif()
set(_gemlet_qemu_tier_cortex-a72 neon)
set(_gemlet_qemu_tier_cortex-a76 dotprod)
set(_gemlet_qemu_tier_max i8mm)
set(_gemlet_qemu_env)
if(DEFINED _gemlet_qemu_tier_${_gemlet_qemu_cpu})
  set(_gemlet_qemu_env -E;GEMLET_EXPECT_CPU_TIER=${_gemlet_qemu_tier_${_gemlet_qemu_cpu}})
endif()
set(CMAKE_CROSSCOMPILING_EMULATOR
    qemu-aarch64;-L;/;-cpu;${_gemlet_qemu_cpu};${_gemlet_qemu_env})
