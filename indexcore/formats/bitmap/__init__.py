"""Paimon's bitmap file index (``bitmap``), format V1 and V2: how its modules split it.

Both versions start with a head: version byte, row count, the number of distinct non-null
values, a has-null flag and the null bitmap's offset. V1 then lists every ``value -> offset``
pair; V2 (the default) sorts the pairs into index blocks of at most ``index-block-size`` bytes
and keeps only each block's first value in the head, so a point lookup reads the head, one index
block and one bitmap. An offset below zero, ``-1-row``, stands for a value found in one row only;
such a value has no serialized bitmap. Bitmaps are portable RoaringBitmaps (run-optimized).

Keys are encoded by type: integers by width, FLOAT/DOUBLE by their bits (NaN canonical, so
``-0.0`` and ``0.0`` differ), CHAR/VARCHAR as a length-prefixed UTF-8 string (CHAR not padded),
BOOLEAN as one byte, DATE/TIME as INT, timestamps as BIGINT epoch millis (p <= 3) or micros.

Modules as Paimon's ``fileindex/bitmap`` splits them: ``keys`` (how each column type is keyed),
``meta`` (the V1/V2 head, Paimon's ``BitmapFileIndexMeta`` / ``BitmapFileIndexMetaV2``),
``reader`` and ``writer`` (Paimon's ``BitmapFileIndex`` reader and writer).
"""
