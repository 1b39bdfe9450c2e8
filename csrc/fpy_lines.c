/* LineCounter (used on 3.12+, built on every version): the sys.monitoring callbacks
 * of line-level profiling (python/fastprof/line_profiling.py), in C since
 * they run on every line of the functions profiled. Python decides which
 * code objects are profiled (add()) and sets their local events; this
 * counts each line's hits and times it: from its LINE event to the next
 * event of the same frame (LINE, a backward JUMP within one line, return,
 * yield, unwind). Each frame's open line is kept by frame object, so
 * threads and generators need no stacks. */
#include "fpy_profiler.h"

#include "fp_hash.h"

#include <time.h>

typedef struct code_lines {
    const void *key; /* the code object (held in `code`) */
    PyObject *code;
    int base; /* line number of slot 0 */
    int n;    /* slots */
    uint64_t *hits;
    uint64_t *ns;
    UT_hash_handle hh;
} code_lines_t;

typedef struct frame_line {
    const void *key; /* the frame object: only compared */
    code_lines_t *lines;
    int line; /* 0: none yet */
    uint64_t t0;
    UT_hash_handle hh;
} frame_line_t;

typedef struct {
    PyObject_HEAD
    code_lines_t *codes;
    frame_line_t *frames;
    PyObject *disable; /* sys.monitoring.DISABLE */
    int nomem;
} line_counter_t;

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The slot of `line` in `cl`, grown to hold it; -1 when out of memory. */
static int slot_of(line_counter_t *lc, code_lines_t *cl, int line)
{
    if (cl->n && line >= cl->base && line < cl->base + cl->n)
        return line - cl->base;
    int lo = cl->n ? (line < cl->base ? line : cl->base) : line;
    int hi = cl->n ? (line >= cl->base + cl->n ? line + 1 : cl->base + cl->n) : line + 1;
    int n = hi - lo + 8;
    uint64_t *hits = PyMem_Calloc((size_t)n, sizeof *hits);
    uint64_t *ns = PyMem_Calloc((size_t)n, sizeof *ns);
    if (!hits || !ns) {
        PyMem_Free(hits);
        PyMem_Free(ns);
        lc->nomem = 1;
        return -1;
    }
    if (cl->n) {
        memcpy(hits + (cl->base - lo), cl->hits, (size_t)cl->n * sizeof *hits);
        memcpy(ns + (cl->base - lo), cl->ns, (size_t)cl->n * sizeof *ns);
    }
    PyMem_Free(cl->hits);
    PyMem_Free(cl->ns);
    cl->hits = hits;
    cl->ns = ns;
    cl->base = lo;
    cl->n = n;
    return line - lo;
}

static void charge(line_counter_t *lc, frame_line_t *fl, uint64_t t)
{
    if (fl->line > 0) {
        int i = slot_of(lc, fl->lines, fl->line);
        if (i >= 0)
            fl->lines->ns[i] += t - fl->t0;
    }
}

static code_lines_t *find_code(line_counter_t *lc, PyObject *code)
{
    code_lines_t *cl;
    HASH_FIND_PTR(lc->codes, &code, cl);
    return cl;
}

/* The open line of the running frame of `code`, made if `make`. */
static frame_line_t *frame_of(line_counter_t *lc, PyObject *code, int make)
{
    PyFrameObject *frame = PyEval_GetFrame();
    if (!frame)
        return NULL;
    const void *key = frame;
    frame_line_t *fl;
    HASH_FIND_PTR(lc->frames, &key, fl);
    if (fl && fl->lines->code == code)
        return fl;
    if (!make)
        return NULL;
    code_lines_t *cl = find_code(lc, code);
    if (!cl)
        return NULL;
    if (!fl) { /* else: a frame whose exit was not seen, address reused */
        fl = PyMem_Calloc(1, sizeof *fl);
        if (!fl) {
            lc->nomem = 1;
            return NULL;
        }
        fl->key = key;
        if (!FP_HASH_ADD(lc->frames, key, sizeof fl->key, fl)) {
            PyMem_Free(fl);
            lc->nomem = 1;
            return NULL;
        }
    }
    fl->lines = cl;
    fl->line = 0;
    return fl;
}

static void new_line(line_counter_t *lc, PyObject *code, int line)
{
    uint64_t t = now_ns();
    frame_line_t *fl = frame_of(lc, code, 1);
    if (!fl)
        return;
    charge(lc, fl, t);
    int i = slot_of(lc, fl->lines, line);
    if (i >= 0)
        fl->lines->hits[i]++;
    fl->line = line;
    fl->t0 = t;
}

