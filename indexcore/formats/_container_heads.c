/* File-index container heads of a batch of files, read and parsed in C (indexcore.formats.head_batch).
 *
 * One call per batch: each ``.index`` file in a directory the caller has resolved and allowed is
 * opened without following a symlink, its size taken (fstat), its head read (the prefix, then the
 * rest of a longer head) and closed, with the GIL released around the I/O; embedded containers are
 * parsed from the caller's bytes. Heads are checked by the rules of the quick parser of
 * indexcore.formats.container (magic, version, head length, counts, ASCII names, each span inside
 * the container, the redundant length) and returned as flat int64 columns: a layout id per file
 * (the (column, kind) pairs and empty flags, one tuple each per distinct layout), the container size,
 * the entry count and the (offset, length) spans. A file that is not read or not well formed is a
 * fault returned as data, (position, kind, errno or byte offset); the caller reads it through the
 * Python path, which says what is wrong (file, structure, offset). No global state.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buffers.h"

#ifndef O_CLOEXEC
#define O_CLOEXEC 0
#endif

#define MAGIC 1493475289347502LL
#define VERSION 1
#define PREFIX_SIZE 16
#define MIN_HEAD 24

/* fault kinds (the tuple's second value; the third is an errno or a byte offset) */
enum { F_NONE = 0, F_FOLDER = 1, F_OPEN = 2, F_READ = 3, F_HEAD = 4, F_NAME = 5 };

typedef struct {
    PyObject *inline_bytes; /* an embedded container's bytes (a reference held for the call), else NULL */
    char *full;          /* the path opened (malloc'd), NULL for an embedded container */
    uint8_t *data;       /* the bytes read (malloc'd), or the embedded bytes */
    Py_ssize_t got;      /* bytes in data */
    Py_ssize_t at;       /* wholes(): where its bytes start in the batch's arena */
    int64_t size;        /* the container's size */
    int fault, detail;
} File;

/* The head's length when the first bytes hold a valid prefix (magic, version, length), else -1. */
static int64_t prefix_length(const uint8_t *d, Py_ssize_t got, int64_t size) {
    if (size < MIN_HEAD || got < PREFIX_SIZE) return -1;
    if (be64(d) != MAGIC || be32(d + 8) != VERSION) return -1;
    int64_t length = be32(d + 12);
    return length >= MIN_HEAD && length <= size ? length : -1;
}

/* pread until ``want`` bytes at ``at`` or the end of the file; the bytes read, or -1 (errno set). */
static ssize_t pread_fully(int fd, uint8_t *buf, Py_ssize_t want, Py_ssize_t at) {
    Py_ssize_t got = 0;
    while (got < want) {
        ssize_t n = pread(fd, buf + got, (size_t)(want - got), (off_t)(at + got));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return -1;
        if (n == 0) break;
        got += n;
    }
    return got;
}

/* Read one file's size and head (no GIL held): the first ``prefix`` bytes (a file shorter than that
 * is read whole, its size what was read: no fstat, as Storage.read_prefixes), then the rest of a
 * head longer than the prefix. */
static void read_one(File *f, Py_ssize_t prefix, long *reads) {
    int fd = open(f->full, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) { f->fault = F_OPEN; f->detail = errno; return; }
    f->data = malloc((size_t)prefix);
    if (!f->data) { f->fault = F_READ; f->detail = ENOMEM; close(fd); return; }
    ssize_t got = pread_fully(fd, f->data, prefix, 0);
    if (got < 0) { f->fault = F_READ; f->detail = errno; close(fd); return; }
    f->got = got;
    (*reads)++;  /* one read a file, and one more for a head longer than the prefix */
    if (got < prefix) {
        f->size = got;
    } else {
        struct stat st;
        if (fstat(fd, &st) != 0) { f->fault = F_READ; f->detail = errno; close(fd); return; }
        f->size = (int64_t)st.st_size;
        int64_t length = prefix_length(f->data, f->got, f->size);
        if (length > f->got) {
            uint8_t *more = realloc(f->data, (size_t)length);
            if (!more) { f->fault = F_READ; f->detail = ENOMEM; close(fd); return; }
            f->data = more;
            got = pread_fully(fd, f->data + f->got, (Py_ssize_t)length - f->got, f->got);
            if (got < 0) { f->fault = F_READ; f->detail = errno; close(fd); return; }
            f->got += got;
            (*reads)++;
        }
    }
    close(fd);
}

