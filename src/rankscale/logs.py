"""Logging for rule scripts: to the rule's log file under logs/ and to stderr."""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from types import TracebackType


def setup_logging(log_file: str | None = None, level: int = logging.INFO) -> logging.Logger:
    """Log to `log_file` and stderr; uncaught exceptions are logged too, so logs/ explains failures."""
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if log_file:
        Path(log_file).parent.mkdir(parents=True, exist_ok=True)
        handlers.append(logging.FileHandler(log_file, mode="w"))
    logging.basicConfig(
        level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s", handlers=handlers, force=True
    )
    logging.captureWarnings(True)  # a warnings.warn (numpy's, a library's) lands in the log too, counted at the end
    log = logging.getLogger("rankscale")

    def log_uncaught(kind: type[BaseException], value: BaseException, tb: TracebackType | None) -> None:
        log.critical("%s: %s", kind.__name__, value, exc_info=(kind, value, tb))

    sys.excepthook = log_uncaught
    return log
