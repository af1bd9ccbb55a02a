"""Errors are data: a Problem names a place and the way out; FailpediaError carries an exit code."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["BuildFailed", "FailpediaError", "Problem", "SetupError", "UsageError"]


@dataclass(frozen=True, order=True)
class Problem:
    """One problem in one file. Sorted by file, line, column."""

    path: str
    line: int  # 1-based; 0 when the problem concerns the whole file
    col: int  # 1-based; 0 when unknown
    message: str
    severity: Literal["error", "warning"] = "error"

    def __str__(self) -> str:
        where = self.path
        if self.line:
            where += f":{self.line}:{self.col or 1}"
        return f"{where}: {self.severity}: {self.message}"


class FailpediaError(Exception):
    """An error the CLI reports as a message and an exit code, never as a traceback."""

    exit_code = 1


class UsageError(FailpediaError):
    """Bad arguments or unreadable input (a log that is missing, binary, a folder)."""

    exit_code = 2


class SetupError(FailpediaError):
    """The command cannot work here: no entries folder, entries with errors, no templates, bad
    settings. Distinct from 1, which `diagnose` and `search` use for "nothing matched"."""

    exit_code = 3


class BuildFailed(FailpediaError):
    """The entries have errors; `problems` holds all of them."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = sorted(problems)
        errors = sum(p.severity == "error" for p in problems)
        super().__init__(f"{errors} error{'s' * (errors != 1)}")

    def __reduce__(self) -> tuple[type, tuple[list[Problem]]]:  # raised in a worker, re-raised in the parent
        return (type(self), (self.problems,))
