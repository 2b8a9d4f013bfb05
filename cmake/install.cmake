# install.cmake - `cmake --install` rules, included by the top-level
# CMakeLists.txt.  Installs the public headers, libkatra.so and libkatra.a,
# the `katra` command, katra.pc and a CMake package (find_package(katra)
# gives katra::katra and katra::katra_static).
include(CMakePackageConfigHelpers)

set(KATRA_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/katra)

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/katra/
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/katra
  FILES_MATCHING PATTERN "*.h" PATTERN "*.hpp")

# Two export sets: the shared library needs nothing but Threads from its
# consumer, while the static archive carries its private dependencies as
# PkgConfig:: imported targets that katraConfig.cmake has to recreate.
install(TARGETS katra katra_cli EXPORT katraTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS katra_static EXPORT katraStaticTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT katraTargets NAMESPACE katra::
  FILE katraTargets.cmake DESTINATION ${KATRA_CMAKE_DIR})
install(EXPORT katraStaticTargets NAMESPACE katra::
  FILE katraStaticTargets.cmake DESTINATION ${KATRA_CMAKE_DIR})

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/katraConfig.cmake.in
  ${PROJECT_BINARY_DIR}/katraConfig.cmake
  INSTALL_DESTINATION ${KATRA_CMAKE_DIR})
# 0.x: a new minor version may break the API, so only the same minor matches.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/katraConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/katraConfig.cmake
  ${PROJECT_BINARY_DIR}/katraConfigVersion.cmake
  DESTINATION ${KATRA_CMAKE_DIR})

# katra.pc is relocatable: its prefix is found from its own location, so
# `cmake --install build --prefix DIR` works for any DIR.  An absolute
# CMAKE_INSTALL_LIBDIR or INCLUDEDIR is kept as given.
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(KATRA_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
  set(KATRA_PC_LIBDIR "${CMAKE_INSTALL_LIBDIR}")
else()
  file(RELATIVE_PATH _katra_up "/p/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/p")
  string(REGEX REPLACE "/$" "" _katra_up "${_katra_up}")
  set(KATRA_PC_PREFIX "\${pcfiledir}/${_katra_up}")
  set(KATRA_PC_LIBDIR "\${prefix}/${CMAKE_INSTALL_LIBDIR}")
  unset(_katra_up)
endif()
if(IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  set(KATRA_PC_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}")
else()
  set(KATRA_PC_INCLUDEDIR "\${prefix}/${CMAKE_INSTALL_INCLUDEDIR}")
endif()
configure_file(${PROJECT_SOURCE_DIR}/cmake/katra.pc.in
  ${PROJECT_BINARY_DIR}/katra.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/katra.pc
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
