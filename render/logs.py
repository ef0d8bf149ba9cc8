"""What reaches the terminal: the project's own messages, in its own words.

The command's messages go through the "film" logger (`film: …`, at INFO unless --quiet). Libraries log on loggers
of their own (fontTools' subsetter says "maxp pruned" and lists every glyph at INFO; Manim, Dask and PyAV have
theirs); their records stop at the root logger, which prints only a library's errors, named, in the command's
form. Python's warnings are routed to the logging system, so a library's warning is not printed either: where one
matters to a user the project says so itself.
"""

from __future__ import annotations

import logging
import sys

from render.text import terminal_text

PROJECT_LOGGER = "film"


class TerminalFormatter(logging.Formatter):
    """Log lines with nothing a terminal would obey (what a server or a file said can reach a warning)."""

    def format(self, record: logging.LogRecord) -> str:
        return terminal_text(super().format(record))


class StderrHandler(logging.StreamHandler):
    """Writes to the standard error of the moment (a test's capture, a worker's own), not the one it was made with."""

    def __init__(self, stream=None):
        super().__init__(stream)
        self.fixed = stream

    @property
    def stream(self):
        return self.fixed if self.fixed is not None else sys.stderr

    @stream.setter
    def stream(self, value):
        pass


def configure(level: int = logging.INFO, stream=None) -> None:
    """The command's logging, for its main process or a worker: the project's logger at `level`, libraries' errors
    only. Idempotent: a worker forked from a configured process configures again without doubling a handler."""
    ours = logging.getLogger(PROJECT_LOGGER)
    handler = StderrHandler(stream)
    handler.setFormatter(TerminalFormatter(f"{PROJECT_LOGGER}: %(message)s"))
    ours.handlers[:] = [handler]
    ours.setLevel(level)
    ours.propagate = False
    libraries = StderrHandler(stream)
    libraries.setLevel(logging.ERROR)
    libraries.setFormatter(TerminalFormatter(f"{PROJECT_LOGGER}: %(name)s failed: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [libraries]
    root.setLevel(logging.WARNING)  # a library's INFO is never even formatted
    logging.captureWarnings(True)   # warnings.warn → the "py.warnings" logger, a library's like any other
