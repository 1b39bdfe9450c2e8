"""Build the fastprof package and its C extension, fastprof._fastprof.

Environment switches (read at build time):
  FASTPROF_SANITIZE=1  build with AddressSanitizer + UndefinedBehaviorSanitizer
  FASTPROF_DEBUG=1     build with -O0 -g

The package is every directory under python/fastprof/ that holds .py files,
plus every other file there (templates, CSS, ...) as package data, except
build products (*.so, __pycache__): a build dir's fastprof/ mirrors
python/fastprof/ and never picks up an in-place build's .so (`make dev`).
"""
import glob
import os

from setuptools import Extension, setup

HERE = os.path.dirname(os.path.abspath(__file__))
PKG_ROOT = os.path.join("python", "fastprof")
NOT_DATA = (".py", ".pyc", ".pyo", ".so", ".pyd", ".o", ".dll", ".dylib")

# Hidden visibility: only PyInit__fastprof is exported, so calls into the
# core are direct (no PLT) and can be inlined.
compile_args = ["-std=gnu11", "-fvisibility=hidden", "-Wall", "-Wextra", "-Werror", "-Wno-missing-field-initializers",
                "-Wno-cast-function-type"]
link_args = []
if os.environ.get("FASTPROF_DEBUG") == "1":
    compile_args += ["-O0", "-g"]
else:
    # -flto lets the core's accounting inline into the event callbacks.
    compile_args += ["-O2", "-flto"]
    link_args += ["-O2", "-flto"]
if os.environ.get("FASTPROF_SANITIZE") == "1":
    san = ["-fsanitize=address,undefined", "-fno-omit-frame-pointer", "-fno-sanitize-recover=undefined"]
    compile_args += san + ["-g"]
    link_args += san


def find_packages_and_data():
    """Packages: python/fastprof and its subdirectories holding .py files.
    Data: every other file under python/fastprof, relative to it."""
    packages, data = [], []
    for dirpath, dirnames, filenames in os.walk(os.path.join(HERE, PKG_ROOT)):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__" and not d.startswith("."))
        rel = os.path.relpath(dirpath, os.path.join(HERE, "python"))
        if rel == "fastprof" or any(f.endswith(".py") for f in filenames):
            packages.append(rel.replace(os.sep, "."))
        for f in sorted(filenames):
            if not f.endswith(NOT_DATA) and not f.startswith("."):
                data.append(os.path.relpath(os.path.join(dirpath, f), os.path.join(HERE, PKG_ROOT)))
    return packages, data


packages, package_data = find_packages_and_data()

ext = Extension(
    "fastprof._fastprof",
    sources=sorted(glob.glob(os.path.join("csrc", "*.c"))),
    depends=sorted(glob.glob(os.path.join("csrc", "*.h"))),
    include_dirs=["csrc"],
    extra_compile_args=compile_args,
    extra_link_args=link_args,
)

setup(
    package_dir={"": "python"},
    packages=packages,
    package_data={"fastprof": package_data},
    include_package_data=False,   # only the list above; never a stray in-place .so
    ext_modules=[ext],
    zip_safe=False,
)
