/* fpy_cpython_internals: what fastprof touches that CPython does not
 * promise to keep: the list of it, with the versions each was checked on,
 * then the shims that wrap it, each saying why. The only C file that
 * reaches a private name or a struct field of the cpython/ headers; with
 * fpy_compat.h (the public API's version differences, which it includes)
 * the only ones that test PY_VERSION_HEX (tests/test_compat_rules.py). */
#ifndef FPY_CPYTHON_INTERNALS_H
#define FPY_CPYTHON_INTERNALS_H

#include "fpy_compat.h"

/* ==== Private CPython internals ========================================
 *
 * Everything fastprof uses that CPython does not promise to keep: names
 * with a leading underscore, and struct fields of the cpython/ headers
 * (not the limited API). Checked against the headers (or, for Python
 * names, the modules) of CPython 3.9.18, 3.10.13, 3.11.7, 3.12.1, 3.13.0,
 * 3.14 and 3.15 as installed for fastprof's tests; "used on" is where the
 * code reaches it. Check the list again when a new CPython is added.
 *
 * In C, wrapped here:
 *   _PyType_Lookup                 fpy_type_lookup; cpython/object.h, 3.9-3.15
 *   _PyEval_SetProfile             fpy_set_profile; used on 3.9-3.11;
 *                                  cpython/ceval.h 3.9-3.12, moved to
 *                                  internal/pycore_ceval.h in 3.13 (exported)
 *   PyThreadState.c_profilefunc,   fpy_profile_func / fpy_profile_obj; used
 *     .c_profileobj                on 3.9-3.11; cpython/pystate.h 3.9-3.15
 *   PyGenObject.gi_frame_state,    fpy_frame_is_suspending, 3.11 only
 *     FRAME_SUSPENDED == -1        (the field via _PyGenObject_HEAD in
 *                                  cpython/genobject.h, the value in
 *                                  internal/pycore_frame.h)
 *   PyFrameObject.f_state,         fpy_frame_is_suspending, 3.10 only
 *     FRAME_SUSPENDED              (cpython/frameobject.h)
 *   PyFrameObject.f_stacktop       fpy_frame_is_suspending, 3.9 only
 *   PyFrameObject.f_code           fpy_frame_code, 3.9-3.10
 *   PyThreadState.tracing,         the PyThreadState_EnterTracing backport,
 *     .use_tracing (3.9),          3.9-3.10 (cpython/pystate.h)
 *     .cframe->use_tracing (3.10),
 *     .c_tracefunc
 *   PyFrameObject.f_trace_lines,   fpy_frame_trace_lines, fpy_frame_event_line,
 *     .f_lineno, .f_back           fpy_frame_back (fpy_lines_legacy.c): cpython/frameobject.h
 *                                  3.9-3.10; 3.11 internal/pycore_frame.h
 *                                  (its head copied: fpy_frameobject311_head)
 *   PyThreadState.c_tracefunc,     fpy_trace_obj, fpy_has_trace, 3.9-3.11
 *     .c_traceobj                  (cpython/pystate.h)
 *   _PyEval_SetTrace               fpy_set_trace; used on 3.9-3.11;
 *                                  cpython/ceval.h 3.9-3.12
 *   PyThreadState.native_thread_id fpy_native_thread_id, 3.11-3.15
 *   _PyInterpreterState_GetEvalFrameFunc, fpy_get_evaluator / fpy_set_evaluator /
 *     _PyInterpreterState_SetEvalFrameFunc, fpy_eval_default: the PEP 523 evaluator
 *     _PyEval_EvalFrameDefault,    (fast=True); cpython/pystate.h and
 *     _PyFrameEvalFunction         cpython/ceval.h, 3.9-3.15 (frame argument:
 *                                  PyFrameObject 3.9-3.10, struct
 *                                  _PyInterpreterFrame 3.11-3.15)
 *   _PyInterpreterFrame.f_code,    fpy_eval_frame_code and
 *     .prev_instr                  fpy_eval_frame_makes_generator, 3.11 only
 *                                  (its first eight fields copied:
 *                                  fpy_frame311_head); PyCodeObject.co_code_adaptive
 *                                  (cpython/code.h) there too;
 *   _PyInterpreterFrame.f_code     fpy_eval_frame_code, 3.12 only (the first
 *                                  field); 3.13-3.15 use
 *                                  PyUnstable_InterpreterFrame_GetCode
 *   PyThreadState.tracing          fpy_thread_tracing, 3.9-3.15 (cpython/pystate.h)
 *   _PyInterpreterState_SetEvalFrameAllowSpecialization,
 *                                  fpy_evaluator_allow_specialization, 3.15
 *                                  (cpython/pystate.h, checked on 3.15.2)
 * In C, used directly (fields of cpython/ headers, unchanged 3.9-3.15):
 *   PyThreadState.id, .thread_id, .interp (thread records and hooks);
 *   PyCFunctionObject.m_ml, PyMethodDescrObject.d_method, PyDescr_TYPE
 *   (fpy_cfunc_key in fpy_profiler.h, fpy_names.c: cProfile's keys).
 * In Python (names looked up at run time), present in 3.9-3.15:
 *   threading._profile_hook        fpy_source_legacy.c: legacy_detach
 *                                  undoes threading.setprofile only if the
 *                                  hook is still ours (3.9 has no getprofile)
 *   threading._dangling            python/fastprof/thread_names.py: names
 *                                  of threads that have already ended
 *   sys._getframe                  python/fastprof/thread_names.py
 *   runpy._get_module_details,     python/fastprof/run_cli.py: `-m module`
 *     runpy._run_module_as_main    checked and run as `python -m` does
 */

