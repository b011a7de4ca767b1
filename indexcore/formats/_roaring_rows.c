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

/* Decode the bitmap at buf[start:end] into rows (appended, ascending; rows NULL: only counted,
 * with the same checks); its size in *size, its cardinality added to *total (when not NULL).
 * Returns 0, or a message (bad bytes) / "" (no memory). */
static const char *decode(const uint8_t *buf, Py_ssize_t start, Py_ssize_t end, Rows *rows, Py_ssize_t *size,
                          Py_ssize_t *total) {
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
                if (rows)
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
                if (rows && push(rows, high | (uint32_t)v)) return "";
            }
            pos += 2 * card;
        } else {
            if (pos + BITMAP_BYTES > end) return "truncated bitmap container";
            Py_ssize_t seen = 0;
            for (Py_ssize_t w = 0; w < BITMAP_BYTES / 8; w++) {
                uint64_t word = 0;
                for (int k = 7; k >= 0; k--) word = (word << 8) | buf[pos + 8 * w + k]; /* little-endian words */
                if (!rows) {
                    seen += __builtin_popcountll(word);
                    continue;
                }
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
        if (total) *total += card;
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
    const char *why = decode(b.buf, start, end, &rows, &size, NULL);
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
 * spans ((offset, length) of the ebm, then of each slice), least value, greatest value (0, 0
 * without rows)): a BSI part from its existence bitmap
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
    const char *why = decode(buf, pos, end, &ebm, &size, NULL);
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
        why = decode(buf, pos, end, &slice, &size, NULL);
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
    int64_t low = 0, high = 0; /* the least and greatest value (a part's min and max stored value) */
    for (Py_ssize_t j = 0; j < n; j++) {
        if (!j || values[j] < low) low = values[j];
        if (!j || values[j] > high) high = values[j];
    }
    PyObject *spans_tuple = PyList_AsTuple(spans);
    if (!spans_tuple) { why = ""; goto done; }
    out = Py_BuildValue("(y#y#nNLL)", ebm.p ? ebm.p : "", ebm.len, (const char *)values,
                        n * (Py_ssize_t)sizeof(int64_t), pos, spans_tuple, (long long)low, (long long)high);
done:
    if (why) fail(why, at);
    free(ebm.p);
    free(slice.p);
    free(values);
    Py_XDECREF(spans);
    PyBuffer_Release(&b);
    return out;
}


/* ---- bitmap file index V2 (indexcore.formats.bitmap.summary.native_counts) ---- */

/* A bitmap index key: a string's bytes (key size 0), or a big-endian signed integer. */
typedef struct { const uint8_t *p; Py_ssize_t n; int64_t v; int32_t offset, length; } Key;

static int64_t be_int(const uint8_t *p, int ks) {
    switch (ks) {
    case 1: return (int8_t)p[0];
    case 2: return (int16_t)(uint16_t)((p[0] << 8) | p[1]);
    case 4: return be32(p);
    default: return be64(p);
    }
}

/* Python's order of the keys: bytes unsigned then by length, integers by value. */
static int key_cmp(const Key *a, const Key *b, int ks) {
    if (ks) return (a->v > b->v) - (a->v < b->v);
    Py_ssize_t m = a->n < b->n ? a->n : b->n;
    int c = m ? memcmp(a->p, b->p, (size_t)m) : 0;
    if (c) return c < 0 ? -1 : 1;
    return (a->n > b->n) - (a->n < b->n);
}

static int key_eq(const Key *a, const Key *b, int ks) { return key_cmp(a, b, ks) == 0; }

/* The key at p (``room`` bytes there) followed by ``ints`` big-endian int32s: its size, or -1
 * where it is not wholly there or a string length is negative. */
