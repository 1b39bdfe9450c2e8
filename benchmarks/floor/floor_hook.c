/* The floor under any profiler built on the interpreter's event hooks: a
 * hook that reads the clock once per event and records nothing. What it
 * adds is what CPython charges for delivering events plus one clock read,
 * a cost fastprof and cProfile both pay. benchmarks/micro.py --floor builds
 * and loads it; it is not part of fastprof.
 *
 *   <= 3.11: enable()/disable() install a C profile hook (PyEval_SetProfile),
 *            as cProfile and fastprof do.
 *   >= 3.12: tick is a METH_FASTCALL C function to register with
 *            sys.monitoring for the events fastprof uses (micro.py does). */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

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

static PyObject *tick(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self, (void)args, (void)nargs;
    sink += clock_read();
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
#if PY_VERSION_HEX < 0x030C0000
    {"enable", enable, METH_NOARGS, "Install the clock-reading profile hook in this thread."},
    {"disable", disable, METH_NOARGS, "Remove it."},
#endif
    {"tick", (PyCFunction)(void (*)(void))tick, METH_FASTCALL, "Read the clock; return None."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_floor_hook", NULL, -1, methods,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__floor_hook(void)
{
    return PyModule_Create(&module);
}
