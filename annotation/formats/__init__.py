"""Readers and writers of the dataset formats the platform exchanges (pure Python, no Django)."""

from .errors import FormatError
from .jsonl import JsonlSource, read_jsonl
from .references import read_reference_files
from .simpeval import SimpEvalFile, SimpEvalRow, read_simpeval, write_simpeval

__all__ = [
    "FormatError",
    "JsonlSource",
    "SimpEvalFile",
    "SimpEvalRow",
    "read_jsonl",
    "read_reference_files",
    "read_simpeval",
    "write_simpeval",
]
