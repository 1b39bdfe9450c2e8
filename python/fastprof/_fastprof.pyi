"""Type stubs for fastprof._fastprof, the C core (csrc/fpy_module.c).

tests/test_stub.py checks that this file and the built module agree: the
same members, and each function's parameters (names, kinds, defaults) as
inspect.signature() reads them from the C docstrings.
"""

import sys
from types import CodeType
from typing import Any, Callable, Final, Literal, Optional, TypedDict, final

from _typeshed import structseq

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
    ) -> None: ...
    @property
    def enabled(self) -> bool: ...
    def enable(self, /) -> None: ...
    def disable(self, /, *, this_thread: bool = False) -> None: ...
    def _toggle_with(
        self, callback: Callable[..., object], /, *args: object
    ) -> None: ...  # disable(), callback(error, was_enabled, *args), enable() if it returned true
    def clear(self, /) -> None: ...
    def _set_scope(self, decide: Optional[Callable[[CodeType], bool]], /) -> None: ...
    def _line_clock(self, code: CodeType, /) -> tuple[float, float | None]: ...  # (now, mark) for line own times
    def getstats(self, /, thread: int | None = None) -> list[profiler_entry]: ...
    # (index of the parent path or -1, code or C function name, calls, inlinetime, totaltime)
    def callpaths(self, /, thread: int | None = None) -> list[tuple[int, CodeType | str, int, float, float]]: ...
    # (id, ident, native_id) of each profiled thread
    def threads(self, /) -> list[tuple[int, int, int]]: ...
    def memory(self, /) -> int: ...
    def clock_info(self, /) -> _ClockInfo: ...

class LineCounter:
    """Line-level profiling's sys.monitoring callbacks (used on 3.12+)."""

    def __init__(self, disable: object) -> None: ...
    def add(self, code: CodeType, /) -> None: ...
    def line(self, code: CodeType, line: int, /) -> None: ...
    def jump(self, code: CodeType, src: int, dst: int, /) -> object: ...
    def resume(self, code: CodeType, offset: int, /, *rest: object) -> None: ...
    def exit(self, code: CodeType, offset: int, value: object, /) -> None: ...
    def close(self, /) -> None: ...
    def clear(self, /) -> None: ...
    def stats(self, /) -> dict[CodeType, dict[int, tuple[int, float]]]: ...

def _after_fork_child() -> None: ...
def _mem_fail_after(n: int, /) -> None: ...
def _test_set_dummy_evaluator(on: bool, /) -> None: ...  # testing only
