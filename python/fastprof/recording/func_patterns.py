"""Which functions a ``--lines`` pattern names, decided per code object.

A pattern is ``MODULE[:QUALNAME]`` with shell wildcards (``fnmatch``, case
sensitive) on the dotted module name and on the qualified function name
(``myapp``, ``myapp.db:Query.*``, ``lines_prog:hot``), or a file path glob
(it contains ``/`` or ends in ``.py``), optionally ``:QUALNAME`` too.
Without a qualified name every function of the module (or file) matches.
A module pattern names a package with all its submodules (``myapp``:
``myapp/__init__.py`` and ``myapp.sub.mod``; ``module_covered``), a path
glob a directory with all the files below.  docs/patterns.md is the
users' page.

What runs inside a matched function matches with it: nested functions,
lambdas, generator expressions and (before 3.12, when they are functions of
their own) comprehensions, whose qualified names are ``hot.<locals>...``.

The script that ``python -m fastprof`` runs is the module ``__main__``; it
also answers to its file's stem (``main_alias``), so ``lines_prog:hot``
names ``hot`` in ``lines_prog.py`` however it is run (``script_stem``: a
``Profile`` made in a script run as ``python app.py`` takes ``app``).
"""

import os
import sys
import weakref
from fnmatch import fnmatchcase
from types import FunctionType, ModuleType

_LOCALS = ".<locals>."


def script_stem():
    """The stem of the running ``__main__``'s file (``app`` for ``python
    app.py``), the name ``__main__`` also answers to; None without a file."""
    main_file = getattr(sys.modules.get("__main__"), "__file__", None)
    return os.path.splitext(os.path.basename(main_file))[0] if main_file else None


class FunctionPatterns:
    """Parsed patterns; ``matches(code, module)`` also notes which matched."""

    def __init__(self, patterns, main_alias=None, keys=()):
        if isinstance(patterns, str):
            raise TypeError("lines must be a list of patterns, not a str")
        self.texts = []
        self._parsed = []
        for text in patterns:
            self._parsed.append(parse_pattern(text))
            self.texts.append(text)
        self.main_alias = main_alias
        # exact pstats keys (file, firstlineno, name): --lines-from
        self.keys = set(tuple(k) for k in keys)
        self.keys_matched = set()
        self.matched = set()  # indexes into texts
        self.inside = set()   # code objects nested in matched ones
        # 3.9/3.10: module name -> {code: __qualname__} (see _qualname)
        self._module_qualnames = {}

    def matches(self, code, module):
        """True if *code* (of module named *module*) is named by a pattern
        or defined inside a function that was."""
        if code in self.inside or self._named(code, module):
            # what is defined inside runs as part of it (3.9/3.10 have no
            # co_qualname to tell "hot.<locals>.inner" from "inner")
            todo = [code]
            while todo:
                for const in todo.pop().co_consts:
                    if isinstance(const, type(code)) and const not in self.inside:
                        self.inside.add(const)
                        todo.append(const)
            return True
        return False

    def _named(self, code, module):
        hit = False
        key = (code.co_filename, code.co_firstlineno, code.co_name)
        if key in self.keys:
            self.keys_matched.add(key)
            hit = True
        qualname = None
        for i, (kind, where, qual) in enumerate(self._parsed):
            if kind == "path":
                if not _path_matches(code.co_filename, where):
                    continue
            elif not self._module_matches(module, where):
                continue
            if qual is not None and qualname is None:
                qualname = self._qualname(code, module)
            if qual is None or _qualname_matches(qualname, qual):
                self.matched.add(i)
                hit = True
        return hit

    def _qualname(self, code, module):
        """``co_qualname``; 3.9/3.10 have none, so there it is the
        ``__qualname__`` of the function of *module* (or of its classes)
        whose code *code* is, else ``co_name`` (nested code matches through
        its enclosing function)."""
        qualname = getattr(code, "co_qualname", None)
        if qualname is not None:
            return qualname
        known = self._module_qualnames.get(module)
        if known is None or code not in known:
            # (re)read: a module being imported gains functions as it runs
            mod = sys.modules.get(module) if isinstance(module, str) else None
            known = self._module_qualnames[module] = _functions_qualnames(mod) if mod else {}
        return known.get(code, code.co_name)

    def _module_matches(self, module, where):
        if not isinstance(module, str):
            return False
        if module_covered(module, where):
            return True
        # the script: __main__, or __mp_main__ in multiprocessing's spawned children
        return (module in ("__main__", "__mp_main__") and self.main_alias is not None
                and module_covered(self.main_alias, where))

    def unmatched(self):
        """The patterns that named no function that ran."""
        return [t for i, t in enumerate(self.texts) if i not in self.matched]

    def keys_unmatched(self):
        return sorted(self.keys - self.keys_matched)


