"""The streaming toolkit every backend's live feed is built from; pure parts tested without a network.

=====================  =====================================================================
``sse``                SSE bytes → frames (pure decoder, chunks may split anywhere)
``decode``             frames → events, a chunk's frames validated in one pydantic call
``order``              :class:`EventOrderer`: seq order, once each, gaps held (configurable first seq)
``intake``             :class:`SeqIntake`: order + skip counting + end detection + the gap policy
``policy``             :func:`backoff_delay` (jittered) and :func:`refuses` (when to stop for good)
``reconnect``          :func:`reconnecting`: the one loop that owns Connecting/Live/Reconnecting/Refused
=====================  =====================================================================

A backend supplies only "open, read, map": one connection's worth of work handed to
:func:`~client.streaming.reconnect.reconnecting`.
"""