static Py_ssize_t read_key(const uint8_t *p, Py_ssize_t room, int ks, int ints, Key *k) {
    Py_ssize_t tail = 4 * ints;
    if (ks) {
        if (ks + tail > room) return -1;
        k->v = be_int(p, ks);
        k->p = NULL;
        k->n = 0;
    } else {
        if (4 > room) return -1;
        int32_t n = be32(p);
        if (n < 0 || 4 + (Py_ssize_t)n + tail > room) return -1;
        k->p = p + 4;
        k->n = n;
        k->v = 0;
        ks = 4 + n;
    }
    k->offset = ints > 0 ? be32(p + ks) : 0;
    k->length = ints > 1 ? be32(p + ks + 4) : 0;
    return ks + tail;
}

/* Rows of the bitmap at [at, at + length) (length < 0: to the end of the blob), or -1 where the
 * Python counter would not take it from the C decoder alone. */
static Py_ssize_t count_at(const uint8_t *buf, Py_ssize_t n, int64_t at, int64_t length) {
    if (length < 0) length = n - at;
    if (length < 0 || at + length > n) return -1;
    Py_ssize_t size = 0, total = 0;
    if (decode(buf, (Py_ssize_t)at, (Py_ssize_t)(at + length), NULL, &size, &total) || size != length) return -1;
    return total;
}

typedef struct {
    int32_t row_count, number;
    Py_ssize_t null_count, index_block_start, body_start, block_count, most;
    Key *entries; /* every index block's entries, in file (= key) order */
    Py_ssize_t *counts, n_entries;
} V2;

/* Parse and count a whole V2 blob as blob_counts does: 0, 1 where it (or the reader) might not take
 * it as it is or the entries are not in key order (the Python path then decides), -1 out of memory. */