/* ---- backports of newer public API that need internals ---- */

/* PyThreadState_EnterTracing / LeaveTracing: 3.11. While a thread is
 * "tracing" the interpreter delivers it no profile or monitoring events:
 * fpy_gc.c runs a custom timer from a collection callback that way, so
 * the timer's own code is not profiled. Before 3.11 the flag that makes
 * the eval loop look at the hooks sits in the C frame (3.10) or the
 * thread state (3.9), as CPython's own 3.11 code sets it. */
#if PY_VERSION_HEX < 0x030B0000
static inline void PyThreadState_EnterTracing(PyThreadState *ts)
{
    ts->tracing++;
#if PY_VERSION_HEX >= 0x030A0000
    ts->cframe->use_tracing = 0;
#else
    ts->use_tracing = 0;
#endif
}

static inline void PyThreadState_LeaveTracing(PyThreadState *ts)
{
    ts->tracing--;
    int use_tracing = ts->c_tracefunc != NULL || ts->c_profilefunc != NULL;
#if PY_VERSION_HEX >= 0x030A0000
    ts->cframe->use_tracing = use_tracing;
#else
    ts->use_tracing = use_tracing;
#endif
}
#endif

/* ---- thread states and frames ---- */

/* The native (OS) id of the thread of `ts` in *id: 1 if known. 3.11 keeps
 * it in the thread state; before, only the running thread can tell its
 * own. */
static inline int fpy_native_thread_id(PyThreadState *ts, unsigned long *id)
{
#if PY_VERSION_HEX >= 0x030B0000
    *id = ts->native_thread_id;
    return 1;
#else
    if (ts != PyThreadState_Get())
        return 0;
    *id = PyThread_get_thread_native_id();
    return 1;
#endif
}

#if !FPY_USE_MONITORING
/* The code object of a frame, borrowed. 3.9/3.10 expose f_code; 3.11
 * made PyFrameObject opaque and PyFrame_GetCode returns a new reference,
 * which the frame keeps alive anyway. */
static inline PyCodeObject *fpy_frame_code(PyFrameObject *frame)
{
#if PY_VERSION_HEX >= 0x030B0000
    PyCodeObject *code = PyFrame_GetCode(frame);
    Py_DECREF(code);
    return code;
#else
    return frame->f_code;
#endif
}
#endif

