"""Paimon's ``range-bitmap`` file index: a sorted, chunked dictionary plus a bit-sliced index.

Layout (all integers big-endian, as Java's ``ByteBuffer`` writes them)::

    i32 header length | header: u8 version, i32 row count, i32 cardinality,
                                [min key, max key] (only when cardinality > 0), i32 dictionary length
    dictionary: i32 header length | u8 version, i32 chunk count, i32 offsets length,
                i32 chunks length | chunk offsets (i32 each) | chunk headers | chunk keys
    bit-sliced index: i32 header length | u8 version, i8 slice count, i32 ebm length,
                i32 indexes length, (i32 offset, i32 length) per slice | ebm | slice bitmaps

Every distinct non-null key gets a code (its rank in Paimon's key order); the bit-sliced
index stores each row's code, and its existence bitmap (ebm) holds the non-null rows. The
reader loads the dictionary headers, one chunk's keys and the slices only when a predicate
needs them, each with one ranged read; a chunk's keys are decoded only where its binary
search probes them, and the slice comparisons update one bitmap in place.

Modules as Paimon's ``fileindex/rangebitmap`` splits them: ``keys`` (Paimon's ``KeyFactory``: how
each type is stored and ordered, and the length-prefixed headers every part starts with),
``dictionary`` (``ChunkedDictionary`` and its chunks), ``bit_slice`` (``BitSliceIndexBitmap``),
``reader`` and ``writer`` (``RangeBitmapFileIndex``'s reader and writer).
"""