static int v2_counts(const uint8_t *buf, Py_ssize_t n, int ks, V2 *r) {
    if (n < 10) return 1;
    int32_t row_count = be32(buf + 1), number = be32(buf + 5);
    int has_null = buf[9] != 0;
    if (buf[0] != 2 || row_count < 0 || number < 0 || number > row_count) return 1;
    const Py_ssize_t min_size = ks ? ks : 4;
    Py_ssize_t pos = 10;
    int32_t null_offset = 0, null_length = -1;
    if (has_null) {
        if (pos + 8 > n) return 1;
        null_offset = be32(buf + pos);
        null_length = be32(buf + pos + 4);
        pos += 8;
        if (null_offset >= 0 && null_length < 0) return 1;
        if (null_offset < 0 && -1 - (int64_t)null_offset >= row_count) return 1;
    }
    if (pos + 4 > n) return 1;
    int32_t block_count = be32(buf + pos);
    pos += 4;
    if (block_count < 0 || pos + (int64_t)block_count * (min_size + 4) + 4 > n) return 1;
    Key *firsts = calloc(block_count ? (size_t)block_count : 1, sizeof(Key));
    if (!firsts) return -1;
    int rc = 1;
    for (int32_t i = 0; i < block_count; i++) {
        Py_ssize_t used = read_key(buf + pos, n - pos, ks, 1, &firsts[i]);
        if (used < 0) goto done;
        pos += used;
    }
    if (pos + 4 > n) goto done;
    if (!ks)
        for (int32_t i = 0; i < block_count; i++)
            for (int32_t j = 0; j < i; j++)
                if (key_eq(&firsts[i], &firsts[j], ks)) goto done;
    int32_t body_offset = be32(buf + pos);
    Py_ssize_t ibs = pos + 4;
    if (body_offset < 0 || ibs + body_offset > n) goto done;
    Py_ssize_t body = ibs + body_offset, total = 0;
    for (int32_t i = 0; i < block_count; i++) {
        int32_t off = firsts[i].offset, end = i + 1 < block_count ? firsts[i + 1].offset : body_offset;
        if (off < 0 || end < off || end > body_offset) goto done;
        if (end - off < 4) goto done;
        int32_t count = be32(buf + ibs + off);
        if (count < 0 || 4 + (int64_t)count * (min_size + 8) > end - off) goto done;
        total += count;
    }
    r->entries = calloc(total ? (size_t)total : 1, sizeof(Key));
    r->counts = calloc(total ? (size_t)total : 1, sizeof(Py_ssize_t));
    if (!r->entries || !r->counts) { rc = -1; goto done; }
    Py_ssize_t k = 0;
    for (int32_t i = 0; i < block_count; i++) {
        int32_t off = firsts[i].offset, end = i + 1 < block_count ? firsts[i + 1].offset : body_offset;
        const uint8_t *data = buf + ibs + off;
        Py_ssize_t size = end - off, p = 4;
        for (int32_t j = 0, count = be32(data); j < count; j++, k++) {
            Py_ssize_t used = read_key(data + p, size - p, ks, 2, &r->entries[k]);
            if (used < 0) goto done;
            p += used;
            if (k && key_cmp(&r->entries[k - 1], &r->entries[k], ks) > 0) goto done; /* Python sorts them */
        }
    }
    r->n_entries = total;
    Py_ssize_t top = -1;
    for (k = 0; k < total; k++) {
        const Key *e = &r->entries[k];
        Py_ssize_t c = e->offset < 0 ? 1 : count_at(buf, n, (int64_t)body + e->offset, e->length);
        if (c < 0) goto done;
        r->counts[k] = c;
        if (top < 0 || c > r->counts[top]) top = k;
    }
    r->null_count = 0;
    if (has_null) {
        r->null_count = null_offset < 0 ? 1 : count_at(buf, n, (int64_t)body + null_offset, null_length);
        if (r->null_count < 0) goto done;
    }
    r->most = -1;
    if (top >= 0) { /* the reader's lookup_bytes of the most frequent: the head, one index block, one bitmap */
        const Key *key = &r->entries[top];
        Py_ssize_t most = ibs, lo = 0, hi = block_count;
        while (lo < hi) { /* bisect_right over the head's first keys */
            Py_ssize_t mid = (lo + hi) / 2;
            if (key_cmp(key, &firsts[mid], ks) < 0) hi = mid; else lo = mid + 1;
        }
        Py_ssize_t b = lo - 1;
        if (b >= 0) {
            int32_t off = firsts[b].offset, end = b + 1 < block_count ? firsts[b + 1].offset : body_offset;
            most += end - off;
            const uint8_t *data = buf + ibs + off;
            Py_ssize_t p = 4;
            for (int32_t j = 0, count = be32(data); j < count; j++) { /* the first entry of that key */
                Key e;
                p += read_key(data + p, end - off - p, ks, 2, &e);
                if (key_eq(&e, key, ks)) {
                    if (e.offset >= 0) most += e.length >= 0 ? e.length : n - (body + e.offset);
                    break;
                }
            }
        }
        r->most = most;
    }
    r->row_count = row_count;
    r->number = number;
    r->index_block_start = ibs;
    r->body_start = body;
    r->block_count = block_count;
    rc = 0;
done:
    free(firsts);
    return rc;
}

/* bitmap_v2(blob, key_size) -> None, or (row count, non-null bitmap count, null rows, index block
 * start, body start, index blocks, values, their rows, lookup bytes of the most frequent or None):
 * a whole V2 bitmap index blob with string keys (key_size 0: values as str, surrogateescape) or
 * integer keys of 1, 2, 4 or 8 bytes; None wherever indexcore.formats.bitmap.summary.blob_counts
 * might answer otherwise (it then reads the blob). */
