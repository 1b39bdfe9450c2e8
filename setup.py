"""Build the fastprof package and its C extension, fastprof._fastprof.

Environment switches (read at build time):
  FASTPROF_SANITIZE=1  build with AddressSanitizer + UndefinedBehaviorSanitizer
  FASTPROF_DEBUG=1     build with -O0 -g
  FASTPROF_WERROR=1    warnings are errors (the project's own builds: scripts/build.sh);
                       never in a user's `pip install`, where a newer compiler's new
                       warning must not break the install
  FASTPROF_UTHASH_INCLUDE=DIR  look for uthash.h in DIR only

uthash (header only) comes from the system in a git checkout (Debian:
uthash-dev). The sdist carries the header it was made with, and its license,
under third_party/uthash/: they are written at sdist time, never committed.

The package is every directory under python/fastprof/ that holds .py files,
plus every other file there (the HTML report's template, CSS and JavaScript in
python/fastprof/report_assets/, the _fastprof.pyi type stub and py.typed) as
package data, except
build products (*.so, __pycache__): a build dir's fastprof/ mirrors
python/fastprof/ and never picks up an in-place build's .so (`make dev`).
"""
import glob
import os
import shutil
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.command.sdist import sdist

HERE = os.path.dirname(os.path.abspath(__file__))
PKG_ROOT = os.path.join("python", "fastprof")
NOT_DATA = (".py", ".pyc", ".pyo", ".so", ".pyd", ".o", ".dll", ".dylib")

# Hidden visibility: only PyInit__fastprof is exported, so calls into the
# core are direct (no PLT) and can be inlined.
compile_args = ["-std=gnu11", "-fvisibility=hidden", "-Wall", "-Wextra", "-Wno-missing-field-initializers",
                "-Wno-cast-function-type"]
if os.environ.get("FASTPROF_WERROR") == "1":
    compile_args.append("-Werror")
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


# Where uthash.h is looked for, in order: the sdist's own copy, then the
# places package managers put it (apt/dnf: /usr/include, Homebrew:
# /opt/homebrew/include or /usr/local/include, conda: <prefix>/include).
VENDORED_UTHASH = os.path.join("third_party", "uthash")
UTHASH_MISSING = ("fastprof: uthash.h not found; install uthash (Debian/Ubuntu: apt install uthash-dev, "
                  "Fedora: dnf install uthash-devel, macOS: brew install uthash) or build from the sdist, which carries it")


def uthash_search_path():
    if os.environ.get("FASTPROF_UTHASH_INCLUDE"):
        return [os.environ["FASTPROF_UTHASH_INCLUDE"]]
    dirs = [os.path.join(HERE, VENDORED_UTHASH)]
    for var in ("CPATH", "C_INCLUDE_PATH"):
        dirs += [d for d in os.environ.get(var, "").split(os.pathsep) if d]
    dirs += ["/usr/include", "/usr/local/include", "/opt/homebrew/include", os.path.join(sys.prefix, "include"),
             os.path.join(sys.base_prefix, "include")]
    return dirs


def find_uthash():
    """The directory holding uthash.h, or None."""
    for d in uthash_search_path():
        if os.path.isfile(os.path.join(d, "uthash.h")):
            return os.path.abspath(d)
    return None


def uthash_license(header_text):
    """uthash's license is the comment that opens uthash.h: copyright and terms."""
    start, end = header_text.find("/*"), header_text.find("*/")
    if start != 0 or end < 0 or "Copyright" not in header_text[:end]:
        raise SystemExit("fastprof: uthash.h does not open with its copyright and license comment: not shipping it")
    return header_text[start + 2:end].strip("\n") + "\n"


class BuildExt(build_ext):
    """Stops in one line, before compiling anything, when uthash.h is missing."""

    def run(self):
        inc = find_uthash()
        if inc is None:
            raise SystemExit(UTHASH_MISSING)
        # The compiler finds /usr/include by itself; adding it would reorder the
        # system headers (and a cross compiler must never see the host's).
        if inc not in ("/usr/include", "/usr/local/include"):
            for e in self.extensions:
                e.include_dirs.append(inc)
        super().run()


class Sdist(sdist):
    """Adds the uthash.h found on this machine, and its license, to the sdist,
    so `pip install fastprof-X.tar.gz` needs no uthash on the target machine."""

    def make_release_tree(self, base_dir, files):
        super().make_release_tree(base_dir, files)
        inc = find_uthash()
        if inc is None:
            raise SystemExit(UTHASH_MISSING)
        with open(os.path.join(inc, "uthash.h"), encoding="utf-8") as f:
            header = f.read()
        dest = os.path.join(base_dir, VENDORED_UTHASH)
        os.makedirs(dest, exist_ok=True)
        shutil.copyfile(os.path.join(inc, "uthash.h"), os.path.join(dest, "uthash.h"))   # byte for byte
        with open(os.path.join(dest, "LICENSE"), "w", encoding="utf-8") as f:
            f.write("uthash.h, shipped in this sdist, is Troy D. Hanson's uthash under this license\n"
                    "(taken from the header's own opening comment):\n\n" + uthash_license(header))


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
    cmdclass={"build_ext": BuildExt, "sdist": Sdist},
    zip_safe=False,
)
