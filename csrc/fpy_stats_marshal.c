/* Profiler._stats_marshal(skip_file, hides_c_function): the pstats table
 * of a profile recorded by one thread, written straight to marshal bytes
 * (`pytest --fastprof-per-test` writes one file per test: building the dict
 * and marshalling it cost several times what writing the file does).
 *
 * marshal.loads of the bytes is the dict _stats_and_codes() builds (same
 * rows, callers and order). They are written as marshal's version 4 would
 * write them: each file name, function name and key once, referred to
 * after that (a trivial test's table is 10 KB rather than 24).
 *
 * Left out: what the caller says is hidden (the pytest plugin's rule,
 * stated once in Python: pytest_plugin.HiddenRows), nothing more. The rows
 * of the code objects of file `skip_file`, the edges from them, and a C
 * function called only from those rows whose name `hides_c_function`
 * (a callable, or None: none) accepts, asked once per such C function.
 *
 * Returns (table, qualnames, codes, files, calls, thread id): the table's
 * bytes; the bytes of the trailer's list of qualified names (3.11+; b""
 * if none) with references of their own (the trailer is read apart); the
 * users of the rows written, in order; their files, each str once; the
 * calls of every row (skipped ones included: the trailer's event count is
 * the whole profile's). None when the general path must
 * make the file: not exactly one thread recorded, two rows sharing a key
 * (summed into one row there), a count beyond 32 bits, a name that is not
 * UTF-8 encodable. An exception hides_c_function raised is raised. */
#include "fpy_profiler.h"

#include <string.h>

/* A growing byte buffer; `failed` once an allocation failed (then
 * nothing more is written). */
typedef struct {
    unsigned char *data;
    size_t len, cap;
    int failed;
} buf_t;

static int grow(buf_t *b, size_t n)
{
    size_t cap = b->cap ? b->cap : 16384;
    while (cap < b->len + n)
        cap *= 2;
    unsigned char *data = b->failed ? NULL : PyMem_Realloc(b->data, cap);
    if (!data) {
        b->failed = 1;
        return -1;
    }
    b->data = data;
    b->cap = cap;
    return 0;
}

/* Where the next n bytes go (the caller adds n to len), NULL once failed. */
static inline unsigned char *room(buf_t *b, size_t n)
{
    if (b->len + n > b->cap && grow(b, n) < 0)
        return NULL;
    return b->data + b->len;
}

static inline void put(buf_t *b, const void *bytes, size_t n)
{
    unsigned char *o = room(b, n);
    if (o) {
        memcpy(o, bytes, n);
        b->len += n;
    }
}

/* marshal's w_long: four bytes, little-endian */
static inline void le32(unsigned char *o, int32_t v)
{
    uint32_t u = (uint32_t)v;
    o[0] = (unsigned char)u;
    o[1] = (unsigned char)(u >> 8);
    o[2] = (unsigned char)(u >> 16);
    o[3] = (unsigned char)(u >> 24);
}

/* a type code and a w_long */
static inline void put_coded(buf_t *b, unsigned char code, int32_t v)
{
    unsigned char *o = room(b, 5);
    if (o) {
        o[0] = code;
        le32(o + 1, v);
        b->len += 5;
    }
}

/* TYPE_INT: the caller has checked that v fits */
static inline void put_count(buf_t *b, uint64_t v)
{
    put_coded(b, 'i', (int32_t)v);
}

/* TYPE_BINARY_FLOAT: the double, little-endian (PyFloat_Pack8's IEEE bytes) */
static inline void put_float(buf_t *b, double v)
{
    unsigned char *o = room(b, 9);
    if (!o)
        return;
    o[0] = 'g';
    memcpy(o + 1, &v, 8);
#if PY_BIG_ENDIAN
    for (int i = 0; i < 4; i++) {
        unsigned char c = o[1 + i];
        o[1 + i] = o[8 - i];
        o[8 - i] = c;
    }
#endif
    b->len += 9;
}

/* TYPE_SMALL_TUPLE of n <= 255 */
static inline void put_tuple(buf_t *b, unsigned char n)
{
    unsigned char x[2] = {')', n};
    put(b, x, 2);
}

static int fits(uint64_t v)
{
    return v <= (uint64_t)INT32_MAX;
}

/* ---- references: each string and key written once, then referred to ---- */

#define FLAG_REF 0x80

/* Addresses to ints: open addressing, sized once for what it will hold. */
typedef struct {
    uintptr_t *keys; /* 0: empty */
    int32_t *vals;
    size_t mask;
} ptrmap_t;

