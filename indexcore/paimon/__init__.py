"""Paimon's table rules, each in one place: options, path layout and which files a read reads.

This layer sits above the byte formats and types and below the warehouse reader and the writer;
both of those call it, so a rule is never written twice.
"""

from indexcore.paimon.layout import PathLayout, escape_path_name, partition_text
from indexcore.paimon.options import CoreOptions, FileIndexSpec, OptionError

__all__ = ["CoreOptions", "FileIndexSpec", "OptionError", "PathLayout", "escape_path_name",
           "partition_text"]
