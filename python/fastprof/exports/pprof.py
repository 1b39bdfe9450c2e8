"""Google's pprof format: a gzip'd ``profile.proto`` (github.com/google/pprof,
proto/profile.proto), read by ``go tool pprof``, Pyroscope, Parca, Grafana.

What fastprof writes:

- ``sample_type``: ``calls``/``count`` then ``wall``/``nanoseconds`` (``cpu``
  for a profile timed with ``--clock cpu``, ``time`` for a custom timer);
  ``default_sample_type`` is the time, ``period_type`` the same with
  ``period`` 1, ``duration_nanos`` the total time;
- one ``Function`` per profiled function (name as people read it, pstats'
  ``file:line(name)`` as the system name, file name, first line; C
  functions have no file) and one ``Location`` (id = the function's id) with
  one ``Line`` on it, all in one ``Mapping`` that says functions, file names
  and lines are known, so no tool tries to symbolize;
- one ``Sample`` per call path (``_stacks``): leaf first, as the format
  wants; values: calls (summed per function they are cProfile's counts) and
  the path's own time in nanoseconds (summed: the profile's total, rounding
  carried from sample to sample);
- a profile with memory and call paths (``--memory --callpaths``) has four
  more sample types, Go's heap profile's: ``alloc_objects``/``count``,
  ``alloc_space``/``bytes`` (blocks and bytes each path allocated itself),
  ``inuse_objects``/``count`` and ``inuse_space``/``bytes`` (of those,
  still alive when the profile stopped);
- without recorded call paths the stacks are estimated from the caller graph:
  the ``comment`` says so and every sample carries the label
  ``call_stacks=estimated`` (``go tool pprof -tagfocus`` sees it).
"""

import gzip
from typing import BinaryIO, Dict, List, Optional

from ..data.model import is_builtin
from ..data.names import readable_name, stdname
from ..data.profile_file import ProfileData
from ._protobuf import Message
from ._stacks import profile_stacks

ESTIMATED_LABEL = ("call_stacks", "estimated")

# Profile, ValueType, Sample, Label, Mapping, Location, Line, Function field numbers
_P_SAMPLE_TYPE, _P_SAMPLE, _P_MAPPING, _P_LOCATION, _P_FUNCTION, _P_STRING_TABLE = 1, 2, 3, 4, 5, 6
_P_DURATION_NANOS, _P_PERIOD_TYPE, _P_PERIOD, _P_COMMENT, _P_DEFAULT_SAMPLE_TYPE = 10, 11, 12, 13, 14
_VT_TYPE, _VT_UNIT = 1, 2
_S_LOCATION_ID, _S_VALUE, _S_LABEL = 1, 2, 3
_L_KEY, _L_STR = 1, 2
_M_ID, _M_FILENAME, _M_HAS_FUNCTIONS, _M_HAS_FILENAMES, _M_HAS_LINE_NUMBERS = 1, 5, 7, 8, 9
_LOC_ID, _LOC_MAPPING_ID, _LOC_LINE = 1, 2, 4
_LINE_FUNCTION_ID, _LINE_LINE = 1, 2
_F_ID, _F_NAME, _F_SYSTEM_NAME, _F_FILENAME, _F_START_LINE = 1, 2, 3, 4, 5


# Go's heap profile's sample types, after calls and time (with memory)
MEMORY_SAMPLE_TYPES = (("alloc_objects", "count"), ("alloc_space", "bytes"),
                       ("inuse_objects", "count"), ("inuse_space", "bytes"))


def _memory_values(counts) -> List[int]:
    """A path's alloc_objects, alloc_space, inuse_objects, inuse_space."""
    allocations, allocated, frees, _freed, net = counts[:5]
    return [allocations, allocated, max(0, allocations - frees), max(0, net)]


def time_type(clock) -> str:
    """The sample type of the profile's times: what its clock measured."""
    if clock == "cpu":
        return "cpu"
    if clock == "custom":
        return "time"
    return "wall"  # tsc, monotonic, or a cProfile file (perf_counter)