static int ptrmap_init(ptrmap_t *m, size_t n)
{
    size_t size = 16;
    while (size < 2 * n)
        size *= 2;
    m->keys = PyMem_Calloc(size, sizeof *m->keys);
    m->vals = PyMem_Calloc(size, sizeof *m->vals);
    m->mask = size - 1;
    return m->keys && m->vals ? 0 : -1;
}

static void ptrmap_free(ptrmap_t *m)
{
    PyMem_Free(m->keys);
    PyMem_Free(m->vals);
}

/* The value slot of `key`, -1 in it if `key` is new (the caller fills it). */
static int32_t *ptrmap_slot(ptrmap_t *m, uintptr_t key)
{
    size_t i = (size_t)((key >> 4) * 0x9E3779B97F4A7C15ULL) & m->mask;
    while (m->keys[i] && m->keys[i] != key)
        i = (i + 1) & m->mask;
    if (!m->keys[i]) {
        m->keys[i] = key;
        m->vals[i] = -1;
    }
    return &m->vals[i];
}

/* Objects written so far (an address, tagged for a key) and the index the
 * reader gives each. */
typedef struct {
    ptrmap_t written;
    int32_t next;  /* the reader's next reference index */
    int32_t tilde; /* the index of "~" (C functions' file), -1: not yet */
} refs_t;

static void put_ref(buf_t *b, int32_t index)
{
    put_coded(b, 'r', index);
}

/* A str, as marshal writes it (short ASCII, ASCII or UTF-8), flagged for
 * reference the first time; -1: not UTF-8 encodable (lone surrogates). */
static int put_str(buf_t *b, refs_t *r, PyObject *s)
{
    int32_t *slot = ptrmap_slot(&r->written, (uintptr_t)s);
    if (*slot >= 0) {
        put_ref(b, *slot);
        return 0;
    }
    Py_ssize_t n;
    const char *text = PyUnicode_AsUTF8AndSize(s, &n);
    if (!text) {
        PyErr_Clear();
        return -1;
    }
    *slot = r->next++;
    if (PyUnicode_IS_ASCII(s) && n < 256) {
        unsigned char x[2] = {'z' | FLAG_REF, (unsigned char)n};
        put(b, x, 2);
    } else {
        put_coded(b, (PyUnicode_IS_ASCII(s) ? 'a' : 'u') | FLAG_REF, (int32_t)n);
    }
    put(b, text, (size_t)n);
    return 0;
}

/* The pstats key of `user` (a code object: (file, line, name); a C
 * function's name: ('~', 0, name)), flagged for reference the first time;
 * -1: a user or a name marshal's way cannot be written here. */
static int put_key(buf_t *b, refs_t *r, PyObject *user)
{
    int32_t *slot = ptrmap_slot(&r->written, (uintptr_t)user | 1);
    if (*slot >= 0) {
        put_ref(b, *slot);
        return 0;
    }
    PyObject *file, *name;
    int line = 0;
    if (PyCode_Check(user)) {
        file = ((PyCodeObject *)user)->co_filename;
        name = ((PyCodeObject *)user)->co_name;
        line = ((PyCodeObject *)user)->co_firstlineno;
        if (!PyUnicode_Check(file) || !PyUnicode_Check(name))
            return -1;
    } else if (PyUnicode_Check(user)) {
        file = NULL;
        name = user;
    } else {
        return -1;
    }
    *slot = r->next++; /* the reader numbers the tuple before its items */
    unsigned char x[2] = {')' | FLAG_REF, 3};
    put(b, x, 2);
    if (file) {
        if (put_str(b, r, file) < 0)
            return -1;
    } else if (r->tilde >= 0) {
        put_ref(b, r->tilde);
    } else {
        r->tilde = r->next++;
        unsigned char t[3] = {'z' | FLAG_REF, 1, '~'};
        put(b, t, 3);
    }
    put_coded(b, 'i', line);
    return put_str(b, r, name);
}

/* ---- the trailer's qualified names ---- */

/* (file, line, name, qualified name) of code object `code` into the list
 * being written, if its qualified name says more than its name (3.11+:
 * co_qualname; names.qualnames_of keeps the same); 1 if written, 0 if
 * not, -1: a name that cannot be written here. */
