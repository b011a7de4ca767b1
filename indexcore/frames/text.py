"""Text from data or errors shown as text, never as markup: the one escaper of the pages, the
notebook and the figures.

Streamlit renders GitHub-flavoured markdown (links, images, autolinked URLs and e-mail
addresses, ``:color[...]`` directives, ``$`` math) in ``st.markdown``, captions, alerts,
titles, widget and metric labels: a column named ``![t](http://host/x.png)`` would make every
viewer's browser fetch that URL. Plotly renders a subset of HTML (``<a href>``, ``<b>``,
``<br>``) in titles, ticks, legends and hover labels.

* :func:`md` - a value as markdown that renders exactly its text.
* :func:`code` - a value as a literal inline code span, whatever backticks it holds.
* :func:`html` - a value with ``&``, ``<`` and ``>`` as entities, for Plotly labels.
* :func:`fmt_count` - a count as the pages' metrics show it (``966,800``; ``115.1 M`` past a width).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

# characters that start inline markup anywhere: escapes, code, emphasis, strike-through, links and
# images, HTML and autolinks, math, table cells, entities
_INLINE = re.compile(r"([\\`*_~\[\]<>$|&])")
# what starts a block at the start of a line: headings, list items, setext underlines, "1." / "1)"
_LINE_START = re.compile(r"^([ \t]*)([#+\-=]|\d+(?=[.)]))", re.MULTILINE)
# GFM links bare URLs, www. names and e-mail addresses, and Streamlit turns ``:red[x]``,
# ``:material/x:`` and ``:smile:`` into colors and icons, in the rendered text whatever is
# escaped; a WORD JOINER (invisible, zero width) inside each trigger keeps them text
_AUTOLINK = re.compile(r"(?<=:)(?=[A-Za-z/])|(?<=www)(?=\.)|(?=@)", re.IGNORECASE)
_JOINER = "\u2060"
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_TICKS = re.compile(r"`+")


def md(value: Any) -> str:
    """``value`` as markdown that renders exactly its text: no link, image, HTML, math, emphasis or
    block; inline markup characters are backslash-escaped (CommonMark makes each literal), a line
    starting like a heading or list item has that start escaped, and a word joiner (U+2060,
    invisible) is put after a ``:`` that a letter or ``/`` follows, inside ``www.`` and before ``@``
    so nothing is autolinked and no directive, icon or emoji is drawn."""
    text = _CONTROL.sub(" ", str(value))
    text = _INLINE.sub(r"\\\1", text)
    text = _LINE_START.sub(_escape_line_start, text)
    return _AUTOLINK.sub(_JOINER, text)


def _escape_line_start(m: re.Match) -> str:
    lead, mark = m.group(1), m.group(2)
    return lead + ("\\" + mark if not mark.isdigit() else mark + "\\")


def code(value: Any) -> str:
    """``value`` as one inline code span (markdown): a fence longer than any run of backticks in it,
    padded with a space where the text starts or ends with a backtick or a space (CommonMark's rule)."""
    text = _CONTROL.sub(" ", str(value)).replace("\n", " ").replace("\t", " ")
    if not text.strip():
        return "`" + (text or " ") + "`"
    fence = "`" * (max((len(m) for m in _TICKS.findall(text)), default=0) + 1)
    pad = " " if text[0] in "` " or text[-1] in "` " else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def html(value: Any) -> str:
    """``value`` with ``&``, ``<`` and ``>`` as HTML entities (Plotly shows them as the characters)."""
    return str(value).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def fmt_count(n: Any, width: int = 0) -> Any:
    """A metric's count with thousands separators (``966,800``, not ``966800``); any other value as
    it is. ``width``: a count wider than that many characters in millions or billions
    (``115.1 M``), for a narrow column: its exact figure belongs in the metric's help."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        return n
    text = f"{int(n):,}"
    if width and len(text) > width:
        for unit, size in (("B", 10**9), ("M", 10**6)):
            if abs(int(n)) >= size:
                return f"{int(n) / size:,.1f} {unit}"
    return text


__all__ = ["code", "fmt_count", "html", "md"]