/* Check one head by the quick parser's rules; its entries' spans go to *spans, its layout key
 * (names and counts, an empty flag per entry) to *key. Returns the entry count, or -1 with
 * f->fault / f->detail set (-2: no memory). */
static Py_ssize_t parse_one(File *f, Buf *key, Buf *spans) {
    const uint8_t *d = f->data;
    int64_t size = f->size;
    Py_ssize_t spans_at = spans->len;
    key->len = 0;
#define FAIL(kind, at) do { f->fault = (kind); f->detail = (int)(at); spans->len = spans_at; return -1; } while (0)
    if (size < MIN_HEAD || f->got < PREFIX_SIZE) FAIL(F_HEAD, 0);
    if (be64(d) != MAGIC) FAIL(F_HEAD, 0);
    if (be32(d + 8) != VERSION) FAIL(F_HEAD, 8);
    int64_t n = be32(d + 12);
    if (n < MIN_HEAD || n > size || n > f->got) FAIL(F_HEAD, 12);
    int64_t pos = PREFIX_SIZE;
    int64_t count = be32(d + pos);
    pos += 4;
    if (count < 0 || count * 6 > n - pos) FAIL(F_HEAD, pos - 4);
    Py_ssize_t entries = 0;
    for (int64_t c = 0; c < count; c++) {
        if (pos + 2 > n) FAIL(F_HEAD, pos);
        int64_t end = pos + 2 + (((int64_t)d[pos] << 8) | d[pos + 1]);
        if (end + 4 > n) FAIL(F_HEAD, pos + 2);
        for (int64_t i = pos + 2; i < end; i++)
            if (d[i] >= 0x80) FAIL(F_NAME, pos);
        if (buf_put(key, d + pos, end - pos + 4)) return -2;
        int64_t k = be32(d + end);
        pos = end + 4;
        if (k < 0 || k * 10 > n - pos) FAIL(F_HEAD, pos - 4);
        for (int64_t e = 0; e < k; e++) {
            if (pos + 2 > n) FAIL(F_HEAD, pos);
            end = pos + 2 + (((int64_t)d[pos] << 8) | d[pos + 1]);
            if (end + 8 > n) FAIL(F_HEAD, end > n ? pos + 2 : end);
            for (int64_t i = pos + 2; i < end; i++)
                if (d[i] >= 0x80) FAIL(F_NAME, pos);
            int64_t start = be32(d + end), length = be32(d + end + 4);
            if (start == -1) {
                if (length < 0) FAIL(F_HEAD, end + 4);
            } else if (start < n || length < 0 || start + length > size) {
                FAIL(F_HEAD, end);
            }
            uint8_t empty = start == -1;
            if (buf_put(key, d + pos, end - pos) || buf_put(key, &empty, 1)) return -2;
            if (buf_put_i64(spans, start) || buf_put_i64(spans, length)) return -2;
            pos = end + 8;
            entries++;
        }
    }
    if (pos + 4 > n) FAIL(F_HEAD, pos);
    int64_t redundant = be32(d + pos);
    if (redundant < 0 || redundant > size - pos - 4) FAIL(F_HEAD, pos);
#undef FAIL
    return entries;
}

