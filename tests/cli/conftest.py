"""CLI tests never see the user's environment or keyring (see tests/cli/helpers.py)."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("PRELOOP_URL", "PRELOOP_TOKEN", "PRELOOP_DEBUG", "NO_COLOR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "keyring.backends.fail.Keyring")
