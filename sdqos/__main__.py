"""``python -m sdqos``."""

from sdqos.cli.app import main

main()
