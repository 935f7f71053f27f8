"""Build the compiled parts (Cython -> C++): arsdecode's core and maxarpa's text reader and
writer; everything else is in pyproject.toml."""

from Cython.Build import cythonize
from setuptools import Extension, setup

setup(
    ext_modules=cythonize(
        [
            Extension(
                "arsdecode.native._core",
                ["arsdecode/native/_core.pyx"],
                language="c++",
                extra_compile_args=["-O3", "-std=c++17"],
            ),
            Extension(
                "maxarpa.native._textio",
                ["maxarpa/native/_textio.pyx"],
                include_dirs=["maxarpa/native"],
                language="c++",
                extra_compile_args=["-O3", "-std=c++17"],
            ),
        ],
        compiler_directives={"language_level": 3},
    )
)
