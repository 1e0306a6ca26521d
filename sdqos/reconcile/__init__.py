"""Reconciliation: make systemd hold the plan, and never touch what sdqos does not own.

``live`` reads the live state; ``scopes`` (pure) and ``binding`` decide which scope runs which
container or VM and write their OOM scores; ``diff`` (pure) holds the rules — what is created,
updated, restored, kept, left alone as foreign, removed, and the phase order; ``apply`` carries a
diff out in that order; ``sync`` is one whole pass and ``report`` what it did; ``launch`` starts or
adopts processes into a container's or VM's scope (``sdqos run``/``adopt``).

May import: everything below it (``errors``, ``humanize``, ``kube``, ``plan``, ``host``); never
``loading``, ``cli`` or ``sandbox``.
"""
