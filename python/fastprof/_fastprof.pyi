"""Type stubs for fastprof._fastprof, the C core (csrc/fpy_module.c).

tests/test_stub.py checks that this file and the built module agree on
every Python version: every name of the module and of each type (the
`sys.version_info` blocks resolved), both ways; each function's parameters
(names, kinds, defaults) as inspect.signature() reads them from the C
docstrings; @final exactly where a type cannot be subclassed.
mypy's stubtest agrees as well (`python -m mypy.stubtest fastprof._fastprof`;
mypy is not a test dependency).
"""

import sys
from contextvars import ContextVar
from types import CodeType, FrameType
from typing import Any, Callable, Final, Iterable, Literal, Optional, Sequence, TypedDict, final

from _typeshed import structseq
from typing_extensions import disjoint_base

# 1 when events come from sys.monitoring (3.12+), 0 from the profile hook.
USES_MONITORING: int

@final
class profiler_subentry(structseq[Any], tuple[CodeType | str, int, int, float, float]):
    """One callee of a profiler_entry, as _lsprof's."""

    if sys.version_info >= (3, 10):
        __match_args__: Final = ("code", "callcount", "reccallcount", "totaltime", "inlinetime")

    @property
    def code(self) -> CodeType | str: ...
    @property
    def callcount(self) -> int: ...
    @property
    def reccallcount(self) -> int: ...
    @property
    def totaltime(self) -> float: ...
    @property
    def inlinetime(self) -> float: ...

@final
class profiler_entry(
    structseq[Any], tuple[CodeType | str, int, int, float, float, list[profiler_subentry] | None]
):
    """One function's totals, as _lsprof's (code: a str for C functions and <gc>)."""

    if sys.version_info >= (3, 10):
        __match_args__: Final = ("code", "callcount", "reccallcount", "totaltime", "inlinetime", "calls")

    @property
    def code(self) -> CodeType | str: ...
    @property
    def callcount(self) -> int: ...
    @property
    def reccallcount(self) -> int: ...
    @property
    def totaltime(self) -> float: ...
    @property
    def inlinetime(self) -> float: ...
    @property
    def calls(self) -> list[profiler_subentry] | None: ...

class _ClockInfo(TypedDict):
    clock: Literal["tsc", "monotonic", "cpu", "custom"]
    ticks_per_second: float

class _Compensation(TypedDict):
    compensate: bool
    removed: float  # seconds taken out of the times, every thread (since clear())
    delivery: tuple[int, int, int]  # whole cost, clock ticks: a return, a C call, a line
    resume: int  # whole cost of a generator's resume
    # per kind (call, return, resume, yield, c_call, c_return, line, unrecorded_call,
    # call_site): (pre, whole)
    # in clock ticks, pre the part taken from the time before the event's read
    costs: dict[str, tuple[int, int]]

@disjoint_base  # a C layout of its own: no class can inherit from it and another such base
class Profiler:
    """The C profiler behind fastprof.Profile (its class name is fastprof.Profile)."""

    def __init__(
        self,
        timer: Callable[[], float] | None = None,
        timeunit: float = 0.0,
        subcalls: bool = True,
        builtins: bool = True,
        *,
        threads: bool = False,
        clock: Literal["wall", "cpu"] = "wall",
        coroutines: Literal["call", "wall"] = "call",
        callpaths: bool = False,
        max_depth: int = 128,
        gc: bool = False,
        fast: bool = False,
        compensate: bool = True,  # False with a custom timer, whatever is given
        memory: bool = False,
    ) -> None: ...
    @property
    def enabled(self) -> bool: ...
    def enable(self, /) -> None: ...
    def disable(self, /, *, this_thread: bool = False) -> None: ...
    def _toggle_with(
        self, callback: Callable[..., object], /, *args: object
    ) -> None: ...  # disable(), callback(error, was_enabled, *args), enable() if it returned true
    def clear(self, /) -> None: ...
    # fastprof.middleware: one record per (thread, request id held by var), if the id is in open
    def _route_by(self, var: ContextVar[int] | None, open: set[int] | None, /) -> None: ...
    def _drop_route(self, request: int, /) -> None: ...
    def _route_times(self, request: int, /) -> list[tuple[int, int, float, float, float, float, int]]: ...
    def _set_scope(self, decide: Optional[Callable[[CodeType], bool]], /) -> None: ...
    def getstats(self, /, thread: int | None = None) -> list[profiler_entry]: ...
    # (entries_to_stats(getstats(thread)), the entries' codes), without the entries
    def _stats_and_codes(
        self, /, thread: int | None = None
    ) -> tuple[dict[tuple[str, int, str], tuple[Any, ...]], list[CodeType | str]]: ...
    # pytest --fastprof-per-test (modes/per_test.py): a profile one thread
    # recorded, as (its pstats table's marshal bytes, the trailer's qualified
    # names' marshal bytes or b"", the rows' codes, their files, calls, thread
    # id), without the rows of file skip_file (nor a C function only they
    # called whose name hides_c_function accepts); None: take _stats_and_codes
    def _stats_marshal(
        self, skip_file: str, hides_c_function: Callable[[str], object] | None, /
    ) -> tuple[bytes, bytes, list[CodeType | str], list[str], int, int] | None: ...
    # add this profiler's threads (id here, id there) into another's, never enabled
    def _fold_into(self, other: Profiler, pairs: Iterable[tuple[int, int]], /) -> None: ...
    # (index of the parent path or -1, code or C function name, calls, inlinetime, totaltime)
    def callpaths(self, /, thread: int | None = None) -> list[tuple[int, CodeType | str, int, float, float]]: ...
    # (id, ident, native_id) of each profiled thread
    def threads(self, /) -> list[tuple[int, int, int]]: ...  # those that recorded a call
    def memory(self, /) -> int: ...
    # memory=True (csrc/fpy_heap_rows.c): the traced heap's totals
    # {current, peak, blocks, allocations, lost, numpy}; each row's self counts
    # (code, caller code or None, thread id, allocations, allocated, frees,
    # freed, net, live_at_peak); testing only: tracemalloc and the heap
    # cleared (clear true: None) or read at one moment
    def _memory_totals(self, /) -> dict[str, int | bool]: ...
    def _memory_rows(
        self, /, thread: int | None = None
    ) -> list[tuple[CodeType | str, CodeType | str | None, int, int, int, int, int, int, int]]: ...
    # (code, caller code or None, thread id, allocated including callees, peak of one call)
    def _memory_calls(
        self, /, thread: int | None = None
    ) -> list[tuple[CodeType | str, CodeType | str | None, int, int, int]]: ...
    # callpaths(thread), each node followed by its memory:
    # allocations, allocated, frees, freed, net, live_at_peak, allocated_incl, peak
    def _memory_callpaths(
        self, /, thread: int | None = None
    ) -> list[tuple[int, CodeType | str, int, float, float, int, int, int, int, int, int, int, int]]: ...
    def _memory_vs_tracemalloc(self, clear: bool, /) -> tuple[tuple[int, int], tuple[int, int]] | None: ...
    # Private (recording/profiler.py): the records of ended threads folded
    # into their group's (csrc/fpy_thread_fold.c): now, then not until the
    # matching False; {record id: (group, threads)} of the groups' records;
    # the ids folded away since the last call
    def _hold_folds(self, on: bool, /) -> None: ...
    def _thread_groups(self, /) -> dict[int, tuple[int, int]]: ...
    def _take_folded(self, /) -> tuple[int, ...]: ...
    def clock_info(self, /) -> _ClockInfo: ...
    # Private (calibration.py, tests): compensation on or off, on even with a
    # custom timer (a fake clock in tests/test_compensation.py), and the
    # delivery cost per event in clock ticks, all before the event's read
    # (resume < 0: py's), or per kind in `costs` ({kind: (pre, whole)}, as
    # _Compensation's); only while disabled
    def _set_compensation(
        self, on: bool, py: int = 0, c: int = 0, line: int = 0, resume: int = -1,
        costs: dict[str, tuple[int, int]] | None = None, /
    ) -> None: ...
    def _compensation(self, /) -> _Compensation: ...  # private: what was removed

