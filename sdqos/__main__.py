"""``python -m sdqos``."""

from .cli import main

main()
