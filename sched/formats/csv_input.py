"""The one set of CSV rules (issue 58): records, numbers, ids, and cells safe for spreadsheets.

Every CSV reader of the project reads through these rules:

* **A record is one physical line** (lines end in LF, CRLF or CR, as pandas reads them). A quoted
  field is legitimate only when it opens and closes on its line (``"a, b"``, ``"a""b"``); a
  line that leaves one open (a stray ``"``: the csv module and pandas would swallow every later
  line into it) is malformed, named by its line ("a quoted field spans lines (unbalanced
  quote?)"), and so are text after a closing quote (``"abc"x``, the csv module's strict mode)
  and a NUL byte. The readers that refuse a whole file on a bad record (scenarios, mapping,
  machines, the results tables) raise their error naming the line; those that skip malformed
  records (bench logs, histories) count the line as one skipped record, named, and stop past
  their configured share. A line of spaces and tabs only is blank (skipped, as pandas does).
* **Numbers** are written in ASCII (:func:`number`): Python's ``float`` alone would take
  ``1_000`` and Arabic-Indic digits (``١٢``), which pandas' reader (the scenario's) refuses.
* **Ids** (history ids, scenario task ids, mapping job patterns and the names looked up in
  them) are compared after :func:`normal_id`: surrounding white space is no part of an id.
* **Written cells**: a text cell (a value or a column name) that a spreadsheet would run as a
  formula (starting with ``=``, ``+``, ``-``, ``@``, a tab or a CR) and is not a number is
  written with a single quote in front (:func:`safe_frame`, :func:`safe_cell`; the OWASP rule
  against CSV injection). Numbers, negative ones included, are written as they are.
"""

import csv

from sched.limits import SHOWN_CHARS as SHOWN

SPANS = "a quoted field spans lines (unbalanced quote?)"
NUL = "a NUL byte (a binary file?)"
#: The first characters that make a spreadsheet read a cell as a formula.
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


class BadLine(ValueError):
    """One physical line that is no CSV record; its text is the reason, without the line."""


def physical_lines(text):
    """The lines of ``text`` without their ends (LF, CRLF or CR), the last one after the last end."""
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text.split("\n")


def is_blank(line):
    """A line of spaces and tabs only (pandas skips it)."""
    return not line.strip(" \t")


def split_line(line, sep=",", skipinitialspace=False):
    """The fields of one physical line, as the csv module (strict) reads them, or :class:`BadLine`."""
    if "\0" in line:
        raise BadLine(NUL)
    if '"' not in line:
        fields = line.split(sep)
        if len(line) > csv.field_size_limit() and max(map(len, fields)) > csv.field_size_limit():
            # the csv module's own limit, for a line with quotes or without
            raise BadLine(
                f"not a readable CSV file (field larger than field limit ({csv.field_size_limit()}))"
            )
        return [f.lstrip(" ") for f in fields] if skipinitialspace else fields
    reader = csv.reader((line,), delimiter=sep, skipinitialspace=skipinitialspace, strict=True)
    try:
        return next(reader, [])
    except csv.Error as exc:
        if "unexpected end of data" in str(exc):
            raise BadLine(SPANS) from None
        raise BadLine(f"not a readable CSV file ({exc})") from None


def line_records(text, sep=",", skipinitialspace=False):
    """(line number from 1, fields or a :class:`BadLine`) of each line of ``text`` that is not blank."""
    for number, line in enumerate(physical_lines(text), start=1):
        if is_blank(line):
            continue
        try:
            yield number, split_line(line, sep, skipinitialspace)
        except BadLine as exc:
            yield number, exc


def scan_csv(text, source, error, skipinitialspace=False, sep=",", max_rows=None):
    """Check a CSV text's shape: (header, the file line of each data row).

    Refused with ``error``, naming ``source``, the line (1 = the first line of the file) and,
    for a data row, the row (1 = the first data row): a line that is no record (see the
    module), a row whose field count differs from the header's, a column name given twice
    (compared stripped), more than ``max_rows`` rows, a file with no header. Blank lines are
    skipped, as pandas does.
    """
    header, header_line, lines = None, 0, []
    if '"' not in text and "\0" not in text:
        # no quoting: a record is a line; splitting lines is several times faster than the csv module
        records = (
            (i, line.split(sep)) for i, line in enumerate(physical_lines(text), 1) if not is_blank(line)
        )
    else:
        records = line_records(text, sep, skipinitialspace)
    for start, record in records:
        if isinstance(record, BadLine):
            where = f"row {len(lines) + 1} (line {start})" if header is not None else f"line {start}"
            raise error(f"{source}: {where}: {record}")
        if header is None:
            header, header_line = record, start
            check_header(header, source, start, error)
        elif len(record) != len(header):
            raise error(
                f"{source}: row {len(lines) + 1} (line {start}): {len(record)} fields, "
                f"the header (line {header_line}) has {len(header)}"
            )
        else:
            lines.append(start)
            if max_rows is not None and len(lines) > max_rows:
                raise error(f"{source}: more than {max_rows} rows")
    if header is None:
        raise error(f"{source}: empty file (no header, no rows)")
    return header, lines


def check_header(header, source, line, error):
    """Refuse a column name given twice (compared stripped; empty names may repeat)."""
    seen = {}
    for i, name in enumerate(header, start=1):
        name = name.strip()
        if name and name in seen:  # pandas names empty columns "Unnamed: i", all different
            raise error(
                f"{source}: line {line}: column {name[:SHOWN]!r} appears twice (fields {seen[name]} and {i})"
            )
        seen[name] = i


def number(text):
    """The float a CSV field writes, or None: ASCII only (a sign, digits, a point, an exponent;
    ``inf`` and ``nan`` spelled out), white space around allowed, no ``_`` (as pandas reads)."""
    if not isinstance(text, str) or not text.isascii() or "_" in text:
        return None
    try:
        return float(text)
    except ValueError:
        return None


def normal_id(value):
    """An id as every reader compares it: text without the white space around it (other values
    as they are)."""
    return value.strip() if isinstance(value, str) else value


def safe_cell(value):
    """``value``, with a single quote in front when it is text a spreadsheet would run as a
    formula (see the module); numbers and other values as they are."""
    return "'" + value if _needs_escape(value) else value


def _needs_escape(value):
    return isinstance(value, str) and value.startswith(FORMULA_START) and number(value) is None


def safe_frame(frame):
    """``frame`` with its formula-like text cells and column names quoted (:func:`safe_cell`);
    the same object when it holds none (the usual case: nothing is copied)."""
    import pandas as pd

    hits = [
        j
        for j, dtype in enumerate(frame.dtypes)
        if not pd.api.types.is_numeric_dtype(dtype) and any(map(_needs_escape, frame.iloc[:, j].tolist()))
    ]
    names = any(map(_needs_escape, frame.columns))
    if not hits and not names:
        return frame
    out = frame.copy()
    for j in hits:
        out.isetitem(j, pd.Series(list(map(safe_cell, frame.iloc[:, j].tolist())), index=frame.index))
    if names:
        out.columns = [safe_cell(c) for c in frame.columns]
    return out
