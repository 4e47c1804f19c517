"""Errors a command reports as one line, with an exit code, and never as a traceback."""

from __future__ import annotations

EXIT_OK = 0
EXIT_USAGE = 1  # bad options, a missing input the command cannot start without
EXIT_FINDINGS = 2  # the command ran and found errors (or warnings with --strict), or the check failed
EXIT_ENGINE = 3  # an engine or a cloud could not be used: the answer is unknown, not negative


class UserError(Exception):
    """Something the user can fix; printed as ``nfvcat: error: <message>``."""

    def __init__(self, message: str, exit_code: int = EXIT_USAGE):
        super().__init__(message)
        self.exit_code = exit_code