class _Strings:
    """The string table: "" first, each string once."""

    def __init__(self):
        self.table: List[str] = [""]
        self.index: Dict[str, int] = {"": 0}

    def __call__(self, s: str) -> int:
        i = self.index.get(s)
        if i is None:
            i = self.index[s] = len(self.table)
            self.table.append(s)
        return i


def _value_type(strings: _Strings, type_: str, unit: str) -> Message:
    return Message().int(_VT_TYPE, strings(type_)).int(_VT_UNIT, strings(unit))


def pprof_bytes(data: ProfileData, title: str = "") -> bytes:
    """The gzip'd profile.proto of *data*."""
    return gzip.compress(profile_message(data, title).to_bytes(), mtime=0)


def write_pprof(data: ProfileData, out: BinaryIO, title: Optional[str] = None) -> None:
    out.write(pprof_bytes(data, title or ""))


def profile_message(data: ProfileData, title: str = "") -> Message:
    stacks = profile_stacks(data)
    s = _Strings()
    ttype = time_type(data.clock)
    prof = Message()
    prof.message(_P_SAMPLE_TYPE, _value_type(s, "calls", "count"))
    prof.message(_P_SAMPLE_TYPE, _value_type(s, ttype, "nanoseconds"))
    if stacks.memory is not None:
        for name, unit in MEMORY_SAMPLE_TYPES:
            prof.message(_P_SAMPLE_TYPE, _value_type(s, name, unit))

    label = None
    if not stacks.exact:
        label = Message().int(_L_KEY, s(ESTIMATED_LABEL[0])).int(_L_STR, s(ESTIMATED_LABEL[1]))
    acc = 0.0
    emitted = 0
    for i, sample in enumerate(stacks.samples):
        # rounding carried, so the nanoseconds add up to the total
        acc += sample.seconds * 1e9
        ns = max(0, int(round(acc)) - emitted)
        emitted += ns
        values = [sample.calls, ns]
        if stacks.memory is not None:
            values += _memory_values(stacks.memory[i])
        if not any(values):
            continue
        msg = Message().packed(_S_LOCATION_ID, [f + 1 for f in reversed(sample.stack)])
        msg.packed(_S_VALUE, values)
        if label is not None:
            msg.message(_S_LABEL, label)
        prof.message(_P_SAMPLE, msg)

    prof.message(_P_MAPPING, Message().int(_M_ID, 1).int(_M_FILENAME, s("python"))
                 .int(_M_HAS_FUNCTIONS, 1).int(_M_HAS_FILENAMES, 1).int(_M_HAS_LINE_NUMBERS, 1))
    for i, key in enumerate(stacks.functions):
        line = key[1] if isinstance(key[1], int) and key[1] > 0 else 0
        prof.message(_P_LOCATION, Message().int(_LOC_ID, i + 1).int(_LOC_MAPPING_ID, 1).message(
            _LOC_LINE, Message().int(_LINE_FUNCTION_ID, i + 1).int(_LINE_LINE, line)))
    for i, key in enumerate(stacks.functions):
        fn = Message().int(_F_ID, i + 1).int(_F_NAME, s(readable_name(key, data.qualnames)))
        fn.int(_F_SYSTEM_NAME, s(stdname(key)))
        if not is_builtin(key):
            fn.int(_F_FILENAME, s(str(key[0])))
        fn.int(_F_START_LINE, key[1] if isinstance(key[1], int) and key[1] > 0 else 0)
        prof.message(_P_FUNCTION, fn)

    comments = ["fastprof deterministic profile%s: exact call counts, %s time" % (
        " of " + title if title else "", ttype)]
    if not stacks.exact:
        comments.append("call stacks estimated from the caller graph (label call_stacks=estimated); "
                        "record exact ones with fastprof --callpaths")
    comment_ids = [s(c) for c in comments]
    period_type = _value_type(s, ttype, "nanoseconds")
    default_type = s(ttype)

    for text in s.table:
        prof.string(_P_STRING_TABLE, text)
    prof.int(_P_DURATION_NANOS, emitted)
    prof.message(_P_PERIOD_TYPE, period_type)
    prof.int(_P_PERIOD, 1)
    prof.packed(_P_COMMENT, comment_ids)
    prof.int(_P_DEFAULT_SAMPLE_TYPE, default_type)
    return prof
