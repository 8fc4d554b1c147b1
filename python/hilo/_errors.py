"""The exceptions hilo raises. Every one is an HloError."""

from __future__ import annotations

from typing import Any, Optional

from ._report import PassReport


class HloError(Exception):
    """A failure of the hilo library.

    ``str(error)`` is the full text (for a located error: ``file:line:col: error: message``,
    the source line and a caret). ``message`` is the message alone; ``file``, ``line`` and
    ``column`` (1-based, column in bytes) say where, when the error has a place in the text
    (otherwise ``line`` and ``column`` are None). ``code`` is the absl status code name
    (``"INVALID_ARGUMENT"``...) or None.
    """

    def __init__(self, text: str, *, message: Optional[str] = None, file: Optional[str] = None,
                 line: Optional[int] = None, column: Optional[int] = None,
                 code: Optional[str] = None, **extra: Any) -> None:
        super().__init__(text)
        self.message = text if message is None else message
        self.file = file
        self.line = line
        self.column = column
        self.code = code
        for name, value in extra.items():
            setattr(self, name, value)


class ParseError(HloError):
    """HLO text that does not parse."""


class LoadError(HloError, OSError):
    """A file that can not be read or written."""


class VerifyError(HloError):
    """A module the verifier rejects."""


class PassError(HloError):
    """A pass failed, left an invalid module behind, or a pass name is unknown.

    ``report`` is the PassReport of the passes that ran before the failure (None when
    nothing ran); the module keeps what they did.
    """

    def __init__(self, text: str, *, report: Optional[dict] = None, **kwargs: Any) -> None:
        super().__init__(text, **kwargs)
        self.report = PassReport(report) if report is not None else None


class InterpreterError(HloError):
    """hilo.run or hilo.check_equivalence could not run a module."""


class StaleViewError(HloError):
    """A view of a computation or instruction that is no longer in its module."""


class ModuleBusyError(HloError):
    """The module is being used by run_passes (or read) on another thread."""
