# Abseil, linked statically into everything built here, libccltune.so first: a training container rarely
# has Debian's libabsl_*.so.20220623, and another Abseil in the same process (PyTorch, TensorFlow and gRPC
# bring their own) must not be bound to ours. libccltune.so links with -Wl,--exclude-libs,ALL, so the
# archives' symbols stay hidden inside it (tests/install checks ldd, readelf -d and nm -D).
#
# The archives are Debian's own Abseil (the installed libabsl-dev's source package) built with -fPIC
# into .deps/absl-pic by scripts/build-absl.sh (install-deps.sh runs it): Debian's packaged static
# archives are built for executables and cannot go into a shared object. CCLTUNE_STATIC_ABSEIL=OFF
# links Debian's shared libraries instead (libccltune.so then needs them at run time).
option(CCLTUNE_STATIC_ABSEIL "Link Abseil statically (PIC archives from scripts/build-absl.sh)" ON)
set(CCLTUNE_ABSL_PIC_DIR "${PROJECT_SOURCE_DIR}/.deps/absl-pic" CACHE PATH
    "Prefix of the PIC static Abseil built by scripts/build-absl.sh")
if(CCLTUNE_STATIC_ABSEIL)
  if(NOT EXISTS "${CCLTUNE_ABSL_PIC_DIR}/lib/cmake/absl/abslConfig.cmake")
    message(FATAL_ERROR "No static PIC Abseil in ${CCLTUNE_ABSL_PIC_DIR}: run scripts/install-deps.sh (or "
                        "scripts/build-absl.sh), or configure with -DCCLTUNE_STATIC_ABSEIL=OFF")
  endif()
  set(absl_DIR "${CCLTUNE_ABSL_PIC_DIR}/lib/cmake/absl" CACHE PATH "" FORCE)
  find_package(absl REQUIRED CONFIG NO_DEFAULT_PATH PATHS "${CCLTUNE_ABSL_PIC_DIR}")
  get_target_property(_ccltune_absl_type absl::strings TYPE)
  if(NOT _ccltune_absl_type STREQUAL "STATIC_LIBRARY")
    message(FATAL_ERROR "absl::strings from ${absl_DIR} is a ${_ccltune_absl_type}, not a static library")
  endif()
else()
  find_package(absl REQUIRED)
endif()
