"""What ``pytest --fastprof-counts`` makes the same before each test, so that
a test's counts do not depend on the run: which tests ran before it in its
process (``-k``, xdist), the random state, the gate's own options
(docs/gate.md, "It will not cry wolf").

- ``seed_generators``: random's global generator, tempfile's name
  generator, the ``random.Random`` instances modules keep at their top
  level (``_randrange = random.Random().randrange``: more-itertools'
  ``is_prime``), and numpy's legacy global one when numpy is imported,
  seeded from the test's node id, as pytest-randomly seeds the global ones
  (``--fastprof-counts-no-seed`` turns it off);
- ``Warmers``: process-wide state that a standard module creates at its
  first use (``WARMERS``), created before the first test instead of inside
  whichever test uses it first;
- ``CacheReset``: the caches earlier tests fill, cleared before each test;
- ``argv_without_gate_options``: ``sys.argv`` as the tests see it, without
  the gate's options (a test that reads ``sys.argv`` counts the same with or
  without ``--fastprof-counts-report``).
"""

import functools
import gc
import re
import sys
import types
import weakref
import zlib

GATE_PREFIX = "--fastprof-counts"


# ---------------------------------------------------------------- seeds

def seed_of(nodeid: str) -> int:
    """The seed of test *nodeid*: the same in every process and run
    (``hash()`` of a str is not)."""
    return zlib.crc32(nodeid.encode("utf-8", "surrogateescape"))


def seed_generators(nodeid: str) -> None:
    """Seed random's global generator, tempfile's name generator, the
    modules' own generators (``module_generators``), and numpy's legacy
    global one when numpy is imported, from the test's node id."""
    seed = seed_of(nodeid)
    random = sys.modules.get("random")
    if random is not None:
        random.seed(seed)
        for rng in module_generators(random):
            rng.seed(seed)
    # tempfile's name generator: its random.Random, made at the first
    # temporary file (``Warmers``), goes on from test to test; before 3.12
    # a name's choice() calls getrandbits a number of times that depends
    # on that state
    names = getattr(sys.modules.get("tempfile"), "_name_sequence", None)
    rng = getattr(names, "_rng", None)   # (not .rng: that property would make one)
    if isinstance(rng, getattr(random, "Random", ())):
        rng.seed(seed)
    numpy = sys.modules.get("numpy")
    legacy = getattr(getattr(numpy, "random", None), "seed", None)
    if legacy is not None:
        try:
            legacy(seed)
        except Exception:  # a numpy stand-in, a broken install: not the gate's business
            pass


class _ModuleGenerators:
    """The generators modules keep at their top level, found again only when
    the number of imported modules changed (a scan reads every module's
    globals: about 10 ms)."""

    def __init__(self):
        self.modules = -1
        self.found = []

    def __call__(self, random):
        if len(sys.modules) != self.modules:
            self.modules = len(sys.modules)
            self.found = _scan_modules(random)
        return self.found


def _scan_modules(random):
    """random.Random instances (not SystemRandom, not random's own) held by a
    module's global, directly or as the object of a bound method."""
    kinds, system, own = random.Random, random.SystemRandom, getattr(random, "_inst", None)
    methods = (types.MethodType, types.BuiltinMethodType)
    found = {}
    for module in list(sys.modules.values()):
        # types only, never an attribute of the value itself: a module's
        # global may be a proxy whose every attribute runs code
        if not issubclass(type(module), types.ModuleType):
            continue
        names = object.__getattribute__(module, "__dict__")  # (a lazy module's own would load it)
        for value in list(names.values()):
            if type(value) in methods:
                value = value.__self__
            cls = type(value)
            if issubclass(cls, kinds) and not issubclass(cls, system) and value is not own:
                found[id(value)] = value
    return list(found.values())


module_generators = _ModuleGenerators()


# ---------------------------------------------------------------- first uses

def _warm_tempfile(tempfile):
    # the temporary directory (found by writing a file in each candidate) and
    # the name generator's random.Random, both made at the first temporary file
    tempfile.gettempdir()
    names = getattr(tempfile, "_get_candidate_names", None)
    if names is not None:
        next(names())


def _warm_mimetypes(mimetypes):
    if not getattr(mimetypes, "inited", True):
        mimetypes.init()   # the types database, read at the first guess_type()


def _warm_platform(platform):
    tuple(platform.uname())   # cached by the first call, its processor by the first read
    platform.python_implementation()


def _warm_sysconfig(sysconfig):
    sysconfig.get_config_vars()


# (module, what its first use creates, how it is made now); a module is
# warmed before the first test that runs after it is imported (most are
# imported at collection, before any test)
WARMERS = (
    ("tempfile", "the temporary directory and the name generator's random.Random", _warm_tempfile),
    ("mimetypes", "the types database", _warm_mimetypes),
    ("platform", "uname() and the interpreter's version, cached", _warm_platform),
    ("sysconfig", "the configuration variables", _warm_sysconfig),
)


class Warmers:
    """Runs each warmer of ``WARMERS`` once, when its module is imported."""

    def __init__(self, warmers=WARMERS):
        self.pending = list(warmers)
        self.problems = []

    def __call__(self):
        if not self.pending:
            return
        left = []
        for name, what, warm in self.pending:
            module = sys.modules.get(name)
            if module is None:
                left.append((name, what, warm))
                continue
            try:
                warm(module)
            except Exception as exc:  # a sandbox without a temp dir...: counted as it comes
                self.problems.append("could not warm %s (%s): %s" % (name, what, exc))
        self.pending = left


# ---------------------------------------------------------------- caches

class CacheReset:
    """Clears the caches that earlier tests fill before each test: every
    ``functools.lru_cache``/``cache`` function (found once, then again when
    more modules are imported), ``re``'s and ``_strptime``'s (the regular
    expression of each ``strptime`` format)."""

    def __init__(self):
        self.modules = -1
        self.caches = []

    def __call__(self):
        if len(sys.modules) != self.modules:
            self.modules = len(sys.modules)
            kind = getattr(functools, "_lru_cache_wrapper", None)
            self.caches = [weakref.ref(o) for o in gc.get_objects()
                           if type(o) is kind and hasattr(o, "cache_clear")]
        for ref in self.caches:
            cache = ref()
            if cache is not None:
                cache.cache_clear()
        re.purge()
        strptime = sys.modules.get("_strptime")
        regexes = getattr(strptime, "_regex_cache", None)
        if isinstance(regexes, dict):
            regexes.clear()


# ---------------------------------------------------------------- the command line

def argv_without_gate_options(argv, takes_value):
    """*argv* without the gate's options (``--fastprof-counts...``, and the
    value after one that takes a value when it is not written with '=')."""
    out = []
    skip = False
    for arg in argv:
        if skip:
            skip = False
            continue
        if arg.startswith(GATE_PREFIX):
            name = arg.split("=", 1)[0]
            skip = "=" not in arg and name in takes_value
            continue
        out.append(arg)
    return out
