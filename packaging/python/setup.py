# SPDX-License-Identifier: MIT
"""The wheel holds a native binary and no Python extension: it is a platform wheel (not pure) for
any Python 3, tagged py3-none-manylinux_2_34_x86_64 (PEP 600: the binary needs glibc >= 2.34 on
x86_64, which tests/cli/release.sh checks with objdump -T). The binary is a script of the
distribution, so pip installs it as VENV/bin/halo-doctor, as ruff's and uv's wheels do."""
from setuptools import setup
from setuptools.dist import Distribution
from wheel.bdist_wheel import bdist_wheel


class BinaryDistribution(Distribution):
    def has_ext_modules(self):
        return True


class ManylinuxWheel(bdist_wheel):
    def finalize_options(self):
        super().finalize_options()
        self.root_is_pure = False

    def get_tag(self):
        return "py3", "none", "manylinux_2_34_x86_64"


setup(distclass=BinaryDistribution, cmdclass={"bdist_wheel": ManylinuxWheel}, scripts=["halo-doctor"])
