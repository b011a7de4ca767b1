"""Pure decoders and encoders of Paimon's index formats, one module (or package) per format.

The file-index kinds (``bloom-filter``, ``bitmap``, ``range-bitmap``, ``bsi``) are listed in
:mod:`indexcore.formats.registry`, which opens their readers and writers by Paimon name.
"""