static PyObject *lc_line(line_counter_t *lc, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs >= 2 && PyCode_Check(args[0]) && PyLong_Check(args[1]))
        new_line(lc, args[0], (int)PyLong_AsLong(args[1]));
    Py_RETURN_NONE;
}

/* sys.settrace reports a backward jump within one line as a new line */
static PyObject *lc_jump(line_counter_t *lc, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 3 || !PyCode_Check(args[0]))
        Py_RETURN_NONE;
    long src = PyLong_AsLong(args[1]), dst = PyLong_AsLong(args[2]);
    if (PyErr_Occurred())
        return NULL;
    PyCodeObject *code = (PyCodeObject *)args[0];
    int to = dst < src ? PyCode_Addr2Line(code, (int)dst) : -1;
    if (to < 0 || to != PyCode_Addr2Line(code, (int)src))
        return Py_NewRef(lc->disable);
    new_line(lc, args[0], to);
    Py_RETURN_NONE;
}

/* PY_RESUME, PY_THROW: until the next line, the time is the resumed line's */
static PyObject *lc_resume(line_counter_t *lc, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 2 || !PyCode_Check(args[0]))
        Py_RETURN_NONE;
    uint64_t t = now_ns();
    frame_line_t *fl = frame_of(lc, args[0], 1);
    if (fl) {
        int line = PyCode_Addr2Line((PyCodeObject *)args[0], (int)PyLong_AsLong(args[1]));
        PyErr_Clear();
        fl->line = line > 0 ? line : 0;
        fl->t0 = t;
    }
    Py_RETURN_NONE;
}

/* PY_RETURN, PY_YIELD, PY_UNWIND: the open line ends */
static PyObject *lc_exit(line_counter_t *lc, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 1 || !PyCode_Check(args[0]))
        Py_RETURN_NONE;
    uint64_t t = now_ns();
    frame_line_t *fl = frame_of(lc, args[0], 0);
    if (fl) {
        charge(lc, fl, t);
        HASH_DEL(lc->frames, fl);
        PyMem_Free(fl);
    }
    Py_RETURN_NONE;
}

static PyObject *lc_add(line_counter_t *lc, PyObject *code)
{
    if (!PyCode_Check(code)) {
        PyErr_SetString(PyExc_TypeError, "add() takes a code object");
        return NULL;
    }
    if (find_code(lc, code))
        Py_RETURN_NONE;
    code_lines_t *cl = PyMem_Calloc(1, sizeof *cl);
    if (!cl)
        return PyErr_NoMemory();
    cl->key = code;
    cl->code = Py_NewRef(code);
    if (!FP_HASH_ADD(lc->codes, key, sizeof cl->key, cl)) {
        Py_DECREF(code);
        PyMem_Free(cl);
        return PyErr_NoMemory();
    }
    Py_RETURN_NONE;
}

static void drop_frames(line_counter_t *lc, int charge_open)
{
    uint64_t t = now_ns();
    frame_line_t *fl, *tmp;
    HASH_ITER(hh, lc->frames, fl, tmp)
    {
        if (charge_open)
            charge(lc, fl, t);
        HASH_DEL(lc->frames, fl);
        PyMem_Free(fl);
    }
}

/* close(): the lines still open (frames running at stop) end now */
static PyObject *lc_close(line_counter_t *lc, PyObject *Py_UNUSED(ignored))
{
    drop_frames(lc, 1);
    Py_RETURN_NONE;
}

static PyObject *lc_clear(line_counter_t *lc, PyObject *Py_UNUSED(ignored))
{
    drop_frames(lc, 0);
    code_lines_t *cl, *tmp;
    HASH_ITER(hh, lc->codes, cl, tmp)
    {
        if (cl->n) {
            memset(cl->hits, 0, (size_t)cl->n * sizeof *cl->hits);
            memset(cl->ns, 0, (size_t)cl->n * sizeof *cl->ns);
        }
    }
    Py_RETURN_NONE;
}