static int put_qualname(buf_t *b, refs_t *r, PyObject *code)
{
    if (!PyCode_Check(code))
        return 0;
    PyCodeObject *c = (PyCodeObject *)code;
    PyObject *qual = fpy_code_qualname(c);
    if (!qual || qual == c->co_name || !PyUnicode_Check(qual) ||
        PyUnicode_Compare(qual, c->co_name) == 0)
        return 0;
    put_tuple(b, 4);
    if (put_str(b, r, c->co_filename) < 0)
        return -1;
    put_coded(b, 'i', c->co_firstlineno);
    return put_str(b, r, c->co_name) < 0 || put_str(b, r, qual) < 0 ? -1 : 1;
}

/* The marshal bytes of the list of put_qualname's tuples of `codes`, with
 * references of their own (the trailer is read by a marshal.loads of its
 * own), b"" if there are none; NULL with no exception: cannot be written
 * here. */
static PyObject *qualnames_bytes(PyObject *codes)
{
    Py_ssize_t n = PyList_GET_SIZE(codes);
    refs_t refs = {{NULL, NULL, 0}, 0, -1};
    buf_t b = {NULL, 0, 0, 0};
    PyObject *out = NULL;
    if (ptrmap_init(&refs.written, 3 * (size_t)n + 2) < 0) {
        PyErr_NoMemory();
        goto done;
    }
    put_coded(&b, '[', 0); /* the count, set below */
    int32_t count = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        int r = put_qualname(&b, &refs, PyList_GET_ITEM(codes, i));
        if (r < 0)
            goto done;
        count += r;
    }
    if (b.failed) {
        PyErr_NoMemory();
        goto done;
    }
    le32(b.data + 1, count);
    out = PyBytes_FromStringAndSize((const char *)b.data, count ? (Py_ssize_t)b.len : 0);
done:
    PyMem_Free(b.data);
    ptrmap_free(&refs.written);
    return out;
}

/* ---- two rows sharing a key ---- */

/* Whether the keys of users a and b are equal (code objects, or C
 * functions' names; put_key refuses the rest). */
static int same_key(PyObject *a, PyObject *b)
{
    if (PyCode_Check(a) != PyCode_Check(b))
        return 0;
    if (!PyCode_Check(a))
        return PyUnicode_Check(a) && PyUnicode_Check(b) && PyUnicode_Compare(a, b) == 0;
    PyCodeObject *x = (PyCodeObject *)a, *y = (PyCodeObject *)b;
    return x->co_firstlineno == y->co_firstlineno &&
           PyObject_RichCompareBool(x->co_name, y->co_name, Py_EQ) == 1 &&
           PyObject_RichCompareBool(x->co_filename, y->co_filename, Py_EQ) == 1;
}

static Py_hash_t key_hash(PyObject *user)
{
    if (!PyCode_Check(user))
        return PyObject_Hash(user);
    PyCodeObject *c = (PyCodeObject *)user;
    Py_hash_t f = PyObject_Hash(c->co_filename), n = PyObject_Hash(c->co_name);
    if (f == -1 || n == -1)
        return -1;
    return (Py_hash_t)((Py_uhash_t)f * 1000003U ^ (Py_uhash_t)n ^ (Py_uhash_t)c->co_firstlineno);
}

/* Whether two of the n users share a key (pstats would sum them into one
 * row): 1 yes, 0 no, -1 error. */
static int shared_key(PyObject *const *users, size_t n)
{
    size_t size = 16;
    while (size < 2 * n)
        size *= 2;
    size_t *slots = PyMem_Calloc(size, sizeof *slots); /* row + 1, 0: empty */
    Py_hash_t *hashes = PyMem_Calloc(n ? n : 1, sizeof *hashes);
    int found = 0;
    if (!slots || !hashes) {
        PyErr_NoMemory();
        found = -1;
    }
    for (size_t i = 0; found == 0 && i < n; i++) {
        Py_hash_t h = key_hash(users[i]);
        if (h == -1) {
            found = -1;
            break;
        }
        hashes[i] = h;
        size_t j = (size_t)h & (size - 1);
        for (; slots[j]; j = (j + 1) & (size - 1)) {
            size_t k = slots[j] - 1;
            if (hashes[k] == h && same_key(users[k], users[i])) {
                found = 1;
                break;
            }
        }
        if (!found)
            slots[j] = i + 1;
    }
    PyMem_Free(slots);
    PyMem_Free(hashes);
    return found;
}

/* Whether `user` is a code object of file `skip_file`. */
static int in_file(PyObject *user, PyObject *skip_file)
{
    if (!PyCode_Check(user))
        return 0;
    PyObject *f = ((PyCodeObject *)user)->co_filename;
    return f == skip_file || (PyUnicode_Check(f) && PyUnicode_Compare(f, skip_file) == 0);
}

