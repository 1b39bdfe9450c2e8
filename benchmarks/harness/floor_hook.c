/* The floor under any profiler built on the interpreter's event hooks: a
 * hook that reads the clock once per event and records nothing. What it
 * adds is what CPython charges for delivering events plus one clock read,
 * a cost fastprof and cProfile both pay. floor_hook.py (beside it) builds
 * and loads it (the "floor" mode of `run.py timing`, the floor column of
 * questions/micro.py); it is not part of fastprof.
 *
 *   <= 3.11: enable()/disable() install a C profile hook (PyEval_SetProfile),
 *            as cProfile and fastprof do.
 *   >= 3.12: tick is a vectorcall object to register with sys.monitoring
 *            for the events fastprof uses (floor_hook.py does). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>

static unsigned long long sink;

static inline unsigned long long clock_read(void)
{
#if defined(__x86_64__) || defined(__i386__)
    return __builtin_ia32_rdtsc();
#else
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
#endif
}

#if PY_VERSION_HEX < 0x030C0000
static int hook(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg)
{
    (void)obj, (void)frame, (void)what, (void)arg;
    sink += clock_read();
    return 0;
}

static PyObject *enable(PyObject *self, PyObject *unused)
{
    (void)self, (void)unused;
    PyEval_SetProfile(hook, NULL);
    Py_RETURN_NONE;
}

static PyObject *disable(PyObject *self, PyObject *unused)
{
    (void)self, (void)unused;
    PyEval_SetProfile(NULL, NULL);
    Py_RETURN_NONE;
}
#endif

/* 3.12+: `tick` is a callable with its own vectorcall, as fastprof's
 * sys.monitoring callbacks are, so the floor pays the same call layer. */
typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
} ticker_t;

static PyObject *ticker_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    (void)self, (void)args, (void)nargsf, (void)kwnames;
    sink += clock_read();
    Py_RETURN_NONE;
}

static PyTypeObject ticker_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "_floor_hook.Ticker",
    .tp_basicsize = sizeof(ticker_t),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(ticker_t, vectorcall),
    .tp_call = PyVectorcall_Call,
};

static PyMethodDef methods[] = {
#if PY_VERSION_HEX < 0x030C0000
    {"enable", enable, METH_NOARGS, "Install the clock-reading profile hook in this thread."},
    {"disable", disable, METH_NOARGS, "Remove it."},
#endif
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_floor_hook", NULL, -1, methods,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__floor_hook(void)
{
    if (PyType_Ready(&ticker_type) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    ticker_t *tick = m ? PyObject_New(ticker_t, &ticker_type) : NULL;
    if (!tick) {
        Py_XDECREF(m);
        return NULL;
    }
    tick->vectorcall = ticker_vectorcall;
    if (PyModule_AddObject(m, "tick", (PyObject *)tick) < 0) {
        Py_DECREF(tick);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
