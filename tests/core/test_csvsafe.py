from core.csvsafe import csv_cell, csv_row


def test_formula_starts_are_quoted_and_numbers_are_not():
    assert csv_row(["=1+1", "+A1", "-A1", "@x", "\t=x", "plain", "-0.5", "+3", 7, None]) == [
        "'=1+1", "'+A1", "'-A1", "'@x", "'\t=x", "plain", "-0.5", "+3", 7, None,
    ]
    assert csv_cell("") == ""
