"""Per-request profiles of a web service (docs/web-services.md): the public
face; the run mode itself is ``fastprof.modes.middleware``.

    from fastprof.middleware import WSGIMiddleware, ASGIMiddleware
    app = WSGIMiddleware(app, "profiles/", slow_ms=200)
    MIDDLEWARE = ["fastprof.middleware.DjangoMiddleware", ...]   # Django
"""

from .modes.middleware import ASGIMiddleware, DjangoMiddleware, RequestProfiler, WSGIMiddleware

__all__ = ["WSGIMiddleware", "ASGIMiddleware", "DjangoMiddleware", "RequestProfiler"]
