# SPDX-License-Identifier: MIT
# The API reference: doxygen over the public headers (docs/Doxyfile.in),
# HTML and man pages - one page per header and, through MAN_LINKS, one
# per function, macro and type (man 3 fut_spawn).
#
#   FUT_BUILD_DOCS  build it with 'all' (the 'docs' target) and install
#                   it: man3 pages under ${CMAKE_INSTALL_MANDIR}, HTML
#                   under ${CMAKE_INSTALL_DOCDIR}/html. Defaults ON when
#                   doxygen is found; ON without doxygen fails.
#
# Sets FUT_DOXY_WARN_AS_ERROR_STRICT for test/doxygen.cmake (the
# check_doxygen test, which needs DOXYGEN_FOUND as well).
find_package(Doxygen QUIET)

if(DOXYGEN_FOUND)
  set(fut_docs_default ON)
else()
  set(fut_docs_default OFF)
endif()
option(FUT_BUILD_DOCS "Build and install the API reference (HTML, man pages) with doxygen" ${fut_docs_default})

# FAIL_ON_WARNINGS (every warning printed, then a failing exit) came with
# doxygen 1.9.2; before it YES, which stops at the first warning.
if(DOXYGEN_FOUND AND DOXYGEN_VERSION VERSION_LESS 1.9.2)
  set(FUT_DOXY_WARN_AS_ERROR_STRICT YES)
else()
  set(FUT_DOXY_WARN_AS_ERROR_STRICT FAIL_ON_WARNINGS)
endif()

if(NOT DOXYGEN_FOUND)
  if(FUT_BUILD_DOCS)
    message(FATAL_ERROR "FUT_BUILD_DOCS=ON but doxygen is not found (Debian: apt-get install doxygen)")
  endif()
  message(STATUS "fut: doxygen not found: no API reference (no 'docs' target, no man pages installed, no check_doxygen test)")
  return()
endif()
message(STATUS "fut: API reference ${FUT_BUILD_DOCS} (FUT_BUILD_DOCS; doxygen ${DOXYGEN_VERSION})")
if(NOT FUT_BUILD_DOCS)
  return()
endif()

# The docs target fails on a doxygen warning as the compiler's do: in a
# FUT_WERROR build. The check_doxygen test always does.
if(FUT_WERROR)
  set(FUT_DOXY_WARN_AS_ERROR ${FUT_DOXY_WARN_AS_ERROR_STRICT})
else()
  set(FUT_DOXY_WARN_AS_ERROR NO)
endif()
set(FUT_DOXY_OUTPUT ${PROJECT_BINARY_DIR}/docs)
configure_file(${PROJECT_SOURCE_DIR}/docs/Doxyfile.in
  ${FUT_DOXY_OUTPUT}/Doxyfile @ONLY)

file(GLOB fut_doc_headers CONFIGURE_DEPENDS
  ${PROJECT_SOURCE_DIR}/include/fut.h ${PROJECT_SOURCE_DIR}/include/fut/*.h)
# The old output goes first: doxygen does not remove the page of a name
# that no longer exists.
add_custom_command(OUTPUT ${FUT_DOXY_OUTPUT}/docs.stamp
  COMMAND ${CMAKE_COMMAND} -E rm -rf ${FUT_DOXY_OUTPUT}/html ${FUT_DOXY_OUTPUT}/man
  COMMAND Doxygen::doxygen ${FUT_DOXY_OUTPUT}/Doxyfile
  COMMAND ${CMAKE_COMMAND} -E touch ${FUT_DOXY_OUTPUT}/docs.stamp
  DEPENDS ${fut_doc_headers} ${FUT_DOXY_OUTPUT}/Doxyfile
  WORKING_DIRECTORY ${FUT_DOXY_OUTPUT}
  COMMENT "Generating the API reference (doxygen: HTML, man pages)"
  VERBATIM)
add_custom_target(docs ALL DEPENDS ${FUT_DOXY_OUTPUT}/docs.stamp)

# man3: the pages of fut's names and of the headers (the targets of the
# '.so' link pages). MAN_LINKS also writes a link page per struct member
# (base.3, result.3, ...): those are not installed, as they would claim
# common names in man3; a struct's page lists its members.
install(DIRECTORY ${FUT_DOXY_OUTPUT}/man/man3/
  DESTINATION ${CMAKE_INSTALL_MANDIR}/man3
  FILES_MATCHING PATTERN "fut_*.3" PATTERN "FUT_*.3" PATTERN "*.h.3")
install(DIRECTORY ${FUT_DOXY_OUTPUT}/html/
  DESTINATION ${CMAKE_INSTALL_DOCDIR}/html)
