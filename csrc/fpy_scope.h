/* fpy_scope: only= (scoped profiling): which code objects a profiler
 * records. Events of code out of scope are ignored, so the time they take
 * stays in the in-scope caller's own time; C functions are recorded when
 * called from code in scope. Each code object is decided once, by the
 * Python callable given to Profiler._set_scope, and remembered. */
#ifndef FPY_SCOPE_H
#define FPY_SCOPE_H

#include "fpy_profiler.h"

#define FPY_SCOPE_SLOTS 512

typedef struct fpy_scope {
    PyObject *decide;  /* decide(code) -> true if in scope */
    PyObject *decided; /* {id(code): (code, in_scope)}: holds each code alive */
    struct {
        const void *code;
        int in_scope;
    } cache[FPY_SCOPE_SLOTS]; /* direct-mapped by address, over `decided` */
#if FPY_USE_MONITORING
    PyObject *disable; /* sys.monitoring.DISABLE */
    long local_events; /* the events set on each code object in scope */
#endif
} fpy_scope_t;

/* Looks up or decides `code` (calls `decide`, which may run any Python
 * code; its errors count as out of scope, and are dropped). 3.12+: a code
 * object newly in scope gets the profiler's local events. */
int fpy_scope_decide(fpy_profiler_t *p, PyCodeObject *code);

/* 1 if the events of `code` are recorded: always without only=. */
static inline int fpy_in_scope(fpy_profiler_t *p, PyCodeObject *code)
{
    fpy_scope_t *s = p->scope;
    if (__builtin_expect(!s, 1))
        return 1;
    size_t i = ((uintptr_t)code >> 4) % FPY_SCOPE_SLOTS;
    if (s->cache[i].code == code)
        return s->cache[i].in_scope;
    return fpy_scope_decide(p, code);
}

/* Profiler._set_scope(decide): decide is None (everything) or a callable. */
PyObject *fpy_scope_set(fpy_profiler_t *p, PyObject *decide);

#if FPY_USE_MONITORING
/* attach: the global events are PY_START (which decides), PY_THROW and
 * PY_UNWIND; `local` goes on code objects in scope, already decided ones
 * now. -1 with an exception set on failure. */
int fpy_scope_attach(fpy_profiler_t *p, PyObject *mon, long local);

/* detach: the local events off, and the locations PY_START disabled for
 * this tool id enabled again (a later user of the id would miss them). */
void fpy_scope_detach(fpy_profiler_t *p, PyObject *mon);
#endif

int fpy_scope_traverse(fpy_profiler_t *p, visitproc visit, void *arg);
void fpy_scope_free(fpy_profiler_t *p);

#endif
