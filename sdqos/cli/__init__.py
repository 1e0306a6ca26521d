"""Presentation: the ``sdqos`` command line and everything it prints.

``app`` is the typer application (console script ``sdqos`` = ``sdqos.cli.app:main``; every command
loads what it needs lazily, so ``sdqos plan`` never imports D-Bus); ``render`` prints plans;
``status`` gathers and prints live usage against entitlement; ``metrics`` writes Prometheus text.
Errors from every layer arrive here as typed ``sdqos.errors`` and leave as one line and an exit code.

May import: every other part of sdqos; nothing imports it.
"""
