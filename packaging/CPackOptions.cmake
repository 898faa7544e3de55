# SPDX-License-Identifier: MIT
# Per-generator CPack settings (CPACK_PROJECT_CONFIG_FILE, read when each generator runs). The
# tarball is a relocatable tree: halo-doctor-VERSION-linux-ARCH/{bin,share,lib,libexec}, not /usr.
if(CPACK_GENERATOR STREQUAL "TGZ")
  set(CPACK_PACKAGING_INSTALL_PREFIX "/")
  set(CPACK_PACKAGE_FILE_NAME "halo-doctor-${CPACK_PACKAGE_VERSION}-linux-${CPACK_HALO_ARCH}")
endif()