/* One row: its entry, whether it is left out. */
typedef struct {
    const fp_entry_t *e;
    int skip;
} row_t;

/* An edge between two rows, by index. */
typedef struct {
    size_t callee, caller;
    const fp_edge_t *g;
} link_t;

/* links sorted by callee, then caller (two stable counting sorts, the
 * second on the first's order), through tmp; -1: out of memory. */
static int sort_links(link_t *links, link_t *tmp, size_t n_links, size_t n_rows)
{
    size_t *start = PyMem_Calloc(n_rows + 1, sizeof *start);
    if (!start)
        return -1;
    for (int pass = 0; pass < 2; pass++) {
        link_t *from = pass ? tmp : links, *to = pass ? links : tmp;
        memset(start, 0, (n_rows + 1) * sizeof *start);
        for (size_t k = 0; k < n_links; k++)
            start[(pass ? from[k].callee : from[k].caller) + 1]++;
        for (size_t i = 0; i < n_rows; i++)
            start[i + 1] += start[i];
        for (size_t k = 0; k < n_links; k++)
            to[start[pass ? from[k].callee : from[k].caller]++] = from[k];
    }
    PyMem_Free(start);
    return 0;
}

/* Whether row i is a C function called only from skipped rows (links
 * sorted by callee) that hides(name) hides: 1 yes, 0 no, -1 error. */
static int hidden_c_function(const row_t *rows, size_t i, const link_t *links, size_t n_links,
                             PyObject *hides)
{
    PyObject *user = (PyObject *)rows[i].e->user;
    if (hides == Py_None || !PyUnicode_Check(user))
        return 0;
    int callers = 0;
    for (size_t k = 0; k < n_links; k++) {
        if (links[k].callee != i)
            continue;
        if (!rows[links[k].caller].skip)
            return 0;
        callers++;
    }
    if (!callers)
        return 0;
    Py_INCREF(user); /* (hides may clear the profiler, which holds it) */
    PyObject *got = PyObject_CallOneArg(hides, user);
    Py_DECREF(user);
    if (!got)
        return -1;
    int r = PyObject_IsTrue(got);
    Py_DECREF(got);
    return r;
}

