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

foreach(lib re2 yaml-cpp crypto archive nettle acl lzma zstd lz4 bz2 z elf xml2 icui18n icuuc icudata)
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
# libcrypto.a (EVP_Digest for the bundles' SHA-256) needs libdl and pthreads from glibc.
set(HALO_LIB_CRYPTO ${HALO_A_crypto} ${CMAKE_DL_LIBS} Threads::Threads)
# libarchive.a and what its filters and formats call (pkg-config --static --libs libarchive and
# libxml-2.0); the linker takes only the members the doctor's calls reach. The pax writer
# (capture) calls a helper in archive_write_set_format.o, whose table of every writer brings in
# the xar writer and with it libxml2's text writer and ICU.
set(HALO_LIB_ARCHIVE ${HALO_A_archive} ${HALO_A_nettle} ${HALO_A_acl} ${HALO_A_xml2} ${HALO_A_icui18n}
    ${HALO_A_icuuc} ${HALO_A_icudata} ${HALO_A_lzma} ${HALO_A_zstd} ${HALO_A_lz4} ${HALO_A_bz2} ${HALO_A_z}
    ${CMAKE_DL_LIBS} m)
set(HALO_LIB_ELF ${HALO_A_elf} ${HALO_A_zstd} ${HALO_A_lzma} ${HALO_A_bz2} ${HALO_A_z})

add_link_options(-static-libstdc++ -static-libgcc)
