"""What the pages and the notebook show: one module of frames per page, the figures, and the
registry of the frames the app caches (:mod:`indexcore.frames.registry`)."""

import indexcore.analysis  # noqa: F401  (registers the derived views the frames read)