/* The (pairs, empty) tuples of a new layout, from its key. */
static PyObject *layout_of(const char *k, Py_ssize_t len) {
    PyObject *pairs = PyList_New(0), *empty = PyList_New(0), *out = NULL;
    if (!pairs || !empty) goto done;
    Py_ssize_t pos = 0;
    while (pos < len) {
        Py_ssize_t nl = ((Py_ssize_t)(uint8_t)k[pos] << 8) | (uint8_t)k[pos + 1];
        PyObject *column = PyUnicode_DecodeASCII(k + pos + 2, nl, NULL);
        if (!column) goto done;
        pos += 2 + nl;
        int32_t count = be32((const uint8_t *)k + pos);
        pos += 4;
        for (int32_t e = 0; e < count; e++) {
            Py_ssize_t kl = ((Py_ssize_t)(uint8_t)k[pos] << 8) | (uint8_t)k[pos + 1];
            PyObject *kind = PyUnicode_DecodeASCII(k + pos + 2, kl, NULL);
            PyObject *pair = kind ? PyTuple_Pack(2, column, kind) : NULL;
            Py_XDECREF(kind);
            pos += 2 + kl;
            int bad = !pair || PyList_Append(pairs, pair) || PyList_Append(empty, k[pos] ? Py_True : Py_False);
            Py_XDECREF(pair);
            pos += 1;
            if (bad) { Py_DECREF(column); goto done; }
        }
        Py_DECREF(column);
    }
    PyObject *tp = PyList_AsTuple(pairs), *te = PyList_AsTuple(empty);
    if (tp && te) out = PyTuple_Pack(2, tp, te);
    Py_XDECREF(tp);
    Py_XDECREF(te);
done:
    Py_XDECREF(pairs);
    Py_XDECREF(empty);
    return out;
}

/* The batch's length: index_paths and embedded are one item a file (-1 with ValueError if not). */
static Py_ssize_t batch_length(PyObject *paths, PyObject *embedded) {
    Py_ssize_t n = PyList_GET_SIZE(paths);
    if (PyList_GET_SIZE(embedded) == n) return n;
    PyErr_SetString(PyExc_ValueError, "index_paths and embedded differ in length");
    return -1;
}

/* The folder of the last path located (a batch's files come folder by folder). */
typedef struct {
    const char *parent, *folder;
    Py_ssize_t parent_len, folder_len;
} Where;

/* f->full: the on-disk container ``path`` in its folder's resolved, allowed form from ``folders``
 * (parent as written -> resolved folder, or None), or f->fault = F_FOLDER where the caller's full
 * check decides (no folder, "." or "..", "::", NUL, a folder not resolved or not allowed), as
 * Storage._in_resolved_dir. Returns 0, or -1 with a Python error set (GIL held). */
static int locate(File *f, PyObject *path, PyObject *folders, Where *w) {
    Py_ssize_t len;
    const char *p = PyUnicode_Check(path) ? PyUnicode_AsUTF8AndSize(path, &len) : NULL;
    if (!p) { PyErr_Clear(); f->fault = F_FOLDER; return 0; }
    const char *slash = NULL;
    for (const char *q = p + len; q > p; q--)
        if (q[-1] == '/') { slash = q - 1; break; }
    const char *base = slash ? slash + 1 : NULL;
    Py_ssize_t base_len = base ? len - (base - p) : 0;
    if (!base || base_len == 0 || (base_len == 1 && base[0] == '.') ||
        (base_len == 2 && base[0] == '.' && base[1] == '.') || memchr(p, 0, (size_t)len) ||
        strstr(p, "::")) {
        f->fault = F_FOLDER;
        return 0;
    }
    Py_ssize_t parent_len = slash - p;
    if (parent_len != w->parent_len || memcmp(p, w->parent, (size_t)parent_len) != 0) {
        PyObject *parent = PyUnicode_DecodeUTF8(p, parent_len, NULL);
        if (!parent) return -1;
        PyObject *folder = PyDict_GetItemWithError(folders, parent);
        Py_DECREF(parent);
        if (!folder && PyErr_Occurred()) return -1;
        w->parent = p;
        w->parent_len = parent_len;
        w->folder = folder && PyUnicode_Check(folder) ? PyUnicode_AsUTF8AndSize(folder, &w->folder_len) : NULL;
        if (!w->folder) PyErr_Clear();
    }
    if (!w->folder) { f->fault = F_FOLDER; return 0; }
    int slashed = w->folder_len > 0 && w->folder[w->folder_len - 1] == '/';
    f->full = malloc((size_t)(w->folder_len + 1 + base_len + 1));
    if (!f->full) { PyErr_NoMemory(); return -1; }
    memcpy(f->full, w->folder, (size_t)w->folder_len);
    Py_ssize_t at = w->folder_len;
    if (!slashed) f->full[at++] = '/';
    memcpy(f->full + at, base, (size_t)base_len);
    f->full[at + base_len] = 0;
    return 0;
}

