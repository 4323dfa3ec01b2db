"""Exceptions with messages that name the file, the record and what is wrong."""

from __future__ import annotations


class IDCError(Exception):
    """Base class: every error the toolkit raises on bad input derives from it."""


class RawFormatError(IDCError):
    """A raw release file is missing or malformed."""

    def __init__(self, file: str, message: str, record: str | None = None):
        self.file = str(file)
        self.record = record
        where = f"{self.file}" + (f", record {record}" if record is not None else "")
        super().__init__(f"{where}: {message}")


class BadImageError(IDCError):
    """An image file is missing, unreadable or truncated."""


class BuildError(IDCError):
    """A build cannot go on (strict mode problem, output folder conflict, ...)."""


class EvaluationError(IDCError):
    """Predictions or references cannot be scored as given."""


class RunError(IDCError):
    """A long job cannot start or go on: its output folder holds another run, is locked by
    another job, or its input is missing."""
