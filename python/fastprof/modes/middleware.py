"""Per-request profiles of a web service (docs/web-services.md).

    app = WSGIMiddleware(app, "/tmp/profiles", slow_ms=200)       # Flask: app.wsgi_app = ...
    app = WSGIMiddleware(app, "/tmp/profiles", every=50, lines=["myapp.views"])  # + line by line
    app = ASGIMiddleware(app, "/tmp/profiles", every=100)         # FastAPI, Starlette
    MIDDLEWARE = ["fastprof.middleware.DjangoMiddleware", ...]    # FASTPROF = {...} in settings

A request's profile holds the work done for it wherever it ran: its
thread or asyncio task, the tasks it started, the worker threads that ran
its sync code (Starlette's run_in_threadpool, anyio and asgiref worker
threads, run_in_executor with the context copied), and nothing of the
requests running at the same time; with ``lines=``, the line hits and
times of the functions it names, the same way; with ``memory=True``, the
bytes each function allocated for it (docs/memory.md).
How: one profiler per middleware,
``threads=True``, routing its events (C ``Profiler._route_by``,
csrc/fpy_route.c) by a context variable that holds the request's id while
the app runs; contextvars follow the request into its tasks and into the
worker threads, which run in a copy of its context. The profiler is
enabled while at least one request is being recorded (with ``slow_ms``,
from the first request on: every request is recorded then).

Which requests: ``trigger`` (a header or query parameter name: the
requests that carry it, off unless given), ``every`` (one in N),
``slow_ms`` (every request is recorded, only those slower than the
threshold are kept). Kept profiles are written by a background thread,
atomically, to ``directory``: ``.prof`` (or any format of formats.py),
named with the time, method, path, status and duration, the request in
the file's trailer with where its time went (in its recorded frames, on
its threads' CPU, its task suspended: C ``Profiler._route_times``); at
most ``max_files`` of them (the oldest removed).
Nothing is ever served to a client. A directory that cannot be written
(full disk, no permission) is logged once (logger ``fastprof.middleware``)
and the requests go on unharmed.
"""

import contextvars
import itertools
import logging
import os
import queue
import re
import threading
import time
import weakref

from ..data import formats
from ..recording.profiler import Profile, entries_to_stats

__all__ = ["WSGIMiddleware", "ASGIMiddleware", "DjangoMiddleware", "RequestProfiler"]

log = logging.getLogger("fastprof.middleware")

# request ids the routing takes (csrc/fpy_route.h): 31 bits, not 0
_MAX_REQUEST = 0x7FFFFFFF
# a profile file of ours: starts with its time (so names sort by time)
_OURS = re.compile(r"^\d{8}T\d{6}\.\d{3}-")
_SLUG = re.compile(r"[^A-Za-z0-9._-]+")


class _Request:
    __slots__ = ("rid", "method", "path", "keep", "t0", "wall", "status", "home", "in_task")

    def __init__(self, rid, method, path, keep, in_task):
        self.rid = rid
        self.method = method
        self.path = path
        self.keep = keep
        self.status = 0
        self.home = threading.get_ident()  # its thread (an async one's event loop)
        self.in_task = in_task  # runs in an asyncio task (ASGI, async Django)
        self.wall = time.time()
        self.t0 = time.perf_counter()


def _positive(name, value, kind):
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, kind) or value <= 0:
        raise ValueError("%s must be a positive number, not %r" % (name, value))
    return value