/* Read one file whole when it holds at most ``limit`` bytes (no GIL held), as Storage.read_prefixes
 * reads it: its first ``limit`` bytes in one pread at the end of ``arena`` (f->got bytes at f->at);
 * a short read is the file's end and size (no fstat), a full one is followed by fstat. */
static void read_whole(File *f, Py_ssize_t limit, Buf *arena, long *reads) {
    int fd = open(f->full, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) { f->fault = F_OPEN; f->detail = errno; return; }
    if (buf_grow(arena, limit)) { f->fault = F_READ; f->detail = ENOMEM; close(fd); return; }
    ssize_t got = pread_fully(fd, (uint8_t *)arena->p + arena->len, limit, 0);
    if (got < 0) { f->fault = F_READ; f->detail = errno; close(fd); return; }
    f->at = arena->len;
    f->got = got;
    arena->len += got;
    (*reads)++;
    if (got < limit) {
        f->size = got;
    } else {
        struct stat st;
        if (fstat(fd, &st) != 0) { f->fault = F_READ; f->detail = errno; close(fd); return; }
        f->size = (int64_t)st.st_size;
    }
    close(fd);
}

/* wholes(index_paths, folders, limit[, prefix]) -> (blobs, faults, bytes read, reads): each on-disk
 * container read whole as heads() opens it (bytes; None: larger than its limit, or it changed size
 * while read; with ``prefix``, its first limit bytes however long it is), the files it cannot open
 * or read as faults (position, kind, errno), left to the caller's path, which says what is wrong.
 * ``limit``: one for every file, or a list of one per file (a batch of files of many sizes in one
 * call, not one call per size). */
static PyObject *py_wholes(PyObject *self, PyObject *args) {
    PyObject *paths, *folders, *limits;
    int prefix = 0;  /* true: a file longer than its limit gives its first limit bytes, as read_prefixes does */
    if (!PyArg_ParseTuple(args, "O!O!O|p", &PyList_Type, &paths, &PyDict_Type, &folders, &limits, &prefix))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(paths);
    int each = PyList_Check(limits);
    if (each && PyList_GET_SIZE(limits) != n) {
        PyErr_SetString(PyExc_ValueError, "one limit per path");
        return NULL;
    }
    Py_ssize_t limit = each ? 0 : PyNumber_AsSsize_t(limits, PyExc_OverflowError);
    if (limit == -1 && PyErr_Occurred()) return NULL;
    Py_ssize_t *limit_of = calloc((size_t)(n ? n : 1), sizeof(Py_ssize_t));
    File *files = calloc((size_t)(n ? n : 1), sizeof(File));
    if (!files || !limit_of) { free(files); free(limit_of); return PyErr_NoMemory(); }
    PyObject *result = NULL, *blobs = NULL, *faults = NULL;
    Buf arena = {0};  /* every file's bytes, one after another */
    Where where = {NULL, NULL, -1, 0};
    long reads = 0;
    long long nbytes = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_ssize_t own = each ? PyNumber_AsSsize_t(PyList_GET_ITEM(limits, i), PyExc_OverflowError) : limit;
        if (own == -1 && PyErr_Occurred()) goto fail;
        limit_of[i] = own < 0 ? 0 : own;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (locate(&files[i], PyList_GET_ITEM(paths, i), folders, &where) < 0) goto fail;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++)
        if (files[i].full && !files[i].fault) read_whole(&files[i], limit_of[i], &arena, &reads);
    Py_END_ALLOW_THREADS
    blobs = PyList_New(n);
    faults = PyList_New(0);
    if (!blobs || !faults) goto fail;
    for (Py_ssize_t i = 0; i < n; i++) {
        File *f = &files[i];
        PyObject *item;
        if (f->fault) {
            if (append_new(faults, Py_BuildValue("(nii)", i, f->fault, f->detail))) goto fail;
            Py_INCREF(Py_None);
            item = Py_None;
        } else {
            nbytes += f->got;
            item = f->got == f->size || prefix ? PyBytes_FromStringAndSize(arena.p + f->at, f->got) : (Py_INCREF(Py_None), Py_None);
            if (!item) goto fail;
        }
        PyList_SET_ITEM(blobs, i, item);
    }
    result = Py_BuildValue("(OOLl)", blobs, faults, nbytes, reads);
