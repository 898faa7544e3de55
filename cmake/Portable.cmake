# SPDX-License-Identifier: MIT
# HALO_PORTABLE=ON (scripts/release.sh): one binary for every glibc >= 2.34 distribution (RHEL and
# Rocky 9, Ubuntu 22.04 and 24.04, Debian 12, Fedora, Arch). libstdc++ and libgcc are linked
# statically, and so is every library Debian 12 ships a static archive of; fmt and spdlog (shared
# only in Debian) are compiled in through their header-only modes. libdrm, ROCr and libkmod stay
# dlopen()ed (checks/gpus/libdrm.cpp, checks/runtime/hsa_child.cpp, checks/kernel_args/module_file.cpp), so the binary's
# NEEDED entries are glibc's alone (tests/cli/release.sh checks readelf -d and objdump -T).
#
# Sets the HALO_LIB_* variables CMakeLists.txt links with.

# A static archive by file name, REQUIRED: a release build that silently fell back to a shared
# library would not be portable.
function(halo_static_archive var file)
  find_library(${var} NAMES ${file} NO_CACHE REQUIRED)
  set(${var} ${${var}} PARENT_SCOPE)
endfunction()

foreach(lib re2 yaml-cpp archive nettle acl lzma zstd lz4 bz2 z elf)
  string(MAKE_C_IDENTIFIER "HALO_A_${lib}" var)
  halo_static_archive(${var} lib${lib}.a)
endforeach()

# fmt and spdlog: the header-only modes (FMT_HEADER_ONLY; spdlog without SPDLOG_COMPILED_LIB).
# spdlog's header-only target links fmt::fmt, the shared library: point it at fmt's header-only one.
set_property(TARGET spdlog::spdlog_header_only PROPERTY INTERFACE_LINK_LIBRARIES
             Threads::Threads fmt::fmt-header-only)
set(HALO_LIB_FMT fmt::fmt-header-only)
set(HALO_LIB_SPDLOG spdlog::spdlog_header_only)
set(HALO_LIB_PUGIXML pugixml::static)
set(HALO_LIB_RE2 ${HALO_A_re2} Threads::Threads)
set(HALO_LIB_YAML ${HALO_A_yaml_cpp})
# nettle (the rule set's SHA-256, src/rules/loader.cpp) is the library libarchive already links.
set(HALO_LIB_CRYPTO ${HALO_A_nettle})
# libarchive.a and what the doctor's readers and writer call: the tar.gz capture (pax writer, gzip)
# and its extraction (tar; gzip, xz, zstd, bzip2), the initramfs's cpio (gzip, bzip2, lzma, xz,
# lz4, zstd). Only those formats and filters are named in the code (never *_all or *_by_name), so
# the linker takes only their members. The tar writers' one call into archive_write_set_format.o,
# whose table of every writer would bring in the xar writer and with it libxml2 and ICU (31 MB), is
# answered by src/portable/archive_compat.cpp; libxml2, ICU and OpenSSL are not on the link line,
# so a call that needed them fails the link instead of growing the binary (issue 46).
set(HALO_LIB_ARCHIVE ${HALO_A_archive} ${HALO_A_nettle} ${HALO_A_acl} ${HALO_A_lzma} ${HALO_A_zstd} ${HALO_A_lz4}
    ${HALO_A_bz2} ${HALO_A_z} ${CMAKE_DL_LIBS} m)
set(HALO_LIB_ELF ${HALO_A_elf} ${HALO_A_zstd} ${HALO_A_lzma} ${HALO_A_bz2} ${HALO_A_z})

add_link_options(-static-libstdc++ -static-libgcc)

# The size people download (issue 46: under 8 MB).
# -O2, as Debian and Fedora build their packages, not CMake's Release -O3: on the doctor's code -O3
# made 10 % more code (src/rules/policy.cpp: 226 KB of text at -O3, 205 KB at -O2) for a program
# whose time goes to reading files and parsing.
set(CMAKE_C_FLAGS_RELEASE "-O2 -DNDEBUG")
set(CMAKE_CXX_FLAGS_RELEASE "-O2 -DNDEBUG")
# Each function and object in its own section, and the sections nothing references dropped at the
# link: the header-only libraries (fmt, spdlog, CLI11, nlohmann-json) instantiate much the doctor
# never calls. The linker keeps whatever .init_array, the probe registrations and exported symbols
# reach. gold (binutils) also folds functions whose code is identical and whose address is not
# taken (--icf=safe): the many template instantiations that compile to the same bytes. Measured on
# the doctor's -O2 objects (compiled without -ffunction-sections) linked as this file links them,
# fmt and spdlog aside: 9.1 MB stripped, 9.0 MB with --gc-sections, 8.1 MB with gold's --icf=safe.
add_compile_options(-ffunction-sections -fdata-sections)
add_link_options(-fuse-ld=gold -Wl,--gc-sections -Wl,--icf=safe)

# Reproducible (issue 46; tests/cli/reproducible.sh): no path of the source or build directory in
# the binary. -ffile-prefix-map (GCC 8) rewrites them in __FILE__, debug information and every
# other recorded path (it implies -fmacro-prefix-map and -fdebug-prefix-map); the build directory
# is mapped first since it may lie inside the source directory. -Wdate-time warns of __DATE__,
# __TIME__ and __TIMESTAMP__, which no release binary may hold. The rest is scripts/release.sh's:
# SOURCE_DATE_EPOCH for every timestamp in the packages.
add_compile_options(-ffile-prefix-map=${CMAKE_BINARY_DIR}=build -ffile-prefix-map=${CMAKE_SOURCE_DIR}=.
                    -Wdate-time)
