/* Portable 32-bit roaring bitmaps decoded to row arrays, and a BSI part to its rows' values
 * (indexcore.formats.bsi): a page that summarises and tests thousands of BSI blobs reads each
 * part's bitmaps once, in C, instead of a pyroaring object and set operations per slice.
 *
 * Strict: anything that is not a well-formed portable bitmap (cookie, counts, keys in order,
 * offsets where the containers are, arrays and runs sorted, a bitmap container's bits matching its
 * cardinality, every byte inside the buffer) raises ValueError, and the caller reads the blob
 * through its Python reader, which names the fault, its structure and offset. No global state.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "buffers.h"

#define COOKIE_NO_RUN 12346u
#define COOKIE_RUN 12347u
#define NO_OFFSET_THRESHOLD 4
#define ARRAY_MAX 4096
#define BITMAP_BYTES 8192
#define MAX_SLICES 63 /* values kept as int64: a part of 64 slices is left to the Python reader */

/* Row numbers as uint32 in a byte buffer (Buf), appended in ascending order. */
typedef Buf Rows;
#define ROWS(r) ((const uint32_t *)(r).p)
#define NROWS(r) ((r).len / (Py_ssize_t)sizeof(uint32_t))

static inline int push(Rows *r, uint32_t value) { return buf_put_u32(r, value); }

/* Decode the bitmap at buf[start:end] into rows (appended, ascending); its size in *size.
 * Returns 0, or a message (bad bytes) / "" (no memory). */
static const char *decode(const uint8_t *buf, Py_ssize_t start, Py_ssize_t end, Rows *rows, Py_ssize_t *size) {
    if (start < 0 || start + 4 > end) return "truncated cookie";
    uint32_t cookie = le32(buf + start);
    Py_ssize_t pos, count;
    const uint8_t *flags = NULL;
    int offsets;
    if ((cookie & 0xFFFF) == COOKIE_RUN) {
        count = (Py_ssize_t)(cookie >> 16) + 1;
        flags = buf + start + 4;
        pos = start + 4 + (count + 7) / 8;
        offsets = count >= NO_OFFSET_THRESHOLD;
    } else if (cookie == COOKIE_NO_RUN) {
        if (start + 8 > end) return "truncated container count";
        count = (Py_ssize_t)le32(buf + start + 4);
        if (count > 65536) return "impossible container count";
        pos = start + 8;
        offsets = 1;
    } else {
        return "not a portable roaring bitmap";
    }
    if (pos > end) return "truncated run flags";
    Py_ssize_t keys = pos;
    pos += 4 * count;
    Py_ssize_t offs = pos;
    if (offsets) pos += 4 * count;
    if (pos > end) return "truncated container header";
    long prev_key = -1;
    for (Py_ssize_t i = 0; i < count; i++) {
        uint32_t key = le16(buf + keys + 4 * i);
        Py_ssize_t card = (Py_ssize_t)le16(buf + keys + 4 * i + 2) + 1;
        if ((long)key <= prev_key) return "container keys out of order";
        prev_key = key;
        if (offsets && (Py_ssize_t)le32(buf + offs + 4 * i) != pos - start) return "container offset mismatch";
        uint32_t high = key << 16;
        if (flags && ((flags[i / 8] >> (i % 8)) & 1)) {
            if (pos + 2 > end) return "truncated run container";
            Py_ssize_t runs = le16(buf + pos);
            pos += 2;
            if (runs == 0) return "empty run container";
            if (pos + 4 * runs > end) return "truncated run container";
            long prev_end = -2;
            Py_ssize_t seen = 0;
            for (Py_ssize_t r = 0; r < runs; r++) {
                long first = le16(buf + pos + 4 * r), last = first + le16(buf + pos + 4 * r + 2);
                if (last > 65535) return "run past the container";
                if (first <= prev_end + 1) return "runs out of order";
                prev_end = last;
                for (long v = first; v <= last; v++)
                    if (push(rows, high | (uint32_t)v)) return "";
                seen += last - first + 1;
            }
            if (seen != card) return "run cardinality mismatch";
            pos += 4 * runs;
        } else if (card <= ARRAY_MAX) {
            if (pos + 2 * card > end) return "truncated array container";
            long prev = -1;
            for (Py_ssize_t j = 0; j < card; j++) {
                long v = le16(buf + pos + 2 * j);
                if (v <= prev) return "array container out of order";
                prev = v;
                if (push(rows, high | (uint32_t)v)) return "";
            }
            pos += 2 * card;
        } else {
            if (pos + BITMAP_BYTES > end) return "truncated bitmap container";
            Py_ssize_t seen = 0;
            for (Py_ssize_t w = 0; w < BITMAP_BYTES / 8; w++) {
                uint64_t word = 0;
                for (int k = 7; k >= 0; k--) word = (word << 8) | buf[pos + 8 * w + k]; /* little-endian words */
                while (word) {
                    int bit = __builtin_ctzll(word);
                    if (push(rows, high | (uint32_t)(64 * w + bit))) return "";
                    seen++;
                    word &= word - 1;
                }
            }
            if (seen != card) return "bitmap cardinality mismatch";
            pos += BITMAP_BYTES;
        }
    }
    *size = pos - start;
    return NULL;
}