#if !FPY_USE_MONITORING
/* The line tracer of fpy_lines_legacy.c switches a frame's line events
 * off and on (off, the interpreter calls no trace function per line of
 * it: maybe_call_line_trace tests f_trace_lines for C tracers too), walks
 * a thread's frames, and reads the line of a LINE event. 3.9/3.10 expose the frame's fields; 3.11 made
 * PyFrameObject opaque: fpy_frameobject311_head is the head of its struct
 * _frame (internal/pycore_frame.h, 3.11.7), and PyFrame_GetLineNumber
 * returns f_lineno, which call_trace sets for the event. 3.9's
 * PyFrame_GetLineNumber would compute the line from f_lasti instead of
 * reading f_lineno (no f_trace here): read in place. */
#if PY_VERSION_HEX >= 0x030B0000
typedef struct {
    PyObject_HEAD
    PyFrameObject *f_back;
    void *f_frame;
    PyObject *f_trace;
    int f_lineno;
    char f_trace_lines;
    char f_trace_opcodes;
} fpy_frameobject311_head;
#endif

static inline void fpy_frame_trace_lines(PyFrameObject *frame, int on)
{
#if PY_VERSION_HEX >= 0x030B0000
    ((fpy_frameobject311_head *)frame)->f_trace_lines = (char)on;
#else
    frame->f_trace_lines = (char)on;
#endif
}

/* The calling frame of a running frame, borrowed (3.11: PyFrame_GetBack
 * returns a new reference; the running interpreter frame keeps its frame
 * object alive anyway). */
static inline PyFrameObject *fpy_frame_back(PyFrameObject *frame)
{
#if PY_VERSION_HEX >= 0x030B0000
    PyFrameObject *back = PyFrame_GetBack(frame);
    Py_XDECREF(back);
    return back;
#else
    return frame->f_back;
#endif
}

static inline int fpy_frame_event_line(PyFrameObject *frame)
{
#if PY_VERSION_HEX >= 0x030B0000
    return PyFrame_GetLineNumber(frame);
#else
    return frame->f_lineno;
#endif
}

/* The C trace function of the calling thread and its object (borrowed) */
static inline PyObject *fpy_trace_obj(PyThreadState *ts, Py_tracefunc func)
{
    return ts->c_tracefunc == func ? ts->c_traceobj : NULL;
}

/* Whether thread state `ts` has a C trace function (sys.settrace's too) */
static inline int fpy_has_trace(PyThreadState *ts)
{
    return ts->c_tracefunc != NULL;
}

/* Sets the C trace function of any thread state (PyEval_SetTrace: the
 * calling thread's only). 0, or -1 with an exception set. */
static inline int fpy_set_trace(PyThreadState *ts, Py_tracefunc func, PyObject *obj)
{
    return _PyEval_SetTrace(ts, func, obj);
}
#endif

/* ---- the PEP 523 frame evaluator (fpy_source_evalframe.c, fast=True) ----
 *
 * The evaluator gets a PyFrameObject before 3.11, an interpreter frame
 * (struct _PyInterpreterFrame, opaque) since. Versions after the last one
 * checked fail to build: the frame layout and the calls below are private
 * and change without notice. */
#if PY_VERSION_HEX >= 0x03100000
#error                                                                                                  \
    "fastprof: the frame evaluator (fpy_compat.h) was checked on CPython 3.9-3.15 only; check it on this version"
#endif
#if PY_VERSION_HEX >= 0x030B0000
typedef struct _PyInterpreterFrame fpy_eval_frame_t;
#else
typedef PyFrameObject fpy_eval_frame_t;
#endif

#if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030C0000
/* 3.11's _PyInterpreterFrame up to prev_instr (internal/pycore_frame.h,
 * 3.11.7). */
typedef struct {
    PyObject *f_func, *f_globals, *f_builtins, *f_locals;
    PyCodeObject *f_code;
    PyObject *frame_obj;
    void *previous;
    _Py_CODEUNIT *prev_instr;
} fpy_frame311_head;
#endif

