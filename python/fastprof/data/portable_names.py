"""Names of functions that survive installs: the same function gets the same
name whichever venv, ``--target`` directory or checkout its file came from.

A pstats key ``(file, line, name)`` holds an absolute path, so jinja2 3.0 in
one venv and jinja2 3.1 in another share no key.  Here a function is named
by its file *relative to the ``sys.path`` entry holding it* (``jinja2/runtime.py``),
its qualified name (``Context.resolve``, the key's name where none is known)
and, when several functions of one file share a qualified name (two lambdas in
one function), its place among them by first line (``#2``)::

    jinja2/runtime.py:Context.resolve
    app/views.py:index.<locals>.<lambda>#2
    ~:<built-in method builtins.len>

The relative paths are taken where the profile is recorded (from the
dotted name of the module a file is, else that process's ``sys.path``:
``relative_paths``; the file's trailer keeps them as ``paths``); for files that have
none (cProfile's, older fastprof's) the reader's ``sys.path`` is used, and a
path below a ``site-packages`` or ``dist-packages`` directory loses what
comes before it.  C functions keep their name without its address.

``pair_functions`` says which function of one profile is which of another
(``fastprof diff``), ``FunctionIndex`` the same for profiles summed one at a
time (``fastprof merge``): by place first (relative path, qualified name
and first line), then by qualified name in order of first line, then by a
plain name unique in its file on both sides.
"""

import os
import sys
from types import ModuleType
from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Set, Tuple

from .model import QUALNAME_SEPARATOR, FuncKey, is_builtin, strip_address

_PACKAGE_DIRS = (os.sep + "site-packages" + os.sep, os.sep + "dist-packages" + os.sep)


def path_roots(sys_path: Optional[Sequence[str]] = None) -> List[str]:
    """The directories of *sys_path* (default ``sys.path``), made absolute, each
    ending in a separator, longest first (site-packages before the lib
    directory that holds it)."""
    roots = set()
    for p in sys.path if sys_path is None else sys_path:
        if p:  # a relative entry is relative to this process's directory, as for imports
            roots.add(os.path.join(os.path.normpath(os.path.abspath(p)), ""))
    return sorted(roots, key=len, reverse=True)


def relative_path(filename: str, roots: Sequence[str]) -> str:
    """*filename* relative to the first of *roots* holding it; else the part
    after its last ``site-packages``/``dist-packages``; else unchanged.
    Pseudo-files (``<string>``, ``~``) are returned as they are."""
    if not filename or filename.startswith("<") or filename == "~":
        return filename
    for root in roots:
        if filename.startswith(root) and len(filename) > len(root):
            return filename[len(root):]
    for marker in _PACKAGE_DIRS:
        at = filename.rfind(marker)
        if at >= 0:
            return filename[at + len(marker):]
    return filename


def _is_relative_file(filename: str) -> bool:
    return not (not filename or filename.startswith("<") or filename == "~"
                or os.path.isabs(filename))


def relative_paths(filenames: Iterable[str],
                   sys_path: Optional[Sequence[str]] = None,
                   modules: Optional[Mapping[str, object]] = None) -> Dict[str, str]:
    """``{filename: relative path}`` for the *filenames* that have a shorter
    one (what a file's trailer keeps as ``paths``).

    The file of a module in *modules* (default: ``sys.modules`` when
    *sys_path* is ``sys.path``) is named after the module's dotted name,
    which says how it was imported: ``toylib.core``'s file is
    ``toylib/core.py`` whichever ``sys.path`` entry (the script's directory
    holding a checkout's ``src/``) or meta path finder (setuptools' editable
    installs) it came through.  Other files (the script, code whose module
    is gone) are taken relative to their ``sys.path`` entry
    (``relative_path``)."""
    roots = path_roots(sys_path)
    if modules is None and sys_path is None:
        modules = sys.modules
    wanted = {f for f in filenames if isinstance(f, str)}
    by_file = _module_files(modules, wanted) if modules else {}
    out = {}
    for filename in wanted:
        rel = by_file.get(filename)
        if rel is None:
            # a script run by a relative path (python -m fastprof examples/x.py)
            # is named from where this process stands, as it would be when run
            # by its full path
            rel = relative_path(os.path.abspath(filename) if _is_relative_file(filename)
                                else filename, roots)
        if rel != filename:
            out[filename] = rel
    return out