def parse_pattern(text):
    """``(kind, module or path glob, qualname glob or None)``; ValueError if malformed."""
    if not isinstance(text, str):
        raise TypeError("a function pattern must be a str, not %r" % (text,))
    qual = None
    body = text
    head, sep, tail = text.rpartition(":")
    if sep and "/" not in tail and not tail.endswith(".py"):
        body, qual = head, tail
        if not qual:
            raise ValueError("bad function pattern %r: nothing after ':'" % (text,))
    if not body:
        raise ValueError("bad function pattern %r: expected MODULE[:QUALNAME] or a "
                         "file path glob" % (text,))
    if "/" in body or body.endswith(".py"):
        return ("path", body, qual)
    if any(c.isspace() for c in body):
        raise ValueError("bad function pattern %r: a module name has no spaces" % (text,))
    return ("module", body, qual)


def _functions_qualnames(module):
    """``{code: __qualname__}`` of the functions in *module*'s namespace and
    its classes' (methods, static and class methods, properties), following
    ``__wrapped__``.  Reads dicts of exact types only, so no user code (a
    lazy module's or a proxy's attribute hooks) runs."""
    if type(module) is not ModuleType:
        return {}
    out = {}
    seen = set()
    todo = [module.__dict__]
    name = module.__dict__.get("__name__")  # classes imported from elsewhere are skipped
    while todo:
        for value in list(todo.pop().values()):
            kind = type(value)
            if kind in (staticmethod, classmethod):
                funcs = [value.__func__]
            elif kind is property:
                funcs = [value.fget, value.fset, value.fdel]
            elif issubclass(kind, type):
                namespace = _CLASS_DICT.__get__(value)
                if id(value) not in seen and namespace.get("__module__") == name:
                    seen.add(id(value))
                    todo.append(namespace)
                continue
            else:
                funcs = [value]
            for func in funcs:
                for _depth in range(_MAX_WRAPPED):  # a __wrapped__ cycle must not hang
                    if type(func) is not FunctionType:
                        break
                    # functools.wraps gives a wrapper its wrapped function's
                    # names: a name its code does not have is not its own
                    qualname = func.__qualname__
                    if type(qualname) is str and qualname.rpartition(".")[2] == func.__code__.co_name:
                        out[func.__code__] = qualname
                    func = func.__dict__.get("__wrapped__")
    return out


_MAX_WRAPPED = 16

# a code object's flag: a function's (lambdas and comprehensions included),
# not a class body's or a module's
_CO_NEWLOCALS = 0x2


