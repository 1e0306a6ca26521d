"""``python -m sdqos``."""

from sdqos.cli import main

main()
