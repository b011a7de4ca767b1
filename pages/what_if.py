"""What-if: explain a SQL predicate file by file, and try a hypothetical index built in memory."""

from pages.common import open_page
from pages.what_if_sections import show

show(open_page("what_if"))
