# Fully static tools (option HILO_STATIC_TOOLS).
#
# A dynamically linked hilo-opt maps libprotobuf, libstdc++, libc and libm,
# and the dynamic loader's relocation of their data touches pages of each:
# 7.7 MB of resident memory before a one-instruction module is read, all of
# it code and data pages (docs/performance.md, "tenth session"). Linked
# statically (non-PIE, no relocations at start-up) with --gc-sections
# (unreferenced sections dropped, so the code that does run sits closer
# together), the same run peaks at 4.1 MB. The archives come with the
# packages the build needs anyway: libc6-dev and libstdc++-12-dev (g++),
# libprotobuf.a (libprotobuf-dev), libz.a (zlib1g-dev, which libprotobuf-dev
# depends on), abseil's (cmake/StaticAbseil.cmake).
#
# Only the executables in tools/ are linked this way: tests and benchmarks
# stay dynamic (faster to link), the Python extension is a shared object,
# and the sanitizer runtimes are shared libraries (HILO_SANITIZE turns the
# option off).

# hilo_protobuf_static: libprotobuf's static archive, next to the shared
# library FindProtobuf found, with zlib (its gzip streams; `-lz`, which a
# static link resolves to libz.a: FindZLIB's target names the shared one).
function(hilo_add_static_protobuf)
  get_target_property(location protobuf::libprotobuf LOCATION)
  string(REGEX REPLACE "\\.so(\\.[0-9.]+)?$" ".a" archive "${location}")
  if(NOT EXISTS "${archive}")
    message(FATAL_ERROR "hilo: ${archive} (static libprotobuf) not found; "
                        "configure with -DHILO_STATIC_TOOLS=OFF to link the tools dynamically")
  endif()
  add_library(hilo_protobuf_static STATIC IMPORTED GLOBAL)
  get_target_property(includes protobuf::libprotobuf INTERFACE_INCLUDE_DIRECTORIES)
  set_target_properties(hilo_protobuf_static PROPERTIES
    IMPORTED_LOCATION "${archive}"
    INTERFACE_LINK_LIBRARIES "z;Threads::Threads")
  if(includes)
    set_target_properties(hilo_protobuf_static PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${includes}")
  endif()
endfunction()

# Links executable `target` fully static (when HILO_STATIC_TOOLS is on).
# Targets linking hilo_proto then get hilo_protobuf_static (see HILO_PROTOBUF).
function(hilo_link_static target)
  if(HILO_STATIC_TOOLS)
    set_target_properties(${target} PROPERTIES HILO_STATIC_LINK ON)
    target_link_options(${target} PRIVATE -static -Wl,--gc-sections
      -Wl,-T,${CMAKE_SOURCE_DIR}/cmake/lazy-proto-registration.ld)  # protobuf's start-up work on first use
    set_property(TARGET ${target} APPEND PROPERTY LINK_DEPENDS ${CMAKE_SOURCE_DIR}/cmake/lazy-proto-registration.ld)
    hilo_link_order(${target})  # HILO_LINK_ORDER (cmake/LinkOrder.cmake)
  endif()
endfunction()