_MODULE_DICT = ModuleType.__dict__["__dict__"]


def _module_files(modules: Mapping[str, object], wanted: Set[str]) -> Dict[str, str]:
    """``{file: path its module's dotted name gives}`` for the files in
    *wanted* that are the ``__file__`` of one of *modules* (the script,
    ``__main__``, is left out: its name is no path)."""
    return {f: found[0] for f, found in _module_files_of(modules, wanted).items()}


def _module_files_of(modules: Mapping[str, object],
                     wanted: Optional[Set[str]] = None) -> Dict[str, Tuple[str, str, object, str]]:
    """``{file: (path its module's dotted name gives, its sys.modules key, the
    module, that name)}``
    for the files (of *wanted*, default all) that are the ``__file__`` of one
    of *modules* (when several modules share a file: ``_better_name``)."""
    out = {}
    for key, module in list(modules.items()):
        if not isinstance(module, ModuleType):
            continue
        namespace = _MODULE_DICT.__get__(module)   # no attribute hook runs
        filename = namespace.get("__file__")
        if type(filename) is not str or (wanted is not None and filename not in wanted):
            continue
        name = namespace.get("__name__")
        if type(name) is not str or name in ("__main__", "__mp_main__"):
            continue
        base = filename[filename.rfind(os.sep) + 1:]
        if "__path__" in namespace:   # a package: its __init__
            rel = name.replace(".", os.sep) + os.sep + base
        else:
            dot = base.rfind(".")
            rel = name.replace(".", os.sep) + (base[dot:] if dot > 0 else "")
        if filename in out and not _better_name(rel, out[filename][0], filename):
            continue
        out[filename] = (rel, key, module, name)
    return out


def _better_name(rel: str, other: str, filename: str) -> bool:
    """Whether *rel* names *filename* better than *other*, when two modules
    share the file (``tlz.itertoolz`` is an alias of ``toolz.itertoolz``):
    the name that is where the file is (a suffix of its path), then the
    smaller one, so the choice does not depend on which was imported first."""
    def where(r):
        return not filename.endswith(os.sep + r)
    return (where(rel), rel) < (where(other), other)


class PathsMemo:
    """``relative_paths(filenames)`` for one process, remembered: what a
    file's relative path is depends on ``sys.path``, the current directory
    and ``sys.modules``, which change rarely while a program runs, so a
    profile taken over and over (``pytest --fastprof-per-test``: one per
    test) pays for the files it has not seen yet, not for a scan of every
    module.  The files' paths are taken again once ``sys.path`` or the
    current directory changes or a module is added or removed; a module
    whose file was named after it is looked up again at each use (still
    there, still that file)."""

    def __init__(self) -> None:
        self._state: Optional[Tuple[Tuple[object, ...], Optional[str], int]] = None
        self._roots: List[str] = []
        # file -> (rel, its module's sys.modules key, the module, its __name__)
        self._by_file: Dict[str, Tuple[str, str, object, str]] = {}
        self._known: Dict[str, str] = {}  # file -> its relative path (itself if none)
        self.scans = 0  # how many times sys.modules was read whole

    def _refresh(self) -> None:
        path, modules = sys.path, sys.modules
        try:
            cwd: Optional[str] = os.getcwd()
        except OSError:  # removed under us: only relative names need it
            cwd = None
        state = (tuple(path), cwd, len(modules))
        if state == self._state:
            return
        old = self._state
        if old is None or old[:2] != state[:2]:
            self._roots = path_roots(path)
        self._by_file = _module_files_of(modules)
        self._known = {}
        self._state = state
        self.scans += 1

    def relative_paths(self, filenames: Iterable[str]) -> Dict[str, str]:
        """What ``relative_paths(filenames)`` returns in this process."""
        filenames = list(dict.fromkeys(filenames))  # (a profile's rows share a few files)
        self._refresh()
        known, by_file, modules = self._known, self._by_file, sys.modules
        out = {}
        for filename in filenames:
            if not isinstance(filename, str):
                continue
            found = by_file.get(filename)
            if found is not None:
                rel, key, module, name = found
                namespace = _MODULE_DICT.__get__(module)
                if modules.get(key) is not module or namespace.get("__file__") != filename \
                        or namespace.get("__name__") != name:
                    self._state = None  # a module was replaced: read them all again
                    return self.relative_paths(filenames)
            else:
                rel = known.get(filename)
                if rel is None:
                    rel = known[filename] = relative_path(
                        os.path.abspath(filename) if _is_relative_file(filename) else filename,
                        self._roots)
            if rel != filename:
                out[filename] = rel
        return out


