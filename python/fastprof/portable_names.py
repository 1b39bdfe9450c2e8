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

The relative paths are taken where the profile is recorded (that process's
``sys.path``; the file's trailer keeps them as ``paths``); for files that have
none (cProfile's, older fastprof's) the reader's ``sys.path`` is used, and a
path below a ``site-packages`` or ``dist-packages`` directory loses what
comes before it.  C functions keep their name without its address.
"""

import os
import sys
from typing import Dict, Iterable, List, Mapping, Optional, Sequence

from .model import QUALNAME_SEPARATOR, FuncKey, is_builtin, strip_address

_PACKAGE_DIRS = (os.sep + "site-packages" + os.sep, os.sep + "dist-packages" + os.sep)


def path_roots(sys_path: Optional[Sequence[str]] = None) -> List[str]:
    """The absolute directories of *sys_path* (default ``sys.path``), each
    ending in a separator, longest first (site-packages before the lib
    directory that holds it)."""
    roots = set()
    for p in sys.path if sys_path is None else sys_path:
        if p and os.path.isabs(p):
            roots.add(os.path.join(os.path.normpath(p), ""))
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


def relative_paths(filenames: Iterable[str],
                   sys_path: Optional[Sequence[str]] = None) -> Dict[str, str]:
    """``{filename: relative path}`` for the *filenames* that have a shorter
    one (what a file's trailer keeps as ``paths``)."""
    roots = path_roots(sys_path)
    out = {}
    for filename in set(filenames):
        if isinstance(filename, str):
            rel = relative_path(filename, roots)
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
    qualnames = qualnames or {}
    paths = paths or {}
    roots: Optional[List[str]] = None
    named: Dict[FuncKey, str] = {}
    for key in keys:
        filename, _line, name = key
        if is_builtin(key):
            named[key] = "~:" + strip_address(str(name))
            continue
        rel = paths.get(filename)
        if rel is None:
            if roots is None:
                roots = path_roots()
            rel = relative_path(filename, roots)
        qual = qualnames.get(key) or str(name)
        named[key] = "%s:%s" % (rel, qual.split(QUALNAME_SEPARATOR)[0] if qual else name)
    return _numbered(named)


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
