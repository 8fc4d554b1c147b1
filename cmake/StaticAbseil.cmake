# Static copies of Debian's abseil targets.
#
# Debian's abseil CMake package imports only the shared libraries: a tool
# linked against them loads 28 abseil libraries at start-up, about 2.5 ms of
# the 5 ms hilo-opt took on an empty module. The same package ships the
# static archives (built position-independent, so they link into our PIE
# executables), and this file mirrors each imported abseil target as
# `hilo_absl_static::<name>`: an imported static library on the archive next
# to the shared one, with the same include directories and dependencies
# (mirrored in turn), so CMake orders the archives as it orders any static
# libraries.

# Sets `out_var` to the mirror of abseil target `target`, creating it (and
# the mirrors of its dependencies) on first use.
function(hilo_mirror_absl_target target out_var)
  string(REPLACE "absl::" "hilo_absl_static::" mirror "${target}")
  set(${out_var} ${mirror} PARENT_SCOPE)
  if(TARGET ${mirror})
    return()
  endif()
  if(NOT TARGET ${target})
    message(FATAL_ERROR "hilo: abseil target ${target} not found")
  endif()

  set(mirrored_deps)
  get_target_property(deps ${target} INTERFACE_LINK_LIBRARIES)
  if(deps)
    foreach(dep IN LISTS deps)
      if(dep MATCHES "^absl::")
        hilo_mirror_absl_target(${dep} dep_mirror)
        list(APPEND mirrored_deps ${dep_mirror})
      else()
        list(APPEND mirrored_deps "${dep}")  # -latomic, Threads::Threads, flags
      endif()
    endforeach()
  endif()

  get_target_property(type ${target} TYPE)
  if(type STREQUAL "SHARED_LIBRARY")
    get_target_property(location ${target} LOCATION)
    string(REGEX REPLACE "\\.so(\\.[0-9.]+)?$" ".a" archive "${location}")
    if(NOT EXISTS "${archive}")
      message(FATAL_ERROR "hilo: ${archive} (static ${target}) not found; "
                          "configure with -DHILO_STATIC_ABSEIL=OFF to use the shared libraries")
    endif()
    add_library(${mirror} STATIC IMPORTED)
    set_target_properties(${mirror} PROPERTIES IMPORTED_LOCATION "${archive}")
  else()
    add_library(${mirror} INTERFACE IMPORTED)
  endif()
  get_target_property(includes ${target} INTERFACE_INCLUDE_DIRECTORIES)
  if(includes)
    set_target_properties(${mirror} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${includes}")
  endif()
  set_target_properties(${mirror} PROPERTIES INTERFACE_LINK_LIBRARIES "${mirrored_deps}")
endfunction()

# Sets `out_var` to the static mirrors of the abseil targets given after it.
# A target that is linked with property HILO_SHARED_ABSEIL set gets the
# shared libraries instead (the Python extension: a shared object can not
# hold the archives, whose thread-locals use the executable-only TLS model).
function(hilo_static_absl out_var)
  set(mirrors)
  foreach(target IN LISTS ARGN)
    hilo_mirror_absl_target(${target} mirror)
    list(APPEND mirrors "$<IF:$<BOOL:$<TARGET_PROPERTY:HILO_SHARED_ABSEIL>>,${target},${mirror}>")
  endforeach()
  set(${out_var} ${mirrors} PARENT_SCOPE)
endfunction()
