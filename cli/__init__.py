"""The ``preloop`` command line: argparse commands, ``--plain`` and ``--json`` output.

No Textual at import time: ``cli.commands.tui_entry`` imports ``tui`` only to open the app.
"""
