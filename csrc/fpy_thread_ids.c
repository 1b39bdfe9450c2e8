/* fpy_thread_ids.h says why ids are taken first. */
#include "fpy_thread_ids.h"

int fpy_thread_ids(PyInterpreterState *interp, fpy_thread_wanted_fn wanted, void *arg, uint64_t **ids,
                   size_t *n)
{
    size_t cap = 0;
    *ids = NULL;
    *n = 0;
    for (PyThreadState *ts = PyInterpreterState_ThreadHead(interp); ts; ts = PyThreadState_Next(ts)) {
        if (wanted && !wanted(ts, arg))
            continue;
        if (*n == cap) {
            cap = cap ? cap * 2 : 16;
            uint64_t *grown = PyMem_Realloc(*ids, cap * sizeof **ids);
            if (!grown) {
                PyMem_Free(*ids);
                *ids = NULL;
                *n = 0;
                PyErr_NoMemory();
                return -1;
            }
            *ids = grown;
        }
        (*ids)[(*n)++] = PyThreadState_GetID(ts);
    }
    return 0;
}

PyThreadState *fpy_thread_by_id(PyInterpreterState *interp, uint64_t id)
{
    for (PyThreadState *ts = PyInterpreterState_ThreadHead(interp); ts; ts = PyThreadState_Next(ts))
        if (PyThreadState_GetID(ts) == id)
            return ts;
    return NULL;
}
