/* Avro records decoded straight into column buffers (indexcore.warehouse.avro_columns).
 *
 * The caller compiles the writer schema into a program (avro_columns.compile_program): nodes of
 * four int32 (op, column, argument, index of the next sibling) in pre-order (a union's argument:
 * its null branch, plus 2 when a null there is refused). decode() runs the
 * program over the inflated data of each container block and fills one buffer set per column:
 * bit-packed validity, values (ints, floats, bits, bytes) and int32 offsets (bytes, lists).
 * A column of -1 means "parse and drop" (fields not asked for). Bad bytes raise ValueError
 * (message, block index, byte offset in the block's inflated data, record index). No threads,
 * no global state: safe in a fork() child.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "buffers.h"

enum { OP_NULL = 0, OP_BOOL, OP_INT, OP_LONG, OP_FLOAT, OP_DOUBLE, OP_BYTES, OP_STRING, OP_FIXED,
       OP_RECORD, OP_UNION, OP_ARRAY };

typedef struct {
    Buf values, offsets, validity;
    Py_ssize_t length, nulls;
} Col;

typedef struct {
    const int32_t *prog;
    Py_ssize_t nprog;
    Col *cols;
    int ncols;
    const uint8_t *data;
    Py_ssize_t pos, end;
    const char *err;
    Py_ssize_t err_pos;
    int nomem;
} State;

static inline int put(State *s, Buf *b, const void *src, Py_ssize_t n) {
    if (buf_put(b, src, n)) { s->nomem = 1; return -1; }
    return 0;
}

/* one validity bit for the next slot of a column, then the slot counted; the bitmap is made
 * at the first null (a column without nulls has none) */
static inline int mark(State *s, Col *c, int valid) {
    if (valid && !c->nulls) { c->length++; return 0; }
    if (!c->nulls) {  /* the first null: every slot before it was valid */
        Py_ssize_t need = (c->length >> 3) + 1;
        if (buf_grow(&c->validity, need)) { s->nomem = 1; return -1; }
        memset(c->validity.p, 0xFF, (size_t)(c->length >> 3));
        c->validity.p[c->length >> 3] = (char)((1 << (c->length & 7)) - 1);
        c->validity.len = need;
    }
    Py_ssize_t byte = c->length >> 3;
    if (byte >= c->validity.len) {
        if (buf_grow(&c->validity, 1)) { s->nomem = 1; return -1; }
        c->validity.p[c->validity.len++] = 0;
    }
    if (valid) c->validity.p[byte] |= (char)(1 << (c->length & 7));
    else c->nulls++;
    c->length++;
    return 0;
}

static inline int fail(State *s, const char *why) {
    if (!s->err) { s->err = why; s->err_pos = s->pos; }
    return -1;
}

