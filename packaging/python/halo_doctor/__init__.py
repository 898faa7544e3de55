# SPDX-License-Identifier: MIT
"""halo-doctor as a Python distribution: the native binary is installed as BIN/halo-doctor beside
the interpreter (the wheel's script); `python -m halo_doctor ARGS` runs it too."""
import os
import sys
import sysconfig


def binary() -> str:
    """The path of the installed halo-doctor binary (sysconfig's scripts directory of this
    interpreter's scheme, then the user scheme); FileNotFoundError when neither holds it."""
    candidates = [sysconfig.get_path("scripts")]
    user = sysconfig.get_path("scripts", f"{os.name}_user")
    if user:
        candidates.append(user)
    for d in candidates:
        p = os.path.join(d, "halo-doctor")
        if os.path.isfile(p) and os.access(p, os.X_OK):
            return p
    raise FileNotFoundError("halo-doctor binary not found in " + ", ".join(candidates))


def main() -> None:
    path = binary()
    os.execv(path, [path, *sys.argv[1:]])