static PyObject *fail(const char *why, Py_ssize_t at) {
    if (!*why) return PyErr_NoMemory();
    PyErr_Format(PyExc_ValueError, "%s at byte %zd", why, at);
    return NULL;
}

/* The (data, start, end) arguments both functions take, end clipped to the data: 0, or -1 with
 * an exception set (the buffer is held only on success). */
static int data_range(PyObject *args, Py_buffer *b, Py_ssize_t *start, Py_ssize_t *end) {
    if (!PyArg_ParseTuple(args, "y*nn", b, start, end)) return -1;
    if (*end > b->len) *end = b->len;
    return 0;
}

/* One bitmap's (offset, length) appended to the spans: 0, or -1 (an exception set). */
static int add_span(PyObject *spans, Py_ssize_t pos, Py_ssize_t size) {
    return append_new(spans, Py_BuildValue("(nn)", pos, size));
}

/* rows(data, start, end) -> (uint32 rows as bytes, size): one bitmap. */
static PyObject *py_rows(PyObject *self, PyObject *args) {
    Py_buffer b;
    Py_ssize_t start, end;
    if (data_range(args, &b, &start, &end)) return NULL;
    Rows rows = {0};
    Py_ssize_t size = 0;
    const char *why = decode(b.buf, start, end, &rows, &size);
    PyObject *out = NULL;
    if (why) {
        fail(why, start);
    } else {
        out = Py_BuildValue("(y#n)", rows.p ? rows.p : "", rows.len, size);
    }
    free(rows.p);
    PyBuffer_Release(&b);
    return out;
}

/* bsi_part(data, pos, end) -> (ebm rows: uint32 bytes, their values: int64 bytes, end position,
 * spans ((offset, length) of the ebm, then of each slice)): a BSI part from its existence bitmap
 * on (after the part's version, min and max). A slice's rows outside the ebm are left out, as
 * the bit-sliced comparisons leave them. */
static PyObject *py_bsi_part(PyObject *self, PyObject *args) {
    Py_buffer b;
    Py_ssize_t pos, end;
    if (data_range(args, &b, &pos, &end)) return NULL;
    const uint8_t *buf = b.buf;
    Rows ebm = {0}, slice = {0};
    int64_t *values = NULL;
    PyObject *spans = NULL, *out = NULL;
    Py_ssize_t size = 0, at = pos;
    const char *why = decode(buf, pos, end, &ebm, &size);
    if (why) goto done;
    spans = PyList_New(0);
    if (!spans || add_span(spans, pos, size)) { why = ""; goto done; }
    pos += size;
    at = pos;
    if (pos + 4 > end) { why = "truncated slice count"; goto done; }
    int32_t count = be32(buf + pos);
    if (count < 0 || count > MAX_SLICES) { why = "slice count left to the Python reader"; goto done; }
    pos += 4;
    const Py_ssize_t n = NROWS(ebm);
    const uint32_t *ebm_rows = ROWS(ebm);
    values = calloc(n ? (size_t)n : 1, sizeof(int64_t));
    if (!values) { why = ""; goto done; }
    for (int32_t i = 0; i < count; i++) {
        slice.len = 0;
        at = pos;
        why = decode(buf, pos, end, &slice, &size);
        if (why) goto done;
        if (add_span(spans, pos, size)) { why = ""; goto done; }
        pos += size;
        const uint32_t *slice_rows = ROWS(slice);
        Py_ssize_t j = 0;
        for (Py_ssize_t k = 0, m = NROWS(slice); k < m; k++) { /* both ascending: one merge pass */
            uint32_t row = slice_rows[k];
            while (j < n && ebm_rows[j] < row) j++;
            if (j < n && ebm_rows[j] == row) values[j] |= (int64_t)1 << i;
        }
    }
    PyObject *spans_tuple = PyList_AsTuple(spans);
    if (!spans_tuple) { why = ""; goto done; }
    out = Py_BuildValue("(y#y#nN)", ebm.p ? ebm.p : "", ebm.len, (const char *)values,
                        n * (Py_ssize_t)sizeof(int64_t), pos, spans_tuple);
done:
    if (why) fail(why, at);
    free(ebm.p);
    free(slice.p);
    free(values);
    Py_XDECREF(spans);
    PyBuffer_Release(&b);
    return out;
}

static PyMethodDef methods[] = {
    {"rows", py_rows, METH_VARARGS, "rows(data, start, end) -> (uint32 rows bytes, size) of one portable bitmap"},
    {"bsi_part", py_bsi_part, METH_VARARGS,
     "bsi_part(data, pos, end) -> (rows, values, end position, spans) of a BSI part from its ebm on"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_roaring_rows", NULL, -1, methods};

PyMODINIT_FUNC PyInit__roaring_rows(void) { return PyModule_Create(&module); }
