# SPDX-License-Identifier: MIT
# The libpq adapter, libfut_pq (include/fut/pq.h, src/adapters/pq/,
# docs/ecosystem.md "libpq"): a library of its own beside libfut, with its
# own pkg-config file (fut-pq.pc), so that a program using no adapter
# links no libpq. Built when pkg-config finds libpq:
#   FUT_PQ=AUTO  (default) build it when libpq is found, say so if not
#   FUT_PQ=ON    libpq required
#   FUT_PQ=OFF   never
# Sets FUT_HAVE_PQ (test/pq.cmake and examples/ use it) and appends the
# adapter's objects to FUT_ADAPTER_OBJECTS (check_layers).
set(FUT_PQ AUTO CACHE STRING "libpq adapter (libfut_pq): AUTO (when pkg-config finds libpq), ON (required), OFF")
set_property(CACHE FUT_PQ PROPERTY STRINGS AUTO ON OFF)

set(FUT_HAVE_PQ OFF)
if(NOT FUT_PQ STREQUAL "OFF")
  find_package(PkgConfig QUIET)
  if(PKG_CONFIG_FOUND)
    pkg_check_modules(LIBPQ QUIET IMPORTED_TARGET libpq)
  endif()
  if(LIBPQ_FOUND)
    set(FUT_HAVE_PQ ON)
  elseif(FUT_PQ STREQUAL "ON")
    message(FATAL_ERROR "FUT_PQ=ON but pkg-config finds no libpq (Debian: apt-get install libpq-dev)")
  endif()
endif()
if(NOT FUT_HAVE_PQ)
  message(STATUS "fut: libpq adapter OFF (FUT_PQ=${FUT_PQ}; needs libpq through pkg-config, Debian: apt-get install libpq-dev)")
  return()
endif()
message(STATUS "fut: libpq adapter ON (libfut_pq, libpq ${LIBPQ_VERSION}; FUT_PQ=${FUT_PQ})")

add_library(fut_pq_obj OBJECT src/adapters/pq/pq.c src/adapters/pq/connect.c
  src/adapters/pq/listen.c src/adapters/pq/fiber.c)
set_target_properties(fut_pq_obj PROPERTIES
  POSITION_INDEPENDENT_CODE ON
  C_VISIBILITY_PRESET hidden)
target_include_directories(fut_pq_obj
  PUBLIC $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
  PRIVATE ${LIBPQ_INCLUDE_DIRS})
target_compile_definitions(fut_pq_obj PRIVATE _GNU_SOURCE FUT_BUILDING_SHARED)
target_compile_options(fut_pq_obj PRIVATE $<$<COMPILE_LANGUAGE:C>:${FUT_WARNINGS}>)
if(FUT_DEBUG_CHECKS OR CMAKE_BUILD_TYPE STREQUAL "Debug")
  target_compile_definitions(fut_pq_obj PRIVATE FUT_DEBUG)
endif()
list(APPEND FUT_ADAPTER_OBJECTS $<TARGET_OBJECTS:fut_pq_obj>)

add_library(fut_pq SHARED $<TARGET_OBJECTS:fut_pq_obj>)
set_target_properties(fut_pq PROPERTIES
  VERSION ${PROJECT_VERSION} SOVERSION ${FUT_SOVERSION}
  C_VISIBILITY_PRESET hidden)
target_link_options(fut_pq PRIVATE "-Wl,--version-script=${PROJECT_SOURCE_DIR}/src/adapters/pq/libfut_pq.map")
set_property(TARGET fut_pq APPEND PROPERTY LINK_DEPENDS ${PROJECT_SOURCE_DIR}/src/adapters/pq/libfut_pq.map)
target_include_directories(fut_pq PUBLIC
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
  $<BUILD_INTERFACE:${LIBPQ_INCLUDE_DIRS}>
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
target_link_libraries(fut_pq PUBLIC fut Threads::Threads
  $<BUILD_INTERFACE:${LIBPQ_LINK_LIBRARIES}> $<INSTALL_INTERFACE:pq>)

add_library(fut_pq_static STATIC $<TARGET_OBJECTS:fut_pq_obj>)
set_target_properties(fut_pq_static PROPERTIES OUTPUT_NAME fut_pq)
target_include_directories(fut_pq_static PUBLIC
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
  $<BUILD_INTERFACE:${LIBPQ_INCLUDE_DIRS}>
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
# An installed libfut_pq.a needs -lpq at the consumer's link.
target_link_libraries(fut_pq_static PUBLIC fut_static Threads::Threads
  $<BUILD_INTERFACE:${LIBPQ_LINK_LIBRARIES}> $<INSTALL_INTERFACE:pq>)

add_library(fut::fut_pq ALIAS fut_pq)
add_library(fut::fut_pq_static ALIAS fut_pq_static)

# The header goes with the library (the top CMakeLists.txt leaves it out
# of include/'s install).
install(FILES include/fut/pq.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/fut)
install(TARGETS fut_pq fut_pq_static EXPORT futTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
configure_file(cmake/fut-pq.pc.in ${PROJECT_BINARY_DIR}/fut-pq.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/fut-pq.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
