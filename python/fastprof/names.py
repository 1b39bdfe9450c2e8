"""How functions are named for people, beside their pstats keys.

A pstats key ``(file, line, name)`` (``label`` makes one from a code object
or a C function's name) is what cProfile writes and what every
reader matches on; this module never changes one.  It only says how a key is
*shown* and which keys are *the same function* across runs:

- C functions named with an address (``<built-in method __new__ of type
  object at 0x7f...>``) get a new address every run (ASLR).  ``match_key``
  drops it, so diff, merge and the views treat them as one function, and
  ``readable_name`` shows them without it.
- Python 3.11+ knows each code object's qualified name (``co_qualname``:
  ``Node.__init__`` rather than ``__init__``).  fastprof stores those in the
  ``.prof`` trailer (``ProfileData.qualnames``); the views show them where
  known and the plain name otherwise (older files, cProfile files, 3.9/3.10).
  Several code objects may share one key (dataclass ``__init__``s all at
  ``<string>:2``): their qualified names are listed together,
  ``A.__init__ | B.__init__``.
"""

import os
import re
import sys
from typing import Dict, Iterable, List, Mapping, Optional, Tuple

FuncKey = Tuple[str, int, str]

# " at 0x7f3a..." inside a C function's name: the address of the object the
# method is bound to, different in every process.
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")

QUALNAME_SEPARATOR = " | "


def label(code) -> FuncKey:
    """The pstats key of a profiled function: ``(file, line, name)``.

    C functions come as a str from the C module; cProfile files them under
    ``('~', 0, name)`` ('~' sorts them last) and so do we.
    """
    if isinstance(code, str):
        return ("~", 0, code)
    return (code.co_filename, code.co_firstlineno, code.co_name)


def is_builtin(key: FuncKey) -> bool:
    return key[0] == "~" and key[1] == 0


def strip_address(name: str) -> str:
    """*name* without its ``" at 0x..."`` parts (unchanged if it has none)."""
    if " at 0x" not in name:
        return name
    return _ADDRESS.sub("", name)


def match_key(key: FuncKey) -> FuncKey:
    """The key that identifies *key*'s function across runs: C function names
    lose their addresses; every other key is returned as is."""
    if is_builtin(key) and isinstance(key[2], str) and " at 0x" in key[2]:
        return (key[0], key[1], strip_address(key[2]))
    return key


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
    found: Dict[FuncKey, set] = {}
    for code in codes:
        qual = getattr(code, "co_qualname", None)
        if qual is None:
            continue
        key = (code.co_filename, code.co_firstlineno, code.co_name)
        found.setdefault(key, set()).add(qual)
    out = {}
    for key, quals in found.items():
        text = QUALNAME_SEPARATOR.join(sorted(quals))
        if text != key[2]:
            out[key] = text
    return out


def merge_qualnames(tables: Iterable[Mapping[FuncKey, str]]) -> Dict[FuncKey, str]:
    """The union of several ``qualnames`` maps (differing names listed together)."""
    found: Dict[FuncKey, List[str]] = {}
    for table in tables:
        for key, text in table.items():
            names = found.setdefault(key, [])
            for q in text.split(QUALNAME_SEPARATOR):
                if q not in names:
                    names.append(q)
    return {k: QUALNAME_SEPARATOR.join(sorted(v)) for k, v in found.items()}


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


def by_match_key(stats: Mapping[FuncKey, tuple]) -> Dict[FuncKey, tuple]:
    """*stats* with rows (and caller edges) of the same ``match_key`` summed,
    keyed by ``match_key``: what the views and diff show."""
    if not any(match_key(k) is not k for k in stats):
        return dict(stats)
    from .merge import merge_stats  # the views only
    return merge_stats([stats], match_key)
