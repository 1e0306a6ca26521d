"""``python -m sdqos.sandbox STAGE STATE_DIR ...``: the internal stages a sandbox runs as (supervisor, PID 1)."""

import sys

from sdqos.sandbox.boot import _main

_main(sys.argv[1:])