static inline int read_long(State *s, int64_t *out) {
    uint64_t v = 0;
    int shift = 0;
    Py_ssize_t start = s->pos;
    while (1) {
        if (s->pos >= s->end) { s->pos = start; return fail(s, "truncated varint"); }
        uint8_t b = s->data[s->pos++];
        if (shift == 63 && (b & 0x7E)) { s->pos = start; return fail(s, "varint longer than 64 bits"); }
        v |= (uint64_t)(b & 0x7F) << shift;
        if (!(b & 0x80)) break;
        shift += 7;
        if (shift > 63) { s->pos = start; return fail(s, "varint longer than 64 bits"); }
    }
    *out = (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
    return 0;
}

static int valid_utf8(const uint8_t *p, Py_ssize_t n) {
    Py_ssize_t i = 0;
    while (i < n) {
        if (i + 8 <= n) {  /* eight ASCII bytes at a time */
            uint64_t w;
            memcpy(&w, p + i, 8);
            if (!(w & 0x8080808080808080ULL)) { i += 8; continue; }
        }
        uint8_t c = p[i];
        if (c < 0x80) { i++; continue; }
        int k;
        uint32_t cp;
        if ((c & 0xE0) == 0xC0) { k = 1; cp = c & 0x1F; }
        else if ((c & 0xF0) == 0xE0) { k = 2; cp = c & 0x0F; }
        else if ((c & 0xF8) == 0xF0) { k = 3; cp = c & 0x07; }
        else return 0;
        if (i + k >= n) return 0;
        for (int j = 1; j <= k; j++) {
            if ((p[i + j] & 0xC0) != 0x80) return 0;
            cp = (cp << 6) | (p[i + j] & 0x3F);
        }
        if ((k == 1 && cp < 0x80) || (k == 2 && cp < 0x800) || (k == 3 && (cp < 0x10000 || cp > 0x10FFFF))
            || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
        i += k + 1;
    }
    return 1;
}

/* the value of an absent (null) subtree: a null in every column under it */
static int null_slot(State *s, int node) {
    const int32_t *n = s->prog + 4 * node;
    Col *c = n[1] >= 0 ? &s->cols[n[1]] : NULL;
    switch (n[0]) {
    case OP_NULL:
        return 0;
    case OP_UNION:
        return null_slot(s, node + 1);
    case OP_RECORD: {
        if (c && mark(s, c, 0)) return -1;
        int child = node + 1;
        for (int k = 0; k < n[2]; k++) {
            if (null_slot(s, child)) return -1;
            child = s->prog[4 * child + 3];
        }
        return 0;
    }
    default:
        break;
    }
    if (!c) return 0;
    switch (n[0]) {
    case OP_BOOL:
        if ((c->length & 7) == 0 && put(s, &c->values, "\0", 1)) return -1;
        break;
    case OP_INT: case OP_FLOAT: { int32_t z = 0; if (put(s, &c->values, &z, 4)) return -1; break; }
    case OP_LONG: case OP_DOUBLE: { int64_t z = 0; if (put(s, &c->values, &z, 8)) return -1; break; }
    case OP_FIXED: {
        if (buf_grow(&c->values, n[2])) { s->nomem = 1; return -1; }
        memset(c->values.p + c->values.len, 0, (size_t)n[2]);
        c->values.len += n[2];
        break;
    }
    case OP_BYTES: case OP_STRING: {
        int32_t at = (int32_t)c->values.len;
        if (put(s, &c->offsets, &at, 4)) return -1;
        break;
    }
    case OP_ARRAY: {  /* an empty list: values.len counts a list column's items */
        int32_t start = (int32_t)c->values.len;
        if (put(s, &c->offsets, &start, 4)) return -1;
        break;
    }
    }
    return mark(s, c, 0);
}

static int dec(State *s, int node) {
    const int32_t *n = s->prog + 4 * node;
    Col *c = n[1] >= 0 ? &s->cols[n[1]] : NULL;
    switch (n[0]) {
    case OP_NULL:
        return 0;
    case OP_BOOL: {
        if (s->pos >= s->end) return fail(s, "truncated boolean");
        uint8_t b = s->data[s->pos];
        if (b > 1) return fail(s, "boolean byte is neither 0 nor 1");
        s->pos++;
        if (!c) return 0;
        if ((c->length & 7) == 0 && put(s, &c->values, "\0", 1)) return -1;
        if (b) c->values.p[c->length >> 3] |= (char)(1 << (c->length & 7));
        return mark(s, c, 1);
    }
    case OP_INT: {
        int64_t v;
        Py_ssize_t at = s->pos;
        if (read_long(s, &v)) return -1;
        if (v < INT32_MIN || v > INT32_MAX) { s->pos = at; return fail(s, "int out of 32-bit range"); }
        if (!c) return 0;
        int32_t w = (int32_t)v;
        if (put(s, &c->values, &w, 4)) return -1;
        return mark(s, c, 1);
    }
    case OP_LONG: {
        int64_t v;
        if (read_long(s, &v)) return -1;
        if (!c) return 0;
        if (put(s, &c->values, &v, 8)) return -1;
        return mark(s, c, 1);
    }
    case OP_FLOAT: case OP_DOUBLE: case OP_FIXED: {
        Py_ssize_t size = n[0] == OP_FLOAT ? 4 : n[0] == OP_DOUBLE ? 8 : n[2];
        if (s->end - s->pos < size) return fail(s, "value runs past the end of the block");
        if (c && put(s, &c->values, s->data + s->pos, size)) return -1;
        s->pos += size;
        return c ? mark(s, c, 1) : 0;
    }
    case OP_BYTES: case OP_STRING: {
        int64_t len;
        Py_ssize_t at = s->pos;
        if (read_long(s, &len)) return -1;
        if (len < 0) { s->pos = at; return fail(s, "negative length"); }
        if (len > s->end - s->pos) { s->pos = at; return fail(s, "length runs past the end of the block"); }
        if (n[0] == OP_STRING && !valid_utf8(s->data + s->pos, (Py_ssize_t)len)) {
            s->pos = at;
            return fail(s, "string is not valid UTF-8");
        }
        if (c) {
            if (c->values.len + len > INT32_MAX) return fail(s, "column over 2 GiB");
            int32_t start = (int32_t)c->values.len;
            if (put(s, &c->offsets, &start, 4) || put(s, &c->values, s->data + s->pos, (Py_ssize_t)len)) return -1;
        }
        s->pos += (Py_ssize_t)len;
        return c ? mark(s, c, 1) : 0;
    }
    case OP_RECORD: {
        int child = node + 1;
        for (int k = 0; k < n[2]; k++) {
            if (dec(s, child)) return -1;
            child = s->prog[4 * child + 3];
        }
        return c ? mark(s, c, 1) : 0;
    }
    case OP_UNION: {
        int64_t branch;
        Py_ssize_t at = s->pos;
        if (read_long(s, &branch)) return -1;
        if (branch != 0 && branch != 1) { s->pos = at; return fail(s, "union branch index out of range"); }
        if (branch == (n[2] & 1)) {
            if (n[2] & 2) { s->pos = at; return fail(s, "a null row (a row must be a record)"); }
            return null_slot(s, node + 1);
        }
        return dec(s, node + 1);
    }
    case OP_ARRAY: {
        /* list column: offsets[i] = first item of list i; values.len counts the items so far */
        int32_t start = c ? (int32_t)c->values.len : 0;
        if (c && put(s, &c->offsets, &start, 4)) return -1;
        while (1) {
            int64_t count;
            Py_ssize_t at = s->pos;
            if (read_long(s, &count)) return -1;
            if (count == 0) break;
            if (count < 0) {
                int64_t size;
                if (count == INT64_MIN) { s->pos = at; return fail(s, "array block count out of range"); }
                count = -count;
                if (read_long(s, &size)) return -1;
                if (size < 0 || size > s->end - s->pos) { s->pos = at; return fail(s, "array block size runs past the end of the block"); }
            }
            /* every item takes at least one byte (checked when compiled) */
            if (count > s->end - s->pos) { s->pos = at; return fail(s, "array count runs past the end of the block"); }
            for (int64_t k = 0; k < count; k++)
                if (dec(s, node + 1)) return -1;
            if (c) {
                if (c->values.len + count > INT32_MAX) return fail(s, "list column over 2^31 items");
                c->values.len += (Py_ssize_t)count;
            }
        }
        return c ? mark(s, c, 1) : 0;
    }
    }
    return fail(s, "bad program");
}

static void free_cols(Col *cols, int n) {
    for (int i = 0; i < n; i++) {
        free(cols[i].values.p);
        free(cols[i].offsets.p);
        free(cols[i].validity.p);
    }
    free(cols);
}

/* A column buffer handed to Python without a copy: it owns the malloc'd memory and exposes it
 * read-only through the buffer protocol (pyarrow.py_buffer keeps it alive). */
typedef struct {
    PyObject_HEAD
    char *p;
    Py_ssize_t len;
} Owned;

static void owned_dealloc(Owned *self) {
    free(self->p);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int owned_getbuffer(Owned *self, Py_buffer *view, int flags) {
    return PyBuffer_FillInfo(view, (PyObject *)self, self->p ? self->p : (char *)"", self->len, 1, flags);
}

static PyBufferProcs owned_as_buffer = {(getbufferproc)owned_getbuffer, NULL};

static PyTypeObject OwnedType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "indexcore.warehouse._avro_columns.Buffer",
    .tp_basicsize = sizeof(Owned),
    .tp_dealloc = (destructor)owned_dealloc,
    .tp_as_buffer = &owned_as_buffer,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A decoded column buffer (read-only, zero-copy into pyarrow).",
};

/* the buffer's memory moved into a new Owned (the Buf is left empty) */
static PyObject *bytes_of(Buf *b) {
    Owned *o = PyObject_New(Owned, &OwnedType);
    if (!o) return NULL;
    if (b->p && b->len < b->cap) {
        char *p = realloc(b->p, (size_t)(b->len ? b->len : 1));
        if (p) b->p = p;
    }
    o->p = b->p;
    o->len = b->len;
    b->p = NULL;
    b->len = b->cap = 0;
    return (PyObject *)o;
}

/* decode(program: bytes, ncols: int, kinds: bytes, blocks: list[tuple[bytes, int]]) ->
 *   list of (length, null_count, validity bytes | None, values bytes, offsets bytes | None)
 * kinds[i] is the op of column i (lists and strings get a closing offset). */
static PyObject *decode(PyObject *self, PyObject *args) {
    Py_buffer prog;
    int ncols;
    Py_buffer kinds;
    PyObject *blocks;
    if (!PyArg_ParseTuple(args, "y*iy*O!", &prog, &ncols, &kinds, &PyList_Type, &blocks)) return NULL;
    PyObject *result = NULL;
    Col *cols = NULL;
    if (prog.len % 16 || prog.len == 0 || ncols < 0 || kinds.len != ncols) {
        PyErr_SetString(PyExc_TypeError, "bad program");
        goto done;
    }
    cols = calloc((size_t)(ncols ? ncols : 1), sizeof(Col));
    if (!cols) { PyErr_NoMemory(); goto done; }
    State s = {0};
    s.prog = (const int32_t *)prog.buf;
    s.nprog = prog.len / 16;
    s.cols = cols;
    s.ncols = ncols;
    for (Py_ssize_t i = 0; i < s.nprog; i++) {
        const int32_t *n = s.prog + 4 * i;
        if (n[0] < OP_NULL || n[0] > OP_ARRAY || n[1] < -1 || n[1] >= ncols || n[3] <= i || n[3] > s.nprog) {
            PyErr_SetString(PyExc_TypeError, "bad program");
            goto done;
        }
    }
    Py_ssize_t nblocks = PyList_GET_SIZE(blocks);
    long long total = 0, done_rows = 0, in_bytes = 0;  /* to size the buffers after the first block */
    for (Py_ssize_t b = 0; b < nblocks; b++) {
        PyObject *item = PyList_GET_ITEM(blocks, b);
        if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 2 || !PyBytes_Check(PyTuple_GET_ITEM(item, 0))) {
            PyErr_SetString(PyExc_TypeError, "blocks must be (bytes, count) tuples");
            goto done;
        }
        long long n = PyLong_AsLongLong(PyTuple_GET_ITEM(item, 1));
        if (n == -1 && PyErr_Occurred()) goto done;
        if (n > 0) total += n;
        in_bytes += PyBytes_GET_SIZE(PyTuple_GET_ITEM(item, 0));
    }
    for (Py_ssize_t b = 0; b < nblocks; b++) {
        PyObject *item = PyList_GET_ITEM(blocks, b);
        Py_buffer data;
        long long count;
        if (!PyArg_ParseTuple(item, "y*L", &data, &count)) goto done;
        s.data = (const uint8_t *)data.buf;
        s.pos = 0;
        s.end = data.len;
        s.err = NULL;
        long long r = 0;
        int bad = 0;
        if (count < 0 || count > data.len) {
            s.err = "record count larger than the block's bytes";
            bad = 1;
        } else {
            Py_BEGIN_ALLOW_THREADS
            for (r = 0; r < count; r++)
                if (dec(&s, 0)) { bad = 1; break; }
            if (!bad && s.pos != s.end) { s.err = "bytes left over after the block's records"; s.err_pos = s.pos; bad = 1; }
            Py_END_ALLOW_THREADS
        }
        PyBuffer_Release(&data);
        done_rows += r;
        if (!bad && b == 0 && done_rows > 0 && total > done_rows) {
            /* room for every block at the first block's bytes per record (at most 16 bytes per
             * input byte): a few reallocations instead of one per doubling */
            for (int i = 0; i < ncols && !bad; i++) {
                Buf *bufs[3] = {&cols[i].values, &cols[i].offsets, &cols[i].validity};
                for (int k = 0; k < 3; k++) {
                    long long want = bufs[k]->len * total / done_rows + 64;
                    if (want > 16 * in_bytes + 64) want = 16 * in_bytes + 64;
                    if (bufs[k]->len && want > bufs[k]->len && buf_grow(bufs[k], (Py_ssize_t)(want - bufs[k]->len))) {
                        s.nomem = 1;
                        bad = 1;
                    }
                }
            }
        }
        if (bad) {
            if (s.nomem) PyErr_NoMemory();
            else PyErr_SetObject(PyExc_ValueError, Py_BuildValue("(snnL)", s.err, b, s.err_pos, r));
            goto done;
        }
    }
    result = PyList_New(ncols);
    if (!result) goto done;
    for (int i = 0; i < ncols; i++) {
        Col *c = &cols[i];
        int op = ((const uint8_t *)kinds.buf)[i];
        PyObject *offsets = Py_None;
        Py_INCREF(Py_None);
        if (op == OP_BYTES || op == OP_STRING || op == OP_ARRAY) {
            int32_t end = (int32_t)c->values.len;
            if (put(&s, &c->offsets, &end, 4)) { Py_CLEAR(result); PyErr_NoMemory(); Py_DECREF(offsets); goto done; }
            Py_DECREF(offsets);
            offsets = bytes_of(&c->offsets);
        }
        PyObject *validity = c->nulls ? bytes_of(&c->validity) : (Py_INCREF(Py_None), Py_None);
        PyObject *values = op == OP_ARRAY || op == OP_RECORD ? (Py_INCREF(Py_None), Py_None) : bytes_of(&c->values);
        PyObject *t = (offsets && validity && values)
            ? Py_BuildValue("(nnNNN)", c->length, c->nulls, validity, values, offsets) : NULL;
        if (!t) { Py_CLEAR(result); goto done; }
        PyList_SET_ITEM(result, i, t);
    }
done:
    if (cols) free_cols(cols, ncols);
    PyBuffer_Release(&prog);
    PyBuffer_Release(&kinds);
    return result;
}

/* distinct(chunks: list[tuple[offsets, data, offset, length]]) -> bool: whether every string of
 * the chunks (Arrow string arrays without nulls: int32 offsets and data buffers, the array's
 * offset and length) differs from every other. An exact check (bytes compared on equal hashes)
 * in one open-addressing table: what plan_columns asks before it takes the entries of manifests
 * as they are (every file name added once), at a fraction of a general hash of every name. */
typedef struct { uint32_t tag, row; } Slot;  /* tag: the hash's high half (0: empty); row: 1 + the string's row */

static uint64_t hash_bytes(const uint8_t *p, int32_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ (uint64_t)n;
    int32_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h = (h ^ w) * 0xFF51AFD7ED558CCDULL;
        h ^= h >> 32;
    }
    if (i < n) {
        uint64_t w = 0;
        memcpy(&w, p + i, (size_t)(n - i));
        h = (h ^ w) * 0xFF51AFD7ED558CCDULL;
    }
    h ^= h >> 29;
    h *= 0xBF58476D1CE4E5B9ULL;
    h ^= h >> 32;
    return h;
}

