"""csrc/fpy_compat.h tells the truth: it is the only C file that tests the
Python version or touches a private CPython internal, and every internal it
touches is in its list of them (with the versions it was checked on)."""
import re
from pathlib import Path

CSRC = Path(__file__).resolve().parent.parent / "csrc"
COMPAT = CSRC / "fpy_compat.h"

# Version tests, private (underscore) API, and the private struct fields
# the compat header wraps.
PRIVATE = re.compile(r"PY_VERSION_HEX|\b_Py[A-Za-z]\w*|\bc_profile(?:func|obj)\b|\bgi_frame_state\b"
                     r"|\bf_stacktop\b|->f_state\b|\buse_tracing\b")


def _code(text):
    """C source without its comments and string literals."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    return re.sub(r'"(?:\\.|[^"\\])*"', '""', text)


def test_only_the_compat_header_tests_versions_or_touches_internals():
    offenders = {}
    for path in sorted(CSRC.glob("*.[ch]")):
        if path == COMPAT:
            continue
        found = sorted(set(PRIVATE.findall(_code(path.read_text(encoding="utf-8")))))
        if found:
            offenders[path.name] = found
    assert offenders == {}


def test_every_internal_the_compat_header_uses_is_listed():
    text = COMPAT.read_text(encoding="utf-8")
    start = text.index("Private CPython internals ===")
    listing = text[start:text.index("*/", start)]
    used = set(PRIVATE.findall(_code(text))) - {"PY_VERSION_HEX"}
    used = {name.lstrip("->") for name in used}
    assert used, "the pattern no longer finds what it checks"
    assert sorted(name for name in used if name not in listing) == []
