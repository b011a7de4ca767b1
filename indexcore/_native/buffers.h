/* What the C extensions share (formats/_container_heads.c, formats/_roaring_rows.c,
 * warehouse/_avro_columns.c): a growable byte buffer, fixed-width integer reads of either byte
 * order, and "append a new reference to a list". Each extension includes this header once
 * (setup.py adds this folder to the include path and lists it in each extension's depends), so
 * every definition is static: no symbol crosses an extension, no global state.
 */
#ifndef INDEXCORE_NATIVE_BUFFERS_H
#define INDEXCORE_NATIVE_BUFFERS_H

#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* A growable byte buffer (malloc'd; free(b.p) when done); zero-initialised it is empty. */
typedef struct { char *p; Py_ssize_t len, cap; } Buf;

/* Room for ``more`` bytes past len, the capacity doubled from 256: 0, or -1 when out of memory
 * (the buffer is left as it was). */
static inline int buf_grow(Buf *b, Py_ssize_t more) {
    if (b->len + more <= b->cap) return 0;
    Py_ssize_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + more) cap *= 2;
    char *p = realloc(b->p, (size_t)cap);
    if (!p) return -1;
    b->p = p;
    b->cap = cap;
    return 0;
}

/* ``n`` bytes appended: 0, or -1 when out of memory. */
static inline int buf_put(Buf *b, const void *src, Py_ssize_t n) {
    if (buf_grow(b, n)) return -1;
    memcpy(b->p + b->len, src, (size_t)n);
    b->len += n;
    return 0;
}

static inline int buf_put_i64(Buf *b, int64_t v) { return buf_put(b, &v, 8); }
static inline int buf_put_u32(Buf *b, uint32_t v) { return buf_put(b, &v, 4); }

/* The buffer's bytes as a new bytes object (NULL with an exception set). */
static inline PyObject *buf_bytes(const Buf *b) { return PyBytes_FromStringAndSize(b->p ? b->p : "", b->len); }

/* Big-endian reads (Paimon's file-index containers, Java's DataOutput). */
static inline int32_t be32(const uint8_t *p) {
    return (int32_t)(((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3]);
}
static inline int64_t be64(const uint8_t *p) {
    return (int64_t)(((uint64_t)(uint32_t)be32(p) << 32) | (uint32_t)be32(p + 4));
}

/* Little-endian reads (the portable roaring format). */
static inline uint16_t le16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static inline uint32_t le32(const uint8_t *p) {
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

/* ``item`` (a new reference, or NULL after a failed build) appended to ``list`` and released:
 * 0, or -1 with an exception set. */
static inline int append_new(PyObject *list, PyObject *item) {
    int bad = !item || PyList_Append(list, item);
    Py_XDECREF(item);
    return bad ? -1 : 0;
}

#endif