/* stats(): {code: {lineno: (hits, seconds)}} of the lines that ran */
static PyObject *lc_stats(line_counter_t *lc, PyObject *Py_UNUSED(ignored))
{
    if (lc->nomem) {
        lc->nomem = 0;
        PyErr_SetString(PyExc_MemoryError, "fastprof: line stats lost for lack of memory");
        return NULL;
    }
    PyObject *out = PyDict_New();
    code_lines_t *cl, *tmp;
    HASH_ITER(hh, lc->codes, cl, tmp)
    {
        PyObject *lines = out ? PyDict_New() : NULL;
        if (!lines || PyDict_SetItem(out, cl->code, lines) < 0)
            goto error;
        Py_DECREF(lines);
        for (int i = 0; i < cl->n; i++) {
            if (!cl->hits[i] && !cl->ns[i])
                continue;
            PyObject *k = PyLong_FromLong(cl->base + i);
            PyObject *v = Py_BuildValue("(Kd)", (unsigned long long)cl->hits[i], cl->ns[i] / 1e9);
            int r = k && v ? PyDict_SetItem(lines, k, v) : -1;
            Py_XDECREF(k);
            Py_XDECREF(v);
            if (r < 0)
                goto error;
        }
        continue;
    error:
        Py_XDECREF(out);
        return NULL;
    }
    return out;
}

static PyObject *lc_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *disable;
    static char *kwlist[] = {"disable", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O:LineCounter", kwlist, &disable))
        return NULL;
    line_counter_t *lc = (line_counter_t *)type->tp_alloc(type, 0);
    if (lc)
        lc->disable = Py_NewRef(disable);
    return (PyObject *)lc;
}

static void lc_dealloc(line_counter_t *lc)
{
    PyTypeObject *type = Py_TYPE(lc);
    drop_frames(lc, 0);
    code_lines_t *cl, *tmp;
    HASH_ITER(hh, lc->codes, cl, tmp)
    {
        HASH_DEL(lc->codes, cl);
        Py_DECREF(cl->code);
        PyMem_Free(cl->hits);
        PyMem_Free(cl->ns);
        PyMem_Free(cl);
    }
    Py_CLEAR(lc->disable);
    type->tp_free((PyObject *)lc);
    Py_DECREF(type);
}

static PyMethodDef lc_methods[] = {
    {"add", (PyCFunction)lc_add, METH_O, "add($self, code, /)\n--\n\nCount the lines of code."},
    {"line", (PyCFunction)(void (*)(void))lc_line, METH_FASTCALL,
     "line($self, code, line, /)\n--\n\nThe LINE callback."},
    {"jump", (PyCFunction)(void (*)(void))lc_jump, METH_FASTCALL,
     "jump($self, code, src, dst, /)\n--\n\nThe JUMP callback."},
    {"resume", (PyCFunction)(void (*)(void))lc_resume, METH_FASTCALL,
     "resume($self, code, offset, /, *rest)\n--\n\nThe PY_RESUME and PY_THROW callback."},
    {"exit", (PyCFunction)(void (*)(void))lc_exit, METH_FASTCALL,
     "exit($self, code, offset, value, /)\n--\n\nThe PY_RETURN, PY_YIELD and PY_UNWIND callback."},
    {"close", (PyCFunction)lc_close, METH_NOARGS,
     "close($self, /)\n--\n\nEnd the lines still open, now."},
    {"clear", (PyCFunction)lc_clear, METH_NOARGS, "clear($self, /)\n--\n\nZero every count."},
    {"stats", (PyCFunction)lc_stats, METH_NOARGS,
     "stats($self, /)\n--\n\n{code: {lineno: (hits, seconds)}}."},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot lc_slots[] = {
    {Py_tp_new, (void *)lc_new},
    {Py_tp_dealloc, (void *)lc_dealloc},
    {Py_tp_methods, lc_methods},
    {Py_tp_doc, "LineCounter(disable)\n--\n\nLine hits and times of the code objects added."},
    {0, NULL},
};

static PyType_Spec lc_spec = {
    .name = "fastprof._fastprof.LineCounter",
    .basicsize = sizeof(line_counter_t),
#ifdef Py_TPFLAGS_IMMUTABLETYPE
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE,
#else
    .flags = Py_TPFLAGS_DEFAULT,
#endif
    .slots = lc_slots,
};

int fpy_lines_module_init(PyObject *module)
{
    PyObject *type = PyType_FromModuleAndSpec(module, &lc_spec, NULL);
    if (!type)
        return -1;
    int r = PyModule_AddObject(module, "LineCounter", type);
    if (r < 0)
        Py_DECREF(type);
    return r;
}
