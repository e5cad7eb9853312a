# SPDX-License-Identifier: MIT
# libfut-hiredis (include/fut/hiredis.h, src/adapters/hiredis/): the
# hiredis adapter, a library of its own (shared and static, as libfut)
# with its own pkg-config file fut-hiredis.pc, built only when pkg-config
# finds hiredis. FUT_HIREDIS=AUTO (build it when hiredis is found, say so
# when not), ON (required), OFF. The rest of fut builds without it.
set(FUT_HIREDIS AUTO CACHE STRING
  "The hiredis adapter libfut-hiredis: AUTO (when pkg-config finds hiredis), ON (required), OFF")
set_property(CACHE FUT_HIREDIS PROPERTY STRINGS AUTO ON OFF)

set(FUT_HAVE_HIREDIS OFF)
if(NOT FUT_HIREDIS STREQUAL "OFF")
  find_package(PkgConfig QUIET)
  if(PKG_CONFIG_FOUND)
    pkg_check_modules(HIREDIS QUIET IMPORTED_TARGET hiredis)
  endif()
  if(HIREDIS_FOUND)
    set(FUT_HAVE_HIREDIS ON)
  elseif(FUT_HIREDIS STREQUAL "ON")
    message(FATAL_ERROR "FUT_HIREDIS=ON but pkg-config finds no hiredis (Debian: apt-get install libhiredis-dev)")
  endif()
endif()
if(FUT_HAVE_HIREDIS)
  message(STATUS "fut: hiredis adapter ON (hiredis ${HIREDIS_VERSION}; FUT_HIREDIS=${FUT_HIREDIS})")
else()
  message(STATUS "fut: hiredis adapter OFF (FUT_HIREDIS=${FUT_HIREDIS}; needs pkg-config hiredis: apt-get install libhiredis-dev)")
  # Not built, not installed: its header stays out of the install too.
  return()
endif()

set(FUT_HIREDIS_SOURCES src/adapters/hiredis/hiredis.c
  src/adapters/hiredis/fiber.c)
add_library(fut_hiredis_obj OBJECT ${FUT_HIREDIS_SOURCES})
set_target_properties(fut_hiredis_obj PROPERTIES
  POSITION_INDEPENDENT_CODE ON
  C_VISIBILITY_PRESET hidden)
target_include_directories(fut_hiredis_obj PRIVATE
  ${PROJECT_SOURCE_DIR}/include ${HIREDIS_INCLUDE_DIRS})
target_compile_definitions(fut_hiredis_obj PRIVATE _GNU_SOURCE FUT_BUILDING_SHARED)
target_compile_options(fut_hiredis_obj PRIVATE $<$<COMPILE_LANGUAGE:C>:${FUT_WARNINGS}>)
# check_layers (test/layers.cmake) reads the adapters' objects too.
list(APPEND FUT_ADAPTER_OBJECTS $<TARGET_OBJECTS:fut_hiredis_obj>)

add_library(fut_hiredis SHARED $<TARGET_OBJECTS:fut_hiredis_obj>)
set_target_properties(fut_hiredis PROPERTIES
  VERSION ${PROJECT_VERSION} SOVERSION ${FUT_SOVERSION}
  C_VISIBILITY_PRESET hidden)
target_include_directories(fut_hiredis PUBLIC
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
target_link_libraries(fut_hiredis PUBLIC fut Threads::Threads
  $<BUILD_INTERFACE:PkgConfig::HIREDIS> $<INSTALL_INTERFACE:hiredis>)

add_library(fut_hiredis_static STATIC $<TARGET_OBJECTS:fut_hiredis_obj>)
set_target_properties(fut_hiredis_static PROPERTIES OUTPUT_NAME fut_hiredis)
target_include_directories(fut_hiredis_static PUBLIC
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
# An installed libfut_hiredis.a needs -lhiredis at the consumer's link.
target_link_libraries(fut_hiredis_static PUBLIC fut_static Threads::Threads
  $<BUILD_INTERFACE:PkgConfig::HIREDIS> $<INSTALL_INTERFACE:hiredis>)

add_library(fut::fut_hiredis ALIAS fut_hiredis)
add_library(fut::fut_hiredis_static ALIAS fut_hiredis_static)

install(FILES include/fut/hiredis.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/fut)
install(TARGETS fut_hiredis fut_hiredis_static EXPORT futTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
configure_file(cmake/fut-hiredis.pc.in ${PROJECT_BINARY_DIR}/fut-hiredis.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/fut-hiredis.pc
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
