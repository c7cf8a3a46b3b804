# Install rules, the CMake package, pkg-config and the Debian package (CPack).
#
#   cmake --install build --prefix /opt/ccltune
#     lib/libccltune.so                    the preload / link library and NCCL tuner plugin
#     include/ccltune/ccltune.h            the public C API
#     bin/ccltune, bin/ccltune-bench       the command-line tool, the benchmark (when built)
#     lib/cmake/ccltune/                   find_package(ccltune) -> imported target ccltune::ccltune
#     lib/pkgconfig/ccltune.pc             pkg-config --cflags --libs ccltune
#   cpack --config build/CPackConfig.cmake -> ccltune_<version>_<arch>.deb (prefix /usr)
#
# libccltune.so needs nothing at run time beyond glibc (libstdc++ and libgcc are linked statically,
# Abseil too, all hidden), and resolves NCCL and the CUDA driver itself when it loads.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

target_include_directories(ccltune INTERFACE $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
                                             $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
install(TARGETS ccltune EXPORT ccltuneTargets LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT ccltune)
install(FILES ${PROJECT_SOURCE_DIR}/include/ccltune/ccltune.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/ccltune
        COMPONENT ccltune)
install(TARGETS ccltune-cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT ccltune)
if(TARGET ccltune-bench)
  install(TARGETS ccltune-bench RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} COMPONENT ccltune)
endif()

set(_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/ccltune)
install(EXPORT ccltuneTargets NAMESPACE ccltune:: DESTINATION ${_cmake_dir} COMPONENT ccltune)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/ccltuneConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/ccltuneConfig.cmake INSTALL_DESTINATION ${_cmake_dir})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/ccltuneConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/ccltuneConfig.cmake ${PROJECT_BINARY_DIR}/ccltuneConfigVersion.cmake
        DESTINATION ${_cmake_dir} COMPONENT ccltune)

# pkg-config: paths relative to the .pc file's prefix, so a package relocated by cpack or DESTDIR works.
file(RELATIVE_PATH CCLTUNE_PC_TO_PREFIX /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
configure_file(${PROJECT_SOURCE_DIR}/cmake/ccltune.pc.in ${PROJECT_BINARY_DIR}/ccltune.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/ccltune.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT ccltune)

# The Debian package. Dependencies are stated by hand: dpkg-shlibdeps would demand a Debian package for
# libnccl.so.2, which ccltune-bench links but the user provides (PyTorch's wheel, NVIDIA's packages), as
# ccltune does at run time. libccltune.so itself needs only libc6.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME ccltune)
set(CPACK_PACKAGE_VENDOR "ccltune")
set(CPACK_PACKAGE_CONTACT "ccltune developers <ccltune@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "online tuner for NCCL collectives (preload library, CLI, benchmark)")
set(CPACK_PACKAGE_DESCRIPTION
    "ccltune measures every NCCL collective as a job runs, searches per workload for a faster algorithm, "
    "protocol and channel count, and switches every rank to the winner at the same call. LD_PRELOAD "
    "libccltune.so; the ccltune tool reads and converts its exports.")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libc6 (>= 2.36), libstdc++6 (>= 12), libgcc-s1")
if(TARGET ccltune-bench)
  string(APPEND CPACK_DEBIAN_PACKAGE_DEPENDS ", libopenmpi3")
endif()
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "gnuplot-nox")
include(CPack)