class RequestProfiler:
    """What the middlewares share: which requests are recorded, the
    profiler and its routing, the files. One per middleware instance.

    The arguments are the middlewares' (``slow_ms``, ``every``, ``trigger``,
    ``format``) and: ``max_files`` (files kept in the directory, default
    200), ``only`` (function patterns, as ``Profile(only=...)``), ``lines``
    (function patterns, as ``Profile(lines=...)``: those functions' lines
    too, each request's own hits and times), ``fast``
    (``Profile(fast=True)``: Python functions only, cheaper), ``clock``
    ("wall" or "cpu"), ``memory`` (``Profile(memory=True)``: the bytes
    each function allocated for the request, in its file).
    """

    def __init__(self, directory, *, slow_ms=None, every=None, trigger=None, format="prof",
                 max_files=200, only=None, fast=False, clock="wall", lines=None, memory=False):
        self.directory = os.fspath(directory)
        self.slow_ms = _positive("slow_ms", slow_ms, (int, float))
        self.every = _positive("every", every, int)
        if trigger is not None and (not isinstance(trigger, str) or not trigger.strip()):
            raise ValueError("trigger must be a header / query parameter name, not %r" % (trigger,))
        self.trigger = trigger.strip() if trigger else None
        if self.slow_ms is None and self.every is None and self.trigger is None:
            raise ValueError("say which requests to profile: slow_ms=, every= and/or trigger=")
        fmt = "pstats" if format == "prof" else format
        row = formats.check_format(fmt)
        self.format = row.name
        self.suffix = row.suffixes[0] if row.suffixes else "." + row.name
        self.max_files = _positive("max_files", max_files, int)
        self._profile = Profile(threads=True, only=only, fast=fast, clock=clock,
                                callpaths=row.tree, lines=lines, memory=memory)
        self._var = contextvars.ContextVar("fastprof.middleware.request")
        self._open = set()
        self._profile.route_by(self._var, self._open)
        self._lock = threading.Lock()
        self._active = 0
        self._ids = itertools.count(1)
        self._seen = itertools.count()
        self._header = ("HTTP_" + self.trigger.upper().replace("-", "_")) if self.trigger else None
        self._header_b = self.trigger.lower().encode("latin-1") if self.trigger else None
        self._query_b = self.trigger.encode("latin-1") if self.trigger else None
        # the profiles kept, to write: (name, data); None ends the writer.
        # A SimpleQueue, which a weakref callback may put into (the one
        # that ends the writer of a middleware dropped)
        self._queue = queue.SimpleQueue()
        self._pending = 0    # profiles queued, not written yet (_MAX_QUEUED at most)
        self._writer = None
        self._at_exit = False  # the writer's end and the flush at exit registered
        self._logged = set()
        self.written = 0  # files written (tests, status)
        self.failed = 0   # profiles not written (a write failed, the queue was full)

    # -- which requests -----------------------------------------------------

    def start(self, method, path, triggered=False, in_task=False):
        """A _Request to record, or None (not recorded); never raises.
        *in_task*: the request runs in an asyncio task (its profile then
        says how long the task was suspended)."""
        try:
            return self._start(method, path, triggered, in_task)
        except Exception as exc:
            self._log_once("start", "cannot profile a request: %s", exc)
            return None

    def _start(self, method, path, triggered, in_task):
        keep = triggered
        if not keep and self.every is not None:
            keep = next(self._seen) % self.every == 0
        if not keep and self.slow_ms is None:
            return None
        with self._lock:
            rid = next(self._ids) % _MAX_REQUEST or next(self._ids)
            req = _Request(rid, method, path, keep, in_task)
            self._open.add(rid)
            if self._active == 0:
                try:
                    if self._profile.options["memory"] and not self._profile.enabled:
                        # the blocks freed while it was off were not seen:
                        # the heap starts again (no request's records are left)
                        self._profile.clear()
                    self._profile.enable()
                except Exception as exc:  # another profiler holds the frame evaluator...
                    self._open.discard(rid)
                    self._log_once("enable", "cannot profile requests: %s", exc)
                    return None
            self._active += 1
        req.t0 = time.perf_counter()  # the duration leaves the enable out
        return req

    def enter(self, req):
        """Route what runs in this context (and what it starts) to *req*."""
        return self._var.set(req.rid)

    def leave(self, token):
        self._var.reset(token)

    def finish(self, req):
        """The request ended: keep its profile (written in the background) or
        drop it. Never raises: a profile is not worth a failed request."""
        try:
            self._finish(req)
        except Exception as exc:
            self._log_once("finish", "cannot finish a request's profile: %s", exc)

    def _finish(self, req):
        duration = time.perf_counter() - req.t0
        keep = req.keep or (self.slow_ms is not None and duration * 1000.0 >= self.slow_ms)
        data = None
        self._open.discard(req.rid)  # nothing more is recorded for it
        try:
            if keep:  # read outside the lock: other requests start meanwhile
                times = self._profile.request_times(req.rid)
                data = self._collect(req.rid, times)
                data.request = _request_record(req, duration, data.stats, times)
        except Exception as exc:
            self._log_once("collect", "cannot read a request's profile: %s", exc)
        finally:
            self._profile.drop_request(req.rid)
        with self._lock:
            self._active -= 1
            # slow_ms records every request: it stays enabled (an enable
            # and a disable cost more than the events between requests)
            if self._active == 0 and self.slow_ms is None:
                try:
                    self._profile.disable()
                except Exception as exc:
                    self._log_once("disable", "profiler error: %s", exc)
        if data is not None:
            self._submit(req, duration, data)

    def triggered_wsgi(self, environ):
        if self._header is None:
            return False
        value = environ.get(self._header)
        if value is not None and value not in ("", "0"):
            return True
        return _query_has(environ.get("QUERY_STRING", "").encode("latin-1", "replace"), self._query_b)

    def triggered_asgi(self, scope):
        if self._header_b is None:
            return False
        for name, value in scope.get("headers") or ():
            if name.lower() == self._header_b and value not in (b"", b"0"):
                return True
        return _query_has(scope.get("query_string") or b"", self._query_b)

    # -- the profile --------------------------------------------------------

    def _collect(self, rid, times):
        """The profile of request *rid*, from its records (*times*: the
        profiler's ``request_times``, one per thread that ran it)."""
        from ..data import cost_note
        from ..data.names import qualnames_of
        from ..data.profile_file import ProfileData
        from ..tools.merge import merge_profiles  # (deferred: only kept requests need them)
        prof = self._profile
        memory = prof.options["memory"]
        names = {t.ident: t.name for t in threading.enumerate()}
        parts, threads = [], []
        for tid, ident, *_times in sorted(times):
            entries = prof.getstats(tid)
            if not entries:
                continue
            stats = entries_to_stats(entries)
            part = ProfileData(stats, qualnames=qualnames_of(e.code for e in entries))
            if prof.options["callpaths"]:
                part.callpaths = prof.callpaths_file(tid)
            thread = {"id": len(threads), "ident": ident,
                      "name": names.get(ident, "thread %d" % ident), "stats": stats}
            if memory:  # the bytes its functions allocated for this request (the
                # context variable's reset, whose return is in no request, not shown)
                part.memory = thread["memory"] = {
                    key: row for key, row in prof.memory_stats(threads={tid}).items() if key in stats}
            parts.append(part)
            threads.append(thread)
        data = merge_profiles(parts) if parts else ProfileData({})
        if memory:  # (the process's, as in any profile: not a sum over threads)
            data.memory_totals = prof.memory_totals()
        data.threads = threads if len(threads) > 1 else []
        data.clock = prof.clock_info()["clock"]
        data.only = prof.options.get("only")
        data.fast = prof.options["fast"]
        # what compensation took out of this request's records, as any
        # profile says it (the views' "profiler cost removed" line)
        data.compensation = cost_note.record(prof.compensation_info()["compensate"],
                                             sum(t[4] for t in times),
                                             sum(int(v[1]) for v in data.stats.values()),
                                             sum(t[5] for t in times))
        # lines= (line counts are routed by request too, csrc/fpy_lines.c);
        # lines lost for lack of memory cost the file its lines, not its functions
        try:
            data.lines, data.lines_own, data.lines_memory = prof.request_lines(rid)
        except MemoryError as exc:
            self._log_once("lines", "%s: that request's profile is written without line stats", exc)
        return data

    # -- the files ----------------------------------------------------------

    def file_name(self, req, duration):
        stamp = time.strftime("%Y%m%dT%H%M%S", time.localtime(req.wall))
        slug = _SLUG.sub("_", req.path.strip("/"))[:80] or "_"
        # the process and request ids: several workers may share the directory
        return "%s.%03d-%s-%s-%s-%dms-%d.%d%s" % (
            stamp, int(req.wall * 1000) % 1000, _SLUG.sub("_", req.method)[:10] or "_", slug,
            req.status or "none", int(duration * 1000), os.getpid(), req.rid, self.suffix)

    def _submit(self, req, duration, data):
        name = self.file_name(req, duration)
        with self._lock:
            if self._pending >= _MAX_QUEUED:
                self.failed += 1
                full = True
            else:
                full = False
                self._pending += 1
                self._queue.put((name, data))
                if self._writer is None:
                    # the thread holds this object weakly, and it ends when
                    # this object goes: a middleware dropped is freed, its
                    # profiler and records with it
                    self._writer = threading.Thread(target=_write_loop, daemon=True,
                                                    args=(weakref.ref(self), self._queue),
                                                    name="fastprof-middleware-writer")
                    self._writer.start()
                    if not self._at_exit:
                        self._at_exit = True
                        weakref.finalize(self, self._queue.put, None).atexit = False
                        import atexit  # (deferred: once a profile is kept)
                        atexit.register(_flush_at_exit, weakref.ref(self))  # the profiles kept are written
        if full:
            self._log_once("full", "profiles are made faster than they are written: some dropped")

    def _written(self):
        with self._lock:
            self._pending -= 1

    def _write(self, name, data):
        from ..exports import export  # (deferred: the writers are imported when used)
        try:
            os.makedirs(self.directory, exist_ok=True)
            export(data, os.path.join(self.directory, name), self.format, title=name)
            self.written += 1
            self._prune()
        except Exception as exc:  # a full disk, no permission, a file in the way...
            self.failed += 1
            self._log_once("write", "cannot write request profiles to %s: %s "
                           "(requests go on; said once)", self.directory, exc)

    def _prune(self):
        ours = sorted(n for n in os.listdir(self.directory)
                      if _OURS.match(n) and n.endswith(self.suffix))
        for name in ours[:max(0, len(ours) - self.max_files)]:
            try:
                os.unlink(os.path.join(self.directory, name))
            except OSError:
                pass

    def close(self, timeout=5.0):
        """Stop profiling (slow_ms keeps the profiler enabled between
        requests), write the profiles kept so far and end the writer
        thread (a later kept profile starts another)."""
        with self._lock:
            if self._profile.enabled and self._active == 0:
                try:
                    self._profile.disable()
                except Exception as exc:
                    self._log_once("disable", "profiler error: %s", exc)
        done = self.flush(timeout)
        with self._lock:
            writer, self._writer = self._writer, None
            if writer is not None:
                self._queue.put(None)
        if writer is not None:
            writer.join(timeout)
        return done

    def flush(self, timeout=None):
        """Wait until the profiles kept so far are written (tests, shutdown)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self._pending:
            if deadline is not None and time.monotonic() > deadline:
                return False
            time.sleep(0.01)
        return True

    def _log_once(self, what, msg, *args):
        if what in self._logged:
            return
        self._logged.add(what)
        log.warning(msg, *args)


# profiles waiting to be written at most; more are dropped (and said once)
_MAX_QUEUED = 64


def _write_loop(ref, profiles):
    """The writer thread of the RequestProfiler *ref* (a weak reference, so
    that a middleware dropped is freed): writes the *profiles* queued until
    it gets None (close(), or its RequestProfiler gone)."""
    while True:
        item = profiles.get()
        rp = ref()
        if item is None or rp is None:
            return
        try:
            rp._write(*item)
        finally:
            rp._written()
            rp = None


def _flush_at_exit(ref):
    rp = ref()
    if rp is not None:
        rp.flush(5.0)


def _request_record(req, duration, stats, times):
    """The trailer's ``request`` (data/profile_file.py): what the request
    was, and where its time went: ``duration`` (wall), ``recorded`` (in its
    recorded frames, every thread's), ``cpu`` (its threads' CPU time while
    in its context) and, for a request in an asyncio task, ``suspended``
    (its event loop's thread was not running it)."""
    record = {"method": req.method, "path": req.path, "status": int(req.status),
              "duration": duration, "time": req.wall,
              "recorded": sum(float(v[2]) for v in stats.values()),
              "cpu": sum(t[3] for t in times)}
    if req.in_task:
        ran = sum(t[2] for t in times if t[1] == req.home)
        record["suspended"] = max(0.0, duration - ran)
    return record


def _query_has(query, name):
    """Whether the query string (bytes) has parameter *name* (bytes) set to
    anything but '' or '0' ('?profile', '?profile=1')."""
    if not query or name not in query:
        return False
    for part in query.split(b"&"):
        key, _eq, value = part.partition(b"=")
        if key == name:
            return value not in (b"0",) and (value != b"" or not _eq)
    return False


# -- WSGI ---------------------------------------------------------------------

class WSGIMiddleware:
    """``WSGIMiddleware(app, directory, *, slow_ms=None, every=None,
    trigger=None, format="prof", max_files=200, only=None, lines=None, fast=False,
    memory=False)``:
    a WSGI app that profiles the requests of *app* (see the module doc).
    Flask: ``app.wsgi_app = WSGIMiddleware(app.wsgi_app, DIR, ...)``."""

    def __init__(self, app, directory, *, slow_ms=None, every=None, trigger=None, format="prof",
                 **options):
        self.app = app
        self.profiler = RequestProfiler(directory, slow_ms=slow_ms, every=every, trigger=trigger,
                                        format=format, **options)

    def __call__(self, environ, start_response):
        rp = self.profiler
        req = rp.start(environ.get("REQUEST_METHOD", "GET"), environ.get("PATH_INFO", "/"),
                       rp.triggered_wsgi(environ))
        if req is None:
            return self.app(environ, start_response)

        def start(status, headers, exc_info=None):
            try:
                req.status = int(str(status)[:3])
            except ValueError:
                pass
            return start_response(status, headers, exc_info)

        token = rp.enter(req)
        try:
            result = self.app(environ, start)
        except BaseException:
            rp.leave(token)
            req.status = req.status or 500
            rp.finish(req)
            raise
        rp.leave(token)
        return _Body(result, rp, req)


class _Body:
    """The app's response body, iterated and closed within the request."""

    def __init__(self, result, rp, req):
        self._result = result
        self._it = None
        self._rp = rp
        self._req = req
        self._done = False

    def __iter__(self):
        rp, req = self._rp, self._req
        token = rp.enter(req)
        try:
            it = iter(self._result)
        finally:
            rp.leave(token)
        while True:
            token = rp.enter(req)
            try:
                chunk = next(it)
            except StopIteration:
                return
            finally:
                rp.leave(token)
            yield chunk

    def close(self):
        if self._done:
            return
        self._done = True
        close = getattr(self._result, "close", None)
        token = self._rp.enter(self._req)
        try:
            if close is not None:
                close()
        finally:
            self._rp.leave(token)
            self._rp.finish(self._req)

    def __del__(self):  # a server that never calls close() (it must): not left open
        if not self._done:
            self._done = True
            self._rp.finish(self._req)


# -- ASGI ---------------------------------------------------------------------

class ASGIMiddleware:
    """``ASGIMiddleware(app, directory, *, slow_ms=None, every=None,
    trigger=None, format="prof", max_files=200, only=None, lines=None, fast=False,
    memory=False)``:
    an ASGI app that profiles the HTTP requests of *app* (see the module
    doc). FastAPI / Starlette: ``app.add_middleware(ASGIMiddleware,
    directory=DIR, ...)`` or ``app = ASGIMiddleware(app, DIR, ...)``."""

    def __init__(self, app, directory, *, slow_ms=None, every=None, trigger=None, format="prof",
                 **options):
        self.app = app
        self.profiler = RequestProfiler(directory, slow_ms=slow_ms, every=every, trigger=trigger,
                                        format=format, **options)

    async def __call__(self, scope, receive, send):
        rp = self.profiler
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        req = rp.start(scope.get("method", "GET"), scope.get("path", "/"), rp.triggered_asgi(scope),
                       in_task=True)
        if req is None:
            await self.app(scope, receive, send)
            return

        async def sending(message):
            if message.get("type") == "http.response.start":
                req.status = int(message.get("status", 0))
            await send(message)

        token = rp.enter(req)
        try:
            await self.app(scope, receive, sending)
        finally:
            rp.leave(token)
            if not req.status:
                req.status = 500
            rp.finish(req)


# -- Django -------------------------------------------------------------------

def _django_profiler():
    from django.conf import settings  # (deferred: Django only where used)
    from django.core.exceptions import ImproperlyConfigured
    options = dict(getattr(settings, "FASTPROF", None) or {})
    directory = options.pop("directory", None)
    if directory is None:
        raise ImproperlyConfigured("fastprof.middleware.DjangoMiddleware needs settings.FASTPROF "
                                   "= {'directory': ..., 'slow_ms': ... | 'every': ... | 'trigger': ...}")
    try:
        return RequestProfiler(directory, **options)
    except (TypeError, ValueError) as exc:
        raise ImproperlyConfigured("settings.FASTPROF: %s" % exc) from None


class DjangoMiddleware:
    """``MIDDLEWARE = ["fastprof.middleware.DjangoMiddleware", ...]`` (first,
    so that it sees the others' work), configured by ``settings.FASTPROF``:
    a dict of ``directory`` and the keys of WSGIMiddleware (``slow_ms``,
    ``every``, ``trigger``, ``format``, ``max_files``, ``only``, ``lines``, ``fast``,
    ``memory``).
    Sync and async (ASGI) both; the sync views Django runs in worker
    threads (asgiref's sync_to_async) are in the request's profile."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response):
        self.get_response = get_response
        self.profiler = _django_profiler()
        import asyncio  # (deferred: imported by Django anyway)
        self._async = asyncio.iscoroutinefunction(get_response)
        if self._async:
            try:
                from asgiref.sync import markcoroutinefunction
                markcoroutinefunction(self)
            except ImportError:  # asgiref < 3.6: Django checks _is_coroutine
                self._is_coroutine = asyncio.coroutines._is_coroutine

    def __call__(self, request):
        if self._async:
            return self._acall(request)
        rp = self.profiler
        req = rp.start(request.method, request.path_info, self._triggered(request))
        if req is None:
            return self.get_response(request)
        token = rp.enter(req)
        try:
            response = self.get_response(request)
            req.status = response.status_code
            return response
        finally:
            rp.leave(token)
            rp.finish(req)

    async def _acall(self, request):
        rp = self.profiler
        req = rp.start(request.method, request.path_info, self._triggered(request), in_task=True)
        if req is None:
            return await self.get_response(request)
        token = rp.enter(req)
        try:
            response = await self.get_response(request)
            req.status = response.status_code
            return response
        finally:
            rp.leave(token)
            rp.finish(req)

    def _triggered(self, request):
        rp = self.profiler
        if rp.trigger is None:
            return False
        return rp.triggered_wsgi(request.META)
