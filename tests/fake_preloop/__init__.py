"""A fake Preloop 0.17.1 server for tests, serving the recorded exchanges in ``captures/``."""

from tests.fake_preloop.app import (
    FOREIGN_SESSION,
    MAIN_SESSION,
    RATE_SESSION,
    TOKEN,
    FakePreloop,
    build_app,
    load_capture,
)
from tests.fake_preloop.server import running_fake_preloop

__all__ = [
    "FOREIGN_SESSION",
    "MAIN_SESSION",
    "RATE_SESSION",
    "TOKEN",
    "FakePreloop",
    "build_app",
    "load_capture",
    "running_fake_preloop",
]
