"""Presentation: the ``sdqos`` command line and everything it prints.

``app`` is the typer application (console script ``sdqos`` = ``sdqos.cli:main``, which runs ``app.main``; every command
loads what it needs lazily, so ``sdqos plan`` never imports D-Bus); ``render`` prints plans;
``status`` gathers and prints live usage against entitlement; ``metrics`` writes Prometheus text.
Errors from every layer arrive here as typed ``sdqos.errors`` and leave as one line and an exit code.

May import: every other part of sdqos; nothing imports it.
"""


def main() -> None:
    """The console script (and ``python -m sdqos``): :func:`sdqos.cli.app.main`, with a Ctrl-C
    that comes while its modules load ending as any other: one line, exit 130, no traceback."""
    try:
        from sdqos.cli.app import main as run

        run()  # (never returns: it ends the process)
    except (KeyboardInterrupt, RuntimeError) as exc:
        if isinstance(exc, RuntimeError) and not isinstance(exc.__cause__, KeyboardInterrupt):
            raise  # (Python 3.11 wraps a Ctrl-C while a module makes a class: "Error calling __set_name__")
        import os
        import sys

        print("sdqos: interrupted", file=sys.stderr)
        os._exit(130)