fail:
    for (Py_ssize_t i = 0; i < n; i++) free(files[i].full);
    free(files);
    free(limit_of);
    free(arena.p);
    Py_XDECREF(blobs);
    Py_XDECREF(faults);
    return result;
}

/* heads(index_paths, embedded, folders, prefix, layouts, shapes)
 *   -> (faults, layout ids, sizes, entry counts, spans, bytes read, reads) */
static PyObject *py_heads(PyObject *self, PyObject *args) {
    PyObject *paths, *embedded, *folders, *layouts, *shapes;
    Py_ssize_t prefix;
    if (!PyArg_ParseTuple(args, "O!O!O!nO!O!", &PyList_Type, &paths, &PyList_Type, &embedded, &PyDict_Type,
                          &folders, &prefix, &PyDict_Type, &layouts, &PyList_Type, &shapes))
        return NULL;
    Py_ssize_t n = batch_length(paths, embedded);
    if (n < 0) return NULL;
    if (prefix < PREFIX_SIZE) prefix = PREFIX_SIZE;
    File *files = calloc((size_t)(n ? n : 1), sizeof(File));
    if (!files) return PyErr_NoMemory();
    PyObject *result = NULL, *faults = NULL, *last_key = NULL;
    Buf key = {0}, spans = {0}, ids = {0}, sizes = {0}, counts = {0};
    Where where = {NULL, NULL, -1, 0};
    int64_t last_id = -1;
    long reads = 0;
    long long nbytes = 0;

    /* 1. where each container is (GIL held: the lists, the folders dict) */
    for (Py_ssize_t i = 0; i < n; i++) {
        File *f = &files[i];
        PyObject *inline_bytes = PyList_GET_ITEM(embedded, i);
        if (inline_bytes != Py_None) {
            if (!PyBytes_Check(inline_bytes)) { f->fault = F_FOLDER; continue; }
            Py_INCREF(inline_bytes);  /* its bytes are parsed after the GIL was released and taken again */
            f->inline_bytes = inline_bytes;
            f->data = (uint8_t *)PyBytes_AS_STRING(inline_bytes);
            f->got = PyBytes_GET_SIZE(inline_bytes);
            f->size = f->got;
            continue;
        }
        if (locate(f, PyList_GET_ITEM(paths, i), folders, &where) < 0) goto fail;
    }

    /* 2. the files read, the GIL released */
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++)
        if (files[i].full && !files[i].fault) read_one(&files[i], prefix, &reads);
    Py_END_ALLOW_THREADS

    /* 3. the heads parsed to flat columns */
    faults = PyList_New(0);
    if (!faults) goto fail;
    for (Py_ssize_t i = 0; i < n; i++) {
        File *f = &files[i];
        if (f->full && f->data) nbytes += f->got;
        Py_ssize_t entries = f->fault ? -1 : parse_one(f, &key, &spans);
        if (entries == -2) { PyErr_NoMemory(); goto fail; }
        if (entries < 0) {
            if (append_new(faults, Py_BuildValue("(nii)", i, f->fault, f->detail))) goto fail;
            if (buf_put_i64(&ids, -1) || buf_put_i64(&sizes, -1) || buf_put_i64(&counts, 0)) { PyErr_NoMemory(); goto fail; }
            continue;
        }
        if (!last_key || PyBytes_GET_SIZE(last_key) != key.len ||
            memcmp(PyBytes_AS_STRING(last_key), key.p ? key.p : "", (size_t)key.len) != 0) {
            Py_XDECREF(last_key);
            last_key = buf_bytes(&key);
            if (!last_key) goto fail;
            PyObject *id = PyDict_GetItemWithError(layouts, last_key);
            if (!id && PyErr_Occurred()) goto fail;
            if (id) {
                last_id = PyLong_AsLongLong(id);
                if (last_id == -1 && PyErr_Occurred()) goto fail;
            } else {
                PyObject *layout = layout_of(key.p ? key.p : "", key.len);
                if (!layout) goto fail;
                last_id = PyList_GET_SIZE(shapes);
                int bad = PyList_Append(shapes, layout);
                Py_DECREF(layout);
                PyObject *value = bad ? NULL : PyLong_FromLongLong(last_id);
                if (!value || PyDict_SetItem(layouts, last_key, value)) { Py_XDECREF(value); goto fail; }
                Py_DECREF(value);
            }
        }
        if (buf_put_i64(&ids, last_id) || buf_put_i64(&sizes, f->size) || buf_put_i64(&counts, entries)) {
            PyErr_NoMemory();
            goto fail;
        }
    }
    PyObject *b_ids = buf_bytes(&ids), *b_sizes = buf_bytes(&sizes), *b_counts = buf_bytes(&counts),
             *b_spans = buf_bytes(&spans);
    if (b_ids && b_sizes && b_counts && b_spans)
        result = Py_BuildValue("(OOOOOLl)", faults, b_ids, b_sizes, b_counts, b_spans, nbytes, reads);
    Py_XDECREF(b_ids);
    Py_XDECREF(b_sizes);
    Py_XDECREF(b_counts);
    Py_XDECREF(b_spans);