def portable_names(keys: Iterable[FuncKey],
                   qualnames: Optional[Mapping[FuncKey, str]] = None,
                   paths: Optional[Mapping[str, str]] = None) -> Dict[FuncKey, str]:
    """``{pstats key: portable name}`` for *keys*.

    *qualnames* is a profile's ``qualnames`` map (key -> qualified name(s));
    *paths* its ``paths`` map (filename -> relative path); a filename *paths*
    does not have is made relative with this process's ``sys.path``.  Keys
    of one relative path and qualified name are numbered by first line
    (``#1``, ``#2``...), so each key gets a name of its own.
    """
    named = {key: "%s:%s" % part for key, part in portable_parts(keys, qualnames, paths).items()}
    return _numbered(named)


Parts = Tuple[str, str]   # (relative path, qualified name); ("~", name) for C functions


def portable_parts(keys: Iterable[FuncKey],
                   qualnames: Optional[Mapping[FuncKey, str]] = None,
                   paths: Optional[Mapping[str, str]] = None) -> Dict[FuncKey, Parts]:
    """``{pstats key: (relative path, qualified name)}``: ``portable_names``
    before the ``#N`` of repeats.  The qualified name is the first of the
    names *qualnames* lists for the key, else the key's name; a C function's
    name loses its address and its path is ``~``."""
    qualnames = qualnames or {}
    paths = paths or {}
    roots: Optional[List[str]] = None
    rels: Dict[str, str] = {}
    out: Dict[FuncKey, Parts] = {}
    for key in keys:
        filename, _line, name = key
        if is_builtin(key):
            out[key] = ("~", strip_address(str(name)))
            continue
        rel = rels.get(filename)
        if rel is None:
            rel = paths.get(filename)
            if rel is None:
                if roots is None:
                    roots = path_roots()
                rel = relative_path(filename, roots)
            rels[filename] = rel
        qual = qualnames.get(key)
        out[key] = (rel, qual.split(QUALNAME_SEPARATOR)[0] if qual else str(name))
    return out


def pair_functions(base: Mapping[FuncKey, Parts], new: Mapping[FuncKey, Parts],
                   base_names: Optional[Mapping[Tuple[str, str], int]] = None,
                   new_names: Optional[Mapping[Tuple[str, str], int]] = None) -> Dict[FuncKey, FuncKey]:
    """``{new key: base key}``: which function of one profile is which of
    another, whatever install each file came from (*base* and *new* give
    each key its ``portable_parts``; keys left out pair with nothing):

    1. the same relative path, qualified name, first line and name;
    2. of the rest, the same relative path and qualified name, in order of
       first line (the N-th lambda of ``f`` with the N-th: ``#N``);
    3. of the rest, the same relative path and plain name when that pair is
       unique in each whole profile (*base_names*/*new_names* count the
       keys of each ``(relative path, name)``; by default those of *base*
       and *new*): a function only one profile knows the qualified name of
       (a cProfile file, 3.9/3.10), or whose class was renamed.
    """
    pairs: Dict[FuncKey, FuncKey] = {}

    def groups(side, of):
        out: Dict[tuple, List[FuncKey]] = {}
        for key, part in side.items():
            out.setdefault(of(key, part), []).append(key)
        return out

    # 1. the same place
    exact_b = groups(base, lambda k, p: (p[0], p[1], k[1], str(k[2])))
    for where, keys in groups(new, lambda k, p: (p[0], p[1], k[1], str(k[2]))).items():
        match = exact_b.get(where)
        if match is not None and len(match) == 1 and len(keys) == 1:
            pairs[keys[0]] = match[0]
    # 2. the same qualified name, in order of definition
    used = set(pairs.values())
    rest_b = {k: p for k, p in base.items() if k not in used}
    rest_n = {k: p for k, p in new.items() if k not in pairs}
    by_qual_b = groups(rest_b, lambda k, p: p)
    for qual, keys in groups(rest_n, lambda k, p: p).items():
        match = by_qual_b.get(qual)
        if match:
            order = lambda k: (k[1], str(k[2]), str(k[0]))  # noqa: E731
            for nk, bk in zip(sorted(keys, key=order), sorted(match, key=order)):
                pairs[nk] = bk
    # 3. the same plain name, unique on both sides
    used = set(pairs.values())
    if base_names is None:
        base_names = _name_counts(base)
    if new_names is None:
        new_names = _name_counts(new)
    by_name_b = groups({k: p for k, p in rest_b.items() if k not in used},
                       lambda k, p: (p[0], str(k[2])))
    for where, keys in groups({k: p for k, p in rest_n.items() if k not in pairs},
                              lambda k, p: (p[0], str(k[2]))).items():
        match = by_name_b.get(where)
        if (match and len(match) == 1 and len(keys) == 1
                and base_names.get(where) == 1 and new_names.get(where) == 1):
            pairs[keys[0]] = match[0]
    return pairs