def code_qualnames(codes):
    """``{pstats key: qualified name}`` for code objects without
    ``co_qualname`` (3.9/3.10), as the compiler names their functions:
    read from the modules that hold their files (``__qualname__`` of their
    functions and classes' methods, as ``--lines`` patterns match them) and,
    for what is nested in those or in a module body that ran, from the
    enclosing code (``f.<locals>.<lambda>``, ``C.m``).  What no module
    names (code made by ``exec``, a function defined inside a function that
    no module holds) is left out, as are names equal to the plain name;
    code objects sharing a key are listed together (``names.qualnames_of``)."""
    codes = [c for c in codes if type(c) is _CODE]
    # named before (each snapshot of a long run or of a test session asks again)
    missing = [c for c in codes if c not in _NAMED]
    known = {}  # code -> qualified name
    files = set()
    for name in {c.co_filename for c in missing}:
        if name.startswith("<frozen ") and name.endswith(">"):
            # importlib's bootstrap, frozen: its module is named in the file name
            known.update(_functions_qualnames(sys.modules.get(name[8:-1])))
        elif not name.startswith("<"):
            files.add(name)   # (the import system gives code and module one file name)
    if files:
        for module in list(sys.modules.values()):
            if type(module) is not ModuleType:
                continue
            filename = module.__dict__.get("__file__")
            if type(filename) is str and filename in files:
                known.update(_functions_qualnames(module))
    todo = list(known.items())   # (code, its qualified name, or None for a module body)
    todo.extend((c, None) for c in missing if c.co_name == "<module>")
    while todo:
        code, qual = todo.pop()
        for const in code.co_consts:
            if type(const) is not _CODE or const in known:
                continue
            if qual is None:
                name = const.co_name
            elif code.co_flags & _CO_NEWLOCALS:
                name = qual + _LOCALS + const.co_name
            else:
                name = qual + "." + const.co_name   # a class body's methods
            known[const] = name
            todo.append((const, name))
    found = {}
    for code in codes:
        qual = _NAMED.get(code)
        if qual is None:
            qual = known.get(code)
            if qual is not None:
                _NAMED[code] = qual
        if qual is not None:
            found.setdefault((code.co_filename, code.co_firstlineno, code.co_name), set()).add(qual)
    out = {}
    for key, quals in found.items():
        text = " | ".join(sorted(quals))   # model.QUALNAME_SEPARATOR
        if text != key[2]:
            out[key] = text
    return out


_CODE = type(code_qualnames.__code__)
# code object -> its qualified name, as code_qualnames found it
_NAMED = weakref.WeakKeyDictionary()

# a class's own namespace, read without its metaclass's attribute hooks
_CLASS_DICT = type.__dict__["__dict__"]


def module_covered(module, glob):
    """Whether *glob* names module *module* or a package holding it: a
    package is its ``__init__`` and all its submodules, so ``myapp`` (and
    ``myapp.*``) cover ``myapp`` and ``myapp.sub.mod``, ``myapp.d*`` covers
    ``myapp.db`` and ``myapp.db.query``."""
    if fnmatchcase(module, glob):
        return True
    if glob.endswith(".*") and fnmatchcase(module, glob[:-2]):
        return True  # "myapp.*": the package's own __init__ too
    end = module.rfind(".")
    while end > 0:
        if fnmatchcase(module[:end], glob):
            return True
        end = module.rfind(".", 0, end)
    return False


def _path_matches(filename, glob):
    """Whether the file path glob *glob* names *filename* or a directory
    holding it (``src/myapp`` covers every file below)."""
    path = os.path.abspath(filename)
    full = os.path.abspath(glob)
    # a relative glob also matches at any depth: "app/*.py"
    anywhere = None if os.path.isabs(glob) else "*/" + glob.lstrip("./")
    while True:
        if fnmatchcase(path, full) or (anywhere is not None and fnmatchcase(path, anywhere)):
            return True
        parent = os.path.dirname(path)
        if parent == path:
            return False
        path = parent


def _qualname_matches(qualname, glob):
    if fnmatchcase(qualname, glob):
        return True
    # code inside a matched function: "hot.<locals>.inner" matches "hot"
    end = qualname.find(_LOCALS)
    while end >= 0:
        if fnmatchcase(qualname[:end], glob):
            return True
        end = qualname.find(_LOCALS, end + 1)
    return False