fail:
    for (Py_ssize_t i = 0; i < n; i++) {
        free(files[i].full);
        if (files[i].full) free(files[i].data);  /* embedded bytes belong to their object */
        Py_XDECREF(files[i].inline_bytes);
    }
    free(files);
    free(key.p);
    free(spans.p);
    free(ids.p);
    free(sizes.p);
    free(counts.p);
    Py_XDECREF(last_key);
    Py_XDECREF(faults);
    return result;
}

/* folders(index_paths, embedded, known) -> the distinct folders (the text before the last '/') of the
 * on-disk containers that ``known`` does not hold, in first-seen order: what the caller resolves
 * before heads() reads the batch. */
static PyObject *py_folders(PyObject *self, PyObject *args) {
    PyObject *paths, *embedded, *known;
    if (!PyArg_ParseTuple(args, "O!O!O!", &PyList_Type, &paths, &PyList_Type, &embedded, &PyDict_Type, &known))
        return NULL;
    Py_ssize_t n = batch_length(paths, embedded);
    if (n < 0) return NULL;
    PyObject *out = PyList_New(0), *seen = PySet_New(NULL);
    if (!out || !seen) goto fail;
    const char *last = NULL;
    Py_ssize_t last_len = -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *path = PyList_GET_ITEM(paths, i);
        if (PyList_GET_ITEM(embedded, i) != Py_None || !PyUnicode_Check(path)) continue;
        Py_ssize_t len;
        const char *p = PyUnicode_AsUTF8AndSize(path, &len);
        if (!p) { PyErr_Clear(); continue; }
        Py_ssize_t parent_len = -1;
        for (Py_ssize_t j = len; j > 0; j--)
            if (p[j - 1] == '/') { parent_len = j - 1; break; }
        if (parent_len < 0 || (parent_len == last_len && memcmp(p, last, (size_t)parent_len) == 0)) continue;
        last = p;
        last_len = parent_len;
        PyObject *parent = PyUnicode_DecodeUTF8(p, parent_len, NULL);
        if (!parent) { PyErr_Clear(); continue; }
        int have = PyDict_Contains(known, parent);
        int dup = have ? 0 : PySet_Contains(seen, parent);
        if (have < 0 || dup < 0 || (!have && !dup && (PySet_Add(seen, parent) || PyList_Append(out, parent)))) {
            Py_DECREF(parent);
            goto fail;
        }
        Py_DECREF(parent);
    }
    Py_DECREF(seen);
    return out;
fail:
    Py_XDECREF(out);
    Py_XDECREF(seen);
    return NULL;
}

static PyMethodDef methods[] = {
    {"folders", py_folders, METH_VARARGS,
     "folders(index_paths, embedded, known) -> the folders of the on-disk containers not in known"},
    {"heads", py_heads, METH_VARARGS,
     "heads(index_paths, embedded, folders, prefix, layouts, shapes) -> (faults, layout ids, sizes, "
     "entry counts, spans, bytes read, reads) of a batch of file-index containers"},
    {"wholes", py_wholes, METH_VARARGS,
     "wholes(index_paths, folders, limit or one limit per path[, prefix]) -> (whole bytes or None, faults, "
     "bytes read, reads) of a batch of containers"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_container_heads", NULL, -1, methods};

PyMODINIT_FUNC PyInit__container_heads(void) { return PyModule_Create(&module); }
