# SPDX-License-Identifier: MIT
# The libcurl adapter, libfut_curl (include/fut/curl.h, src/adapters/curl/,
# docs/ecosystem.md): a library of its own beside libfut, with its own
# pkg-config file (fut-curl.pc), so that a program using no adapter links
# none of them - as libevent ships libevent_openssl apart from
# libevent_core. Built when pkg-config finds libcurl:
#   FUT_CURL=AUTO  (default) build it when libcurl is found, say so if not
#   FUT_CURL=ON    libcurl required
#   FUT_CURL=OFF   never
# Sets FUT_HAVE_CURL (test/curl.cmake registers its tests only then) and
# appends the adapter's objects to FUT_ADAPTER_OBJECTS (check_layers).
set(FUT_CURL AUTO CACHE STRING "libcurl adapter (libfut_curl): AUTO (when pkg-config finds libcurl), ON (required), OFF")
set_property(CACHE FUT_CURL PROPERTY STRINGS AUTO ON OFF)

set(FUT_HAVE_CURL OFF)
if(NOT FUT_CURL STREQUAL "OFF")
  find_package(PkgConfig QUIET)
  if(PKG_CONFIG_FOUND)
    pkg_check_modules(LIBCURL QUIET IMPORTED_TARGET libcurl)
  endif()
  if(LIBCURL_FOUND)
    set(FUT_HAVE_CURL ON)
  elseif(FUT_CURL STREQUAL "ON")
    message(FATAL_ERROR "FUT_CURL=ON but pkg-config finds no libcurl (Debian: apt-get install libcurl4-openssl-dev)")
  endif()
endif()
if(NOT FUT_HAVE_CURL)
  message(STATUS "fut: libcurl adapter OFF (FUT_CURL=${FUT_CURL}; needs libcurl through pkg-config, Debian: apt-get install libcurl4-openssl-dev)")
  # include/ is installed as a whole: take the adapter's header back out.
  install(CODE "file(REMOVE \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_INCLUDEDIR}/fut/curl.h\")")
  return()
endif()
message(STATUS "fut: libcurl adapter ON (libfut_curl, libcurl ${LIBCURL_VERSION}; FUT_CURL=${FUT_CURL})")

add_library(fut_curl_obj OBJECT src/adapters/curl/curl.c)
set_target_properties(fut_curl_obj PROPERTIES
  POSITION_INDEPENDENT_CODE ON
  C_VISIBILITY_PRESET hidden)
target_include_directories(fut_curl_obj
  PUBLIC $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
  PRIVATE ${LIBCURL_INCLUDE_DIRS})
target_compile_definitions(fut_curl_obj PRIVATE _GNU_SOURCE FUT_BUILDING_SHARED)
target_compile_options(fut_curl_obj PRIVATE $<$<COMPILE_LANGUAGE:C>:${FUT_WARNINGS}>)
if(FUT_DEBUG_CHECKS OR CMAKE_BUILD_TYPE STREQUAL "Debug")
  target_compile_definitions(fut_curl_obj PRIVATE FUT_DEBUG)
endif()
list(APPEND FUT_ADAPTER_OBJECTS $<TARGET_OBJECTS:fut_curl_obj>)

add_library(fut_curl SHARED $<TARGET_OBJECTS:fut_curl_obj>)
set_target_properties(fut_curl PROPERTIES
  VERSION ${PROJECT_VERSION} SOVERSION ${FUT_SOVERSION}
  C_VISIBILITY_PRESET hidden)
target_link_options(fut_curl PRIVATE "-Wl,--version-script=${PROJECT_SOURCE_DIR}/src/adapters/curl/libfut_curl.map")
set_property(TARGET fut_curl APPEND PROPERTY LINK_DEPENDS ${PROJECT_SOURCE_DIR}/src/adapters/curl/libfut_curl.map)
target_include_directories(fut_curl PUBLIC
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
  $<BUILD_INTERFACE:${LIBCURL_INCLUDE_DIRS}>
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
target_link_libraries(fut_curl PUBLIC fut
  $<BUILD_INTERFACE:${LIBCURL_LINK_LIBRARIES}> $<INSTALL_INTERFACE:curl>)

add_library(fut_curl_static STATIC $<TARGET_OBJECTS:fut_curl_obj>)
set_target_properties(fut_curl_static PROPERTIES OUTPUT_NAME fut_curl)
target_include_directories(fut_curl_static PUBLIC
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
  $<BUILD_INTERFACE:${LIBCURL_INCLUDE_DIRS}>
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
target_link_libraries(fut_curl_static PUBLIC fut_static
  $<BUILD_INTERFACE:${LIBCURL_LINK_LIBRARIES}> $<INSTALL_INTERFACE:curl>)

add_library(fut::fut_curl ALIAS fut_curl)
add_library(fut::fut_curl_static ALIAS fut_curl_static)

install(TARGETS fut_curl fut_curl_static EXPORT futTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
configure_file(cmake/fut-curl.pc.in ${PROJECT_BINARY_DIR}/fut-curl.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/fut-curl.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
