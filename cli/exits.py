"""Exit codes and the usage error every ``preloop`` command shares (see ``cli.main``'s docstring).

A module of its own so that command modules can name them without importing the command tree.
"""

from __future__ import annotations

__all__ = [
    "EXIT_CODES_HELP",
    "EXIT_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_USAGE",
    "CliUsageError",
]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

EXIT_CODES_HELP = """\
exit codes:
  0    success
  1    the server refused the request, or it failed (unreachable server, 401/403/404/422/429/5xx)
  2    usage error (bad flag or flag combination), reported before any request is made
  130  interrupted (Ctrl+C)

environment:
  PRELOOP_URL, PRELOOP_TOKEN   server URL and token (--url / --token win over them)
"""


class CliUsageError(Exception):
    """A bad flag or flag combination found by a command before any request: exit code 2."""
