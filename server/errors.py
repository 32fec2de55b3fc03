"""The one error the control plane's rules raise: :class:`ApiError`, a refusal the HTTP layer turns into
Preloop's ``{"detail": ...}`` body with the same status (and headers, e.g. ``WWW-Authenticate``)."""

from __future__ import annotations


class ApiError(Exception):
    """A refusal with an HTTP status and Preloop's ``detail`` sentence."""

    def __init__(self, status: int, detail: str, headers: dict[str, str] | None = None) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.headers = headers