/* The code object of a frame given to the evaluator (borrowed: the frame
 * holds it), or NULL if it has none. */
static inline PyCodeObject *fpy_eval_frame_code(fpy_eval_frame_t *frame)
{
#if PY_VERSION_HEX >= 0x030C0000 && PY_VERSION_HEX < 0x030D0000
    /* 3.12's frame starts with its code object (internal/pycore_frame.h,
     * 3.12.1): read in place, which spares a call and two reference
     * count writes per frame; PyCode_Check keeps it honest */
    PyObject *code = *(PyObject **)frame;
    return code && PyCode_Check(code) ? (PyCodeObject *)code : NULL;
#elif PY_VERSION_HEX >= 0x030C0000
    PyObject *code = PyUnstable_InterpreterFrame_GetCode(frame);
    if (!code)
        return NULL;
    Py_DECREF(code);
    return PyCode_Check(code) ? (PyCodeObject *)code : NULL;
#elif PY_VERSION_HEX >= 0x030B0000
    return ((fpy_frame311_head *)frame)->f_code;
#else
    return frame->f_code;
#endif
}

/* Why fast=True is refused on this version, or undefined if it is not.
 * 3.13 specializes calls of Python classes (CALL_ALLOC_AND_ENTER_INIT)
 * even while an evaluator is installed, and that instruction runs
 * __init__ without it: those calls would be missed. No 3.13 release
 * fixed it: checked on 3.13.0 and 3.13.18 (an evaluator sees 1 of 400
 * __init__ calls: the one before the call site specialized). 3.14 added
 * the check (_CHECK_PEP_523) when it split the instruction into micro-ops
 * (gh-118093, a 3.14 feature, not backported); 3.11 and 3.12 have no such
 * instruction. tests/test_fast_mode_availability.py checks this gate
 * against the interpreter itself. */
#if PY_VERSION_HEX >= 0x030D0000 && PY_VERSION_HEX < 0x030E0000
#define FPY_EVALFRAME_UNAVAILABLE                                                                       \
    "fast=True is not available on Python 3.13: its specialized class calls run __init__ without "      \
    "the frame evaluator, so those calls would be missed (no 3.13 release fixes it; use the "           \
    "default mode, or Python 3.14+)"
#endif

/* 3.15 (gh-146031, checked on 3.15.2): an evaluator may let the
 * specializer keep specializing Python calls while it is installed
 * (otherwise their call sites stay generic CALL). The default loop still
 * deoptimizes the specialized calls that would push a Python frame in
 * place (their _CHECK_PEP_523), so every Python call still comes through
 * the evaluator (and nothing is gained: docs/performance.md, "Fast mode:
 * where the cost comes from"):
 * _PyInterpreterState_SetEvalFrameAllowSpecialization, called after the
 * evaluator is installed (installing one resets it). Before 3.15 a no-op. */
#if PY_VERSION_HEX >= 0x030F0000
#define FPY_EVALFRAME_KEEPS_SPECIALIZATION 1
#else
#define FPY_EVALFRAME_KEEPS_SPECIALIZATION 0
#endif
static inline void fpy_evaluator_allow_specialization(PyInterpreterState *interp, int allow)
{
#if FPY_EVALFRAME_KEEPS_SPECIALIZATION
    _PyInterpreterState_SetEvalFrameAllowSpecialization(interp, allow);
#else
    (void)interp;
    (void)allow;
#endif
}

/* Whether the evaluator's call of a frame of generator-like `code` only
 * makes the generator (its RETURN_GENERATOR, before any RESUME: no profile
 * event). 3.11+ runs that through the evaluator; before, the generator is
 * made without it. The frame has not run any instruction yet: 3.11 and
 * 3.12 point before the first one (lasti -1), 3.13+ at it (lasti 0); a
 * made generator's frame is past RETURN_GENERATOR. */
