"""How functions are named for people, beside their pstats keys.

A pstats key ``(file, line, name)`` (``label`` makes one from a code object
or a C function's name) is what cProfile writes and what every
reader matches on; this module never changes one.  It only says how a key is
*shown* (which keys are the same function across runs: fastprof.data.model):

- C functions named with an address (``<built-in method __new__ of type
  object at 0x7f...>``) get a new address every run (ASLR);
  ``readable_name`` shows them without it.
- Python 3.11+ knows each code object's qualified name (``co_qualname``:
  ``Node.__init__`` rather than ``__init__``).  fastprof stores those in the
  ``.prof`` trailer (``ProfileData.qualnames``); the views show them where
  known and the plain name otherwise (cProfile files).  3.9/3.10 have no
  ``co_qualname``: there the profiler reads them from the modules
  (``profiler.qualnames_of_codes``, ``func_patterns.code_qualnames``).
  Several code objects may share one key (dataclass ``__init__``s all at
  ``<string>:2``): their qualified names are listed together,
  ``A.__init__ | B.__init__``.
"""

import os
import sys
from typing import Dict, Iterable, List, Mapping, Optional

from .model import QUALNAME_SEPARATOR, FuncKey, is_builtin, strip_address


def label(code) -> FuncKey:
    """The pstats key of a profiled function: ``(file, line, name)``.

    C functions come as a str from the C module; cProfile files them under
    ``('~', 0, name)`` ('~' sorts them last) and so do we.
    """
    if isinstance(code, str):
        return ("~", 0, code)
    return (code.co_filename, code.co_firstlineno, code.co_name)


def readable_name(key: FuncKey, qualnames: Optional[Mapping[FuncKey, str]] = None) -> str:
    """The function's name as people read it: the qualified name if known,
    else the pstats name (without an address for C functions)."""
    if qualnames:
        q = qualnames.get(key)
        if q:
            return q
    name = key[2]
    return strip_address(name) if is_builtin(key) and isinstance(name, str) else str(name)


def qualnames_of(codes: Iterable) -> Dict[FuncKey, str]:
    """``{pstats key: qualified name}`` for the code objects in *codes*
    (C functions, given as str, are skipped).

    Only names that say more than the plain name are kept, so the result is
    empty before 3.11 (no ``co_qualname``).  Code objects sharing a key are
    listed together, sorted, joined by ``" | "``.
    """
    # key -> its one qualified name, or the set of them if several (rare)
    found: Dict[FuncKey, object] = {}
    for code in codes:
        if isinstance(code, str):  # a C function (and no attribute lookup that fails)
            continue
        qual = getattr(code, "co_qualname", None)
        if qual is None:
            continue
        key = (code.co_filename, code.co_firstlineno, code.co_name)
        prev = found.get(key)
        if prev is None:
            found[key] = qual
        elif isinstance(prev, set):
            prev.add(qual)
        elif prev != qual:
            found[key] = {prev, qual}
    out = {}
    for key, quals in found.items():
        text = quals if isinstance(quals, str) else QUALNAME_SEPARATOR.join(sorted(quals))
        if text != key[2]:
            out[key] = text
    return out


_PREFIXES: Dict[tuple, List[str]] = {}


def _path_prefixes() -> List[str]:
    key = tuple(sys.path)
    cached = _PREFIXES.get(key)
    if cached is None:
        prefixes = set()
        for p in key:
            if p and os.path.isabs(p) and os.path.isdir(p):
                prefixes.add(os.path.join(os.path.normpath(p), ""))
        # longest first, so site-packages wins over the lib directory holding it
        cached = _PREFIXES[key] = sorted(prefixes, key=len, reverse=True)
    return cached


def short_path(filename: str) -> str:
    """*filename* relative to the sys.path entry holding it, if any."""
    if not filename or filename.startswith("<") or filename == "~":
        return filename
    for prefix in _path_prefixes():
        if filename.startswith(prefix) and len(filename) > len(prefix):
            return filename[len(prefix):]
    return filename


def func_label(key: FuncKey, short: bool = True,
               qualnames: Optional[Mapping[FuncKey, str]] = None) -> str:
    """``name (file:line)`` for Python functions (the qualified name if
    *qualnames* knows it), the C function's name (no address) for C ones."""
    filename, line, _name = key
    if is_builtin(key):
        return readable_name(key)
    path = short_path(filename) if short else filename
    return "%s (%s:%s)" % (readable_name(key, qualnames), path, line)


def stdname(key: FuncKey) -> str:
    """``file:line(name)`` as pstats prints it (``{name}`` for C functions)."""
    filename, line, name = key
    if is_builtin(key):
        if name.startswith("<"):
            return "{%s}" % name[1:-1]
        return name
    return "%s:%s(%s)" % (filename, line, name)