@final
class LineCounter:
    """Line-level profiling's per-line counts: the sys.monitoring callbacks
    on 3.12+; a C trace function before (trace_start ... trace_stop)."""

    # made by tp_new; disable: what jump() returns for an event it will not need again
    def __new__(cls, disable: object) -> LineCounter: ...
    def add(self, code: CodeType, /) -> None: ...
    def bind(self, profiler: Profiler, tool_id: int, /) -> None: ...  # before any line is counted
    # the sys.monitoring callbacks (LINE, JUMP, PY_RESUME/PY_THROW, PY_RETURN/PY_YIELD/PY_UNWIND)
    def line(self, code: CodeType, line: int, /) -> None: ...
    def jump(self, code: CodeType, src: int, dst: int, /) -> object: ...
    def resume(self, code: CodeType, offset: int, /, *rest: object) -> None: ...
    def exit(self, code: CodeType, offset: int, value: object, /) -> None: ...
    def close(self, /) -> None: ...
    def clear(self, /) -> None: ...
    # {code: {lineno: (hits, seconds)}}; request: a routed request's (Profiler._route_by)
    def stats(self, request: int = 0, /) -> dict[CodeType, dict[int, tuple[int, float]]]: ...
    # {code: {lineno: own seconds}}, for the code objects whose own times are exact
    def own_stats(self, request: int = 0, /) -> dict[CodeType, dict[int, float]]: ...
    def call_unowned(self, fn: Any, /, *args: Any) -> Any: ...
    def memory_stats(self, request: int = 0, /) -> dict[CodeType, dict[int, tuple[int, int, int | None]]]: ...
    def drop(self, request: int, /) -> None: ...  # a routed request's counts freed
    if sys.version_info < (3, 12):
        # the C trace function (3.9-3.11 only)
        def trace_start(self, decide: Callable[[CodeType, FrameType], object], /) -> None: ...
        def trace_stop(self, /) -> None: ...
        def trace_threads(self, /) -> None: ...  # the other running threads too, where no tracer is set
        def thread_trace(self, frame: FrameType, event: str, arg: object, /) -> None: ...
        def __call__(self, frame: FrameType, event: str, arg: object, /) -> None: ...

def _after_fork_child() -> None: ...
def _mem_fail_after(n: int, /) -> None: ...
def _test_set_dummy_evaluator(on: bool, /) -> None: ...  # testing only
# profiler.entries_to_stats's loop: {(file, line, name): (cc, nc, tt, ct, {caller: (nc, cc, tt, ct)})}
def _entries_stats(entries: Iterable[Sequence[Any]], /) -> dict[tuple[str, int, str], tuple[Any, ...]]: ...
# model.add_stats's loop: table added into out (rows as lists), keys by keys (chosen: its memo)
def _add_stats(
    out: dict[Any, list[Any]], table: dict[Any, Sequence[Any]], keys: Callable[[Any], Any],
    chosen: dict[Any, Any] | None = None, /
) -> None: ...
