"""One module per ``preloop`` command group; ``tui.cli`` imports each only when its command runs."""
