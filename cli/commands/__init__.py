"""One module per ``preloop`` command group; ``cli.main`` imports each only when its command runs."""
