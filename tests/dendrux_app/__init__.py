"""A real Dendrux 0.4.1 app for tests and trying by hand: FastAPI + Dendrux's read router + our steer router +
a scripted offline model + SQLite, served on 127.0.0.1 (see :mod:`tests.dendrux_app.app`)."""