static PyObject *py_bitmap_v2(PyObject *self, PyObject *args) {
    Py_buffer b;
    int ks;
    if (!PyArg_ParseTuple(args, "y*i", &b, &ks)) return NULL;
    PyObject *out = NULL, *values = NULL, *counts = NULL;
    V2 r = {0};
    if (ks != 0 && ks != 1 && ks != 2 && ks != 4 && ks != 8) {
        PyErr_SetString(PyExc_ValueError, "key size must be 0, 1, 2, 4 or 8");
        goto done;
    }
    int rc = v2_counts(b.buf, b.len, ks, &r);
    if (rc < 0) { PyErr_NoMemory(); goto done; }
    if (rc > 0) { out = Py_NewRef(Py_None); goto done; }
    values = PyList_New(r.n_entries);
    counts = PyList_New(r.n_entries);
    if (!values || !counts) goto done;
    for (Py_ssize_t k = 0; k < r.n_entries; k++) {
        const Key *e = &r.entries[k];
        PyObject *v = ks ? PyLong_FromLongLong(e->v) : PyUnicode_DecodeUTF8((const char *)e->p, e->n, "surrogateescape");
        PyObject *c = PyLong_FromSsize_t(r.counts[k]);
        if (!v || !c) { Py_XDECREF(v); Py_XDECREF(c); goto done; }
        PyList_SET_ITEM(values, k, v);
        PyList_SET_ITEM(counts, k, c);
    }
    PyObject *most = r.most < 0 ? Py_NewRef(Py_None) : PyLong_FromSsize_t(r.most);
    if (!most) goto done;
    out = Py_BuildValue("(iinnnnNNN)", r.row_count, r.number, r.null_count, r.index_block_start, r.body_start,
                        r.block_count, values, counts, most);
    values = counts = NULL; /* stolen by N (released by it on failure) */
done:
    Py_XDECREF(values);
    Py_XDECREF(counts);
    free(r.entries);
    free(r.counts);
    PyBuffer_Release(&b);
    return out;
}

/* between(rows, values, low, high) -> uint32 rows bytes: the rows (uint32) whose value (int64, the
 * same count) lies in [low, high], in order: a BSI part's BETWEEN on its decoded values in one pass
 * (indexcore.formats.bsi.BsiPart.between), not four numpy operations over a few hundred rows. */
static PyObject *py_between(PyObject *self, PyObject *args) {
    Py_buffer r, v;
    long long low, high;
    if (!PyArg_ParseTuple(args, "y*y*LL", &r, &v, &low, &high)) return NULL;
    PyObject *out = NULL;
    Py_ssize_t n = v.len / (Py_ssize_t)sizeof(int64_t);
    if (r.len != n * (Py_ssize_t)sizeof(uint32_t) || v.len % (Py_ssize_t)sizeof(int64_t)) {
        PyErr_SetString(PyExc_ValueError, "one uint32 row per int64 value");
        goto done;
    }
    out = PyBytes_FromStringAndSize(NULL, r.len);
    if (!out) goto done;
    uint32_t *kept = (uint32_t *)PyBytes_AS_STRING(out);
    const uint32_t *rows = r.buf;
    const int64_t *values = v.buf;
    Py_ssize_t k = 0;
    for (Py_ssize_t i = 0; i < n; i++)
        if (values[i] >= low && values[i] <= high) kept[k++] = rows[i];
    if (_PyBytes_Resize(&out, k * (Py_ssize_t)sizeof(uint32_t))) out = NULL;
done:
    PyBuffer_Release(&r);
    PyBuffer_Release(&v);
    return out;
}

static PyMethodDef methods[] = {
    {"rows", py_rows, METH_VARARGS, "rows(data, start, end) -> (uint32 rows bytes, size) of one portable bitmap"},
    {"bsi_part", py_bsi_part, METH_VARARGS,
     "bsi_part(data, pos, end) -> (rows, values, end position, spans, least, greatest value) of a BSI part "
     "from its ebm on"},
    {"between", py_between, METH_VARARGS,
     "between(rows, values, low, high) -> uint32 rows bytes of the values in [low, high]"},
    {"bitmap_v2", py_bitmap_v2, METH_VARARGS,
     "bitmap_v2(blob, key_size) -> None or the counts of a whole V2 bitmap index blob (summary.native_counts)"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_roaring_rows", NULL, -1, methods};

PyMODINIT_FUNC PyInit__roaring_rows(void) { return PyModule_Create(&module); }
