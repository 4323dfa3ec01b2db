"""The one place data (category names, ids, run names, captions) is escaped for the text formats the
toolkit writes by hand: Markdown tables and LaTeX, and the text cells of CSV files, which a
spreadsheet would otherwise run as formulas. YAML, JSON, CSV and HTML go through their
serializers (PyYAML, ``json``, ``csv``, the viewer's DOM ``textContent``), never string formatting."""

from __future__ import annotations

from typing import Iterable

_LATEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{",
          "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "<": r"\textless{}", ">": r"\textgreater{}"}


def latex(text: object) -> str:
    """``text`` as LaTeX prints it literally: every special character escaped, line breaks as spaces
    (a category named ``\\input{...}`` is printed, never run)."""
    return "".join(_LATEX.get(ch, ch) for ch in " ".join(str(text).splitlines()))


def markdown_cell(text: object) -> str:
    """``text`` as one Markdown table cell: pipes escaped, line breaks as spaces (a category named
    ``a | b`` or holding a newline cannot add a column or a row)."""
    return " ".join(str(text).splitlines()).replace("|", "\\|")


def markdown_table(header: Iterable[object], rows: Iterable[Iterable[object]], align: Iterable[str] = ()) -> list[str]:
    """The lines of a Markdown table; every cell through :func:`markdown_cell`. ``align``: each
    column's rule (``---`` or ``---:``), left for the first and right for the rest by default."""
    header = [markdown_cell(h) for h in header]
    rules = list(align) or ["---"] + ["---:"] * (len(header) - 1)
    return ["| " + " | ".join(header) + " |", "| " + " | ".join(rules) + " |",
            *("| " + " | ".join(markdown_cell(c) for c in row) + " |" for row in rows)]


#: what starts a spreadsheet formula (OWASP's CSV injection list); a quote is added before them
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_text(text: object) -> str:
    """A text cell of a CSV file (a caption, an id, a category, a run name): one starting with
    ``=``, ``+``, ``-``, ``@``, a tab or a carriage return gets a leading ``'`` (OWASP), so a
    spreadsheet shows it instead of running it; so does one starting with ``'``, which keeps
    :func:`csv_text_read` exact. Numbers are written as numbers, never through this."""
    text = "" if text is None else str(text)
    return "'" + text if text.startswith((*_FORMULA_START, "'")) else text


def csv_text_read(cell: str) -> str:
    """The text :func:`csv_text` wrote a cell for."""
    return cell[1:] if cell.startswith("'") else cell
