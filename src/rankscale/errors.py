"""The error a configuration is refused with, apart from the schema and its checks (`rankscale.config`): what
extraction imports (the run's layout names a refused run directory with it) stays clear of the configuration code."""

from __future__ import annotations


class ConfigError(ValueError):
    """The configuration is unusable; each line of the message names the key and the value, and the fix.

    `origin` is the file (with its line, `path:line`) where it is known; otherwise the workflow names the
    configuration file that sets the key (rankscale.plan.errors).
    """

    def __init__(self, message: str, origin: str | None = None) -> None:
        super().__init__(message)
        self.origin = origin
