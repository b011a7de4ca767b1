"""What the pages and the notebook show: frames and figures over the views, scan and analysis."""

import indexcore.analysis  # noqa: F401  (registers the derived views the frames read)