static inline int fpy_eval_frame_makes_generator(fpy_eval_frame_t *frame, PyCodeObject *code)
{
    if (!(code->co_flags & FPY_CO_SUSPENDABLE))
        return 0;
#if PY_VERSION_HEX >= 0x030D0000
    return PyUnstable_InterpreterFrame_GetLasti(frame) <= 0;
#elif PY_VERSION_HEX >= 0x030C0000
    return PyUnstable_InterpreterFrame_GetLasti(frame) < 0;
#elif PY_VERSION_HEX >= 0x030B0000
    return (char *)((fpy_frame311_head *)frame)->prev_instr < code->co_code_adaptive;
#else
    (void)frame;
    return 0;
#endif
}

/* The interpreter's default evaluator, and reading / setting the one
 * installed (3.11+ stores the default as NULL; Get returns it anyway). */
static inline PyObject *fpy_eval_default(PyThreadState *ts, fpy_eval_frame_t *frame, int throwflag)
{
    return _PyEval_EvalFrameDefault(ts, frame, throwflag);
}

static inline _PyFrameEvalFunction fpy_get_evaluator(PyInterpreterState *interp)
{
    return _PyInterpreterState_GetEvalFrameFunc(interp);
}

static inline void fpy_set_evaluator(PyInterpreterState *interp, _PyFrameEvalFunction f)
{
    _PyInterpreterState_SetEvalFrameFunc(interp, f);
}

/* Whether the default evaluator is installed; installs it back. */
static inline int fpy_evaluator_is_default(PyInterpreterState *interp)
{
    return _PyInterpreterState_GetEvalFrameFunc(interp) == _PyEval_EvalFrameDefault;
}

static inline void fpy_set_default_evaluator(PyInterpreterState *interp)
{
    _PyInterpreterState_SetEvalFrameFunc(interp, _PyEval_EvalFrameDefault);
}

/* Whether the thread is inside a trace/profile callback or fastprof's own
 * Python calls (PyThreadState_EnterTracing): its frames are not profiled. */
static inline int fpy_thread_tracing(PyThreadState *ts)
{
    return ts->tracing;
}

/* ---- types and the C profile hook ---- */

/* A type attribute lookup that neither raises nor runs code (borrowed). */
static inline PyObject *fpy_type_lookup(PyTypeObject *type, PyObject *name)
{
    return _PyType_Lookup(type, name);
}

#if !FPY_USE_MONITORING
/* The C profile hook of thread state `ts`: its function and its object
 * (borrowed). */
static inline Py_tracefunc fpy_profile_func(PyThreadState *ts)
{
    return ts->c_profilefunc;
}

static inline PyObject *fpy_profile_obj(PyThreadState *ts)
{
    return ts->c_profileobj;
}

/* Sets the C profile hook of any thread state: PyEval_SetProfile sets only
 * the calling thread's (and 3.12's PyEval_SetProfileAllThreads, every
 * thread's). 0, or -1 with an exception set. */
static inline int fpy_set_profile(PyThreadState *ts, Py_tracefunc func, PyObject *obj)
{
    return _PyEval_SetProfile(ts, func, obj);
}

/* Whether a generator frame that is returning to its caller is suspending
 * (yield / await) rather than finishing. Each version records it in a
 * different place just before the return event fires: 3.9 sets
 * f_stacktop only when suspending; 3.10 has f_state; 3.11 keeps the state
 * in the generator. */
static inline int fpy_frame_is_suspending(PyFrameObject *frame)
{
#if PY_VERSION_HEX >= 0x030B0000
    PyObject *gen = PyFrame_GetGenerator(frame);
    if (!gen)
        return 0;
    int suspended = ((PyGenObject *)gen)->gi_frame_state == -1; /* FRAME_SUSPENDED */
    Py_DECREF(gen);
    return suspended;
#elif PY_VERSION_HEX >= 0x030A0000
    return frame->f_state == FRAME_SUSPENDED;
#else
    return frame->f_stacktop != NULL;
#endif
}
#endif

#endif