def _name_counts(side: Mapping[FuncKey, Parts]) -> Dict[Tuple[str, str], int]:
    counts: Dict[Tuple[str, str], int] = {}
    for key, part in side.items():
        where = (part[0], str(key[2]))
        counts[where] = counts.get(where, 0) + 1
    return counts


def _numbered(named: Dict[FuncKey, str]) -> Dict[FuncKey, str]:
    """*named* with each name shared by several keys suffixed ``#N``, N the
    key's place among them by first line (then by the key's name)."""
    groups: Dict[str, List[FuncKey]] = {}
    for key, text in named.items():
        groups.setdefault(text, []).append(key)
    out = dict(named)
    for text, keys in groups.items():
        if len(keys) > 1:
            for n, key in enumerate(sorted(keys, key=lambda k: (k[1], str(k[2]), str(k[0]))), 1):
                out[key] = "%s#%d" % (text, n)
    return out


class FunctionIndex:
    """The functions of profiles added one at a time (``fastprof merge``),
    each under the key it was first seen with: a later profile's key for
    the same function from another install (``pair_functions``) maps to
    that first key.  C functions are left to ``model.KeyChooser``.

        index = FunctionIndex()
        for data in profiles:
            aliases = index.add(data.stats, data.qualnames, data.paths)
            # aliases: {this profile's key: the key first seen}, where they differ
    """

    def __init__(self):
        self.parts: Dict[FuncKey, Parts] = {}
        self._by_qual: Dict[Parts, List[FuncKey]] = {}
        self._by_name: Dict[Tuple[str, str], List[FuncKey]] = {}

    def add(self, keys: Iterable[FuncKey], qualnames: Optional[Mapping[FuncKey, str]] = None,
            paths: Optional[Mapping[str, str]] = None) -> Dict[FuncKey, FuncKey]:
        """Index one profile's *keys*; ``{key: first key}`` for those that
        pair with a function indexed before under another key."""
        keys = {tuple(k) for k in keys if not is_builtin(k)}
        fresh = [k for k in keys if k not in self.parts]
        if not fresh:
            return {}  # the same files as before: nothing to pair
        mine = portable_parts(keys, qualnames, paths)
        candidates: Dict[FuncKey, Parts] = {}
        for key in fresh:
            part = mine[key]
            for k in self._by_qual.get(part, []) + self._by_name.get((part[0], str(key[2])), []):
                if k not in keys:
                    candidates[k] = self.parts[k]
        aliases: Dict[FuncKey, FuncKey] = {}
        if candidates:
            aliases = pair_functions(candidates, {k: mine[k] for k in fresh},
                                     _Lengths(self._by_name), _name_counts(mine))
        for key in fresh:
            if key not in aliases:
                part = self.parts[key] = mine[key]
                self._by_qual.setdefault(part, []).append(key)
                self._by_name.setdefault((part[0], str(key[2])), []).append(key)
        return aliases


class _Lengths:
    """``get(where)``: how many keys a group of an index holds (no copy)."""

    def __init__(self, groups: Mapping[Tuple[str, str], List[FuncKey]]):
        self.groups = groups

    def get(self, where: Tuple[str, str], default: Optional[int] = None) -> Optional[int]:
        keys = self.groups.get(where)
        return default if keys is None else len(keys)