static PyObject *distinct(PyObject *self, PyObject *args) {
    PyObject *chunks;
    if (!PyArg_ParseTuple(args, "O!", &PyList_Type, &chunks)) return NULL;
    Py_ssize_t nchunks = PyList_GET_SIZE(chunks);
    Py_buffer *views = calloc((size_t)(2 * nchunks + 1), sizeof(Py_buffer));
    Py_ssize_t *starts = calloc((size_t)(2 * nchunks + 1), sizeof(Py_ssize_t));
    Py_ssize_t got = 0, total = 0;
    Slot *table = NULL;
    const uint8_t **ptrs = NULL;
    int32_t *lens = NULL;
    PyObject *result = NULL;
    if (!views || !starts) { PyErr_NoMemory(); goto out; }
    for (Py_ssize_t c = 0; c < nchunks; c++) {
        PyObject *item = PyList_GET_ITEM(chunks, c);
        Py_ssize_t offset, length;
        if (!PyTuple_Check(item) || !PyArg_ParseTuple(item, "y*y*nn", &views[2 * c], &views[2 * c + 1], &offset,
                                                      &length)) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "chunks must be (offsets, data, offset, length)");
            goto out;
        }
        got = c + 1;
        if (offset < 0 || length < 0 || views[2 * c].len / 4 < offset + length + (length > 0)) {
            PyErr_SetString(PyExc_ValueError, "offsets buffer shorter than the array");
            goto out;
        }
        starts[2 * c] = offset;
        starts[2 * c + 1] = length;
        total += length;
    }
    if (total >= INT32_MAX / 2) { PyErr_SetString(PyExc_ValueError, "too many strings"); goto out; }
    size_t cap = 16;
    while (cap < (size_t)total * 2) cap *= 2;
    table = calloc(cap, sizeof(Slot));
    ptrs = malloc(sizeof(*ptrs) * (size_t)(total + 1));
    lens = malloc(sizeof(*lens) * (size_t)(total + 1));
    if (!table || !ptrs || !lens) { PyErr_NoMemory(); goto out; }
    int same = 0, bad = 0;
    Py_BEGIN_ALLOW_THREADS
    uint32_t row = 0;
    for (Py_ssize_t c = 0; c < nchunks && !same && !bad; c++) {
        const int32_t *off = (const int32_t *)views[2 * c].buf + starts[2 * c];
        const uint8_t *data = (const uint8_t *)views[2 * c + 1].buf;
        Py_ssize_t dlen = views[2 * c + 1].len;
        for (Py_ssize_t i = 0; i < starts[2 * c + 1]; i++, row++) {
            int32_t a = off[i], b = off[i + 1];
            if (a < 0 || b < a || b > dlen) { bad = 1; break; }
            const uint8_t *p = data + a;
            int32_t n = b - a;
            uint64_t h = hash_bytes(p, n);
            uint32_t tag = (uint32_t)(h >> 32) | 1;
            size_t k = (size_t)h & (cap - 1);
            while (table[k].tag) {
                if (table[k].tag == tag) {
                    uint32_t r = table[k].row;
                    if (lens[r] == n && !memcmp(ptrs[r], p, (size_t)n)) { same = 1; break; }
                }
                k = (k + 1) & (cap - 1);
            }
            if (same) break;
            table[k].tag = tag;
            table[k].row = row;
            ptrs[row] = p;
            lens[row] = n;
        }
    }
    Py_END_ALLOW_THREADS
    if (bad) { PyErr_SetString(PyExc_ValueError, "string offsets outside the data buffer"); goto out; }
    result = PyBool_FromLong(!same);
out:
    for (Py_ssize_t i = 0; i < 2 * got; i++) PyBuffer_Release(&views[i]);
    free(views);
    free(starts);
    free(table);
    free(ptrs);
    free(lens);
    return result;
}

static PyMethodDef methods[] = {
    {"decode", decode, METH_VARARGS, "Decode inflated Avro blocks into column buffers."},
    {"distinct", distinct, METH_VARARGS, "Whether the strings of some Arrow string chunks all differ."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_avro_columns", NULL, -1, methods};

PyMODINIT_FUNC PyInit__avro_columns(void) {
    if (PyType_Ready(&OwnedType) < 0) return NULL;
    return PyModule_Create(&module);
}