static PyObject *write_table(fpy_profiler_t *p, const fp_thread_t *t, PyObject *skip_file,
                             PyObject *hides)
{
    const double factor = 1.0 / p->clock.ticks_per_second;
    size_t n = 0, n_links = 0;
    const fp_entry_t *e;
    for (e = t->entries; e; e = e->hh.next)
        n += e->callcount != 0;
    const fp_edge_t *g;
    for (g = t->edges; g; g = g->hh.next)
        n_links++;
    row_t *rows = PyMem_Calloc(n ? n : 1, sizeof *rows);
    link_t *links = PyMem_Calloc(n_links ? n_links : 1, sizeof *links);
    link_t *tmp = PyMem_Calloc(n_links ? n_links : 1, sizeof *tmp);
    PyObject **users = PyMem_Calloc(n ? n : 1, sizeof *users);
    ptrmap_t places = {NULL, NULL, 0};     /* entry -> row index */
    ptrmap_t seen_files = {NULL, NULL, 0}; /* the files listed */
    refs_t refs = {{NULL, NULL, 0}, 0, -1};
    int maps =
        ptrmap_init(&places, n) | ptrmap_init(&seen_files, n) | ptrmap_init(&refs.written, 3 * n + 2);
    PyObject *codes = PyList_New(0);
    PyObject *files = PyList_New(0); /* the rows' files, each object once */
    PyObject *result = NULL;
    buf_t b = {NULL, 0, 0, 0};
    uint64_t calls = 0;
    if (!rows || !links || !tmp || !users || maps < 0 || !codes || !files) {
        if (!PyErr_Occurred())
            PyErr_NoMemory();
        goto done;
    }
    size_t i = 0;
    for (e = t->entries; e; e = e->hh.next) {
        if (e->callcount == 0)
            continue;
        if (!fits(e->callcount))
            goto general;
        calls += e->callcount;
        users[i] = (PyObject *)e->user;
        rows[i] = (row_t){e, in_file(users[i], skip_file)};
        *ptrmap_slot(&places, (uintptr_t)e) = (int32_t)i;
        i++;
    }
    int shared = shared_key(users, n);
    if (shared < 0)
        goto done;
    if (shared)
        goto general;
    size_t m = 0;
    for (g = t->edges; g; g = g->hh.next) {
        int32_t callee = *ptrmap_slot(&places, (uintptr_t)g->key.callee);
        int32_t caller = *ptrmap_slot(&places, (uintptr_t)g->key.caller);
        if (callee < 0 || caller < 0)
            continue; /* an end that completed no call is no row */
        if (!fits(g->callcount))
            goto general;
        links[m++] = (link_t){(size_t)callee, (size_t)caller, g};
    }
    n_links = m;
    if (sort_links(links, tmp, n_links, n) < 0) {
        PyErr_NoMemory();
        goto done;
    }
    /* hides is Python code: if it enabled, disabled or cleared the
     * profiler (or dropped a request), the rows may point at freed entries */
    const uint64_t generation = p->generation;
    for (i = 0; i < n; i++) {
        if (rows[i].skip)
            continue;
        int hidden = hidden_c_function(rows, i, links, n_links, hides);
        if (hidden < 0)
            goto done;
        if (p->generation != generation) {
            PyErr_SetString(PyExc_RuntimeError,
                            "_stats_marshal: hides_c_function changed the profiler it reads");
            goto done;
        }
        rows[i].skip = hidden;
    }
    put(&b, "{", 1);
    size_t k = 0;
    for (i = 0; i < n; i++) {
        const fp_entry_t *r = rows[i].e;
        size_t first = k;
        while (k < n_links && links[k].callee == i)
            k++;
        if (rows[i].skip)
            continue;
        if (PyList_Append(codes, users[i]) < 0)
            goto done;
        if (PyCode_Check(users[i])) {
            PyObject *file = ((PyCodeObject *)users[i])->co_filename;
            int32_t *seen = ptrmap_slot(&seen_files, (uintptr_t)file);
            if (*seen < 0 && (*seen = 0, PyList_Append(files, file) < 0))
                goto done;
        }
        if (put_key(&b, &refs, users[i]) < 0)
            goto general;
        put_tuple(&b, 5);
        put_count(&b, r->callcount - r->reccallcount);
        put_count(&b, r->callcount);
        put_float(&b, r->owntime * factor);
        put_float(&b, r->cumtime * factor);
        put(&b, "{", 1);
        for (size_t j = first; j < k; j++) {
            const fp_edge_t *edge = links[j].g;
            if (rows[links[j].caller].skip)
                continue;
            if (put_key(&b, &refs, users[links[j].caller]) < 0)
                goto general;
            put_tuple(&b, 4);
            put_count(&b, edge->callcount);
            put_count(&b, edge->callcount - edge->reccallcount);
            put_float(&b, edge->owntime * factor);
            put_float(&b, edge->cumtime * factor);
        }
        put(&b, "0", 1);
    }
    put(&b, "0", 1);
    if (b.failed) {
        PyErr_NoMemory();
        goto done;
    }
    PyObject *quals = qualnames_bytes(codes);
    if (!quals) {
        if (PyErr_Occurred())
            goto done;
        goto general;
    }
    PyObject *bytes = PyBytes_FromStringAndSize((const char *)b.data, (Py_ssize_t)b.len);
    if (bytes)
        result = Py_BuildValue("(NNOOKK)", bytes, quals, codes, files, (unsigned long long)calls,
                               (unsigned long long)t->id);
    else
        Py_DECREF(quals);
    goto done;
general:
    result = Py_NewRef(Py_None);
done:
    PyMem_Free(b.data);
    PyMem_Free(rows);
    PyMem_Free(links);
    PyMem_Free(tmp);
    PyMem_Free(users);
    ptrmap_free(&places);
    ptrmap_free(&seen_files);
    ptrmap_free(&refs.written);
    Py_XDECREF(codes);
    Py_XDECREF(files);
    return result;
}

PyObject *fpy_stats_marshal(fpy_profiler_t *p, PyObject *args)
{
    PyObject *skip_file, *hides;
    if (!PyArg_ParseTuple(args, "UO:_stats_marshal", &skip_file, &hides))
        return NULL;
    if (hides != Py_None && !PyCallable_Check(hides)) {
        PyErr_Format(PyExc_TypeError,
                     "_stats_marshal: hides_c_function must be callable or None, not %.100s",
                     Py_TYPE(hides)->tp_name);
        return NULL;
    }
    const fp_thread_t *one = NULL, *t;
    for (t = p->core.threads; t; t = t->hh.next) {
        if (t->n_entries == 0)
            continue;
        if (one)
            Py_RETURN_NONE; /* several threads: the general path */
        one = t;
    }
    if (!one)
        Py_RETURN_NONE;
    return write_table(p, one, skip_file, hides);
}
