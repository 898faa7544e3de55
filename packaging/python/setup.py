# SPDX-License-Identifier: MIT
"""The wheel holds a native binary and no Python extension: it is a platform wheel (not pure) for
any Python 3, tagged py3-none-manylinux_2_34_x86_64 (PEP 600: the binary needs glibc >= 2.34 on
x86_64, which tests/cli/release.sh checks with objdump -T). The binary is a script of the
distribution, so pip installs it as VENV/bin/halo-doctor, as ruff's and uv's wheels do."""
import os

from setuptools import setup
from distutils.command.build_scripts import build_scripts  # setuptools 66 has no own
from setuptools.dist import Distribution
from wheel.bdist_wheel import bdist_wheel


class BinaryDistribution(Distribution):
    def has_ext_modules(self):
        return True


class CopyBinary(build_scripts):
    """The script is an ELF binary: copied as it is (build_scripts would read it as Python text to
    rewrite a #! line)."""

    def copy_scripts(self):
        self.mkpath(self.build_dir)
        outfiles = []
        for script in self.scripts:
            dst = os.path.join(self.build_dir, os.path.basename(script))
            self.copy_file(script, dst)
            os.chmod(dst, 0o755)
            outfiles.append(dst)
        return outfiles, outfiles


class ManylinuxWheel(bdist_wheel):
    def finalize_options(self):
        super().finalize_options()
        self.root_is_pure = False

    def get_tag(self):
        return "py3", "none", "manylinux_2_34_x86_64"


setup(
    distclass=BinaryDistribution,
    cmdclass={"bdist_wheel": ManylinuxWheel, "build_scripts": CopyBinary},
    scripts=["halo-doctor"],
)
