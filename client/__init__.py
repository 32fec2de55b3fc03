"""The client library: a backend per kind of server behind one protocol, the live feeds, the timeline
model, configuration. No UI toolkit is imported anywhere in this package, so scripts can use it::

    from client.backends import connect
    from client.config import resolve_settings

    async with await connect(resolve_settings(None, None, None)) as backend:
        page = await backend.list_sessions()

Import what you use from its module (``client.backends.base.Backend``, ``client.errors.ClientError``):
this package imports nothing itself, so ``import client.models`` from the server stays light.
"""
