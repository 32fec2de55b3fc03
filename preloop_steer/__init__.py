"""Code that runs inside someone else's app: the steer router a Dendrux app mounts.

``preloop_steer.dendrux`` has a top-level name of its own, so an app with its own ``server`` package can
still import it.
"""
