"""Cells for CSV exports that people open in spreadsheets."""


def csv_cell(value):
    # Names come from uploads and forms; a leading =, +, -, @ (or a tab or CR) would run as a formula.
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return "" if value is None else value
