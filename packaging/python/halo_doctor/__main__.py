# SPDX-License-Identifier: MIT
from halo_doctor import main

main()
