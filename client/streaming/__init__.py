"""The streaming toolkit every backend's live feed is built from; pure parts tested without a network.

SSE streams are opened and parsed by httpx-sse (``client.connection.Connection.event_source``,
``EventSource.aiter_sse``); this package takes over from the parsed frames:

=====================  =====================================================================
``decode``             a frame → an event (our vocabulary), or why it is not one
``order``              :class:`EventOrderer`: seq order, once each, gaps held (configurable first seq)
``intake``             :class:`SeqIntake`: order + skip counting + end detection + the gap policy
``policy``             :func:`backoff_delay` (jittered) and :func:`refuses` (when to stop for good)
``reconnect``          :func:`reconnecting`: the one loop that owns Connecting/Live/Reconnecting/Refused
=====================  =====================================================================

A backend supplies only "open, read, map": one connection's worth of work handed to
:func:`~client.streaming.reconnect.reconnecting`.
"""
