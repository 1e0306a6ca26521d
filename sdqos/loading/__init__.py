"""Loading: a config directory → a validated ``Config`` and its ``Plan``, fast on every sync.

Owns reading the config dir with its trust checks (``configdir``: node.yaml, pods/, vms/), the
parse cache in /run/sdqos that keeps validated files and plan fragments while files are unchanged
(``cache``), parsing spread over CPUs on a cold start (``fanout``), planning incrementally
(``incremental.load_plan``: the same result as ``configdir.load_config`` + ``plan.engine.build_plan``,
with or without the cache), and the one loading path every command uses (``load.load``: the config
dir, what the last sync counted in machine.slice, what-if pod files). The cache lives behind these
functions: the planner never sees it.

May import: the standard library, PyYAML, ``sdqos.errors``, ``sdqos.humanize``, ``sdqos.kube``,
``sdqos.plan``, and from ``sdqos.host`` the host facts (capacity, page size), the run dir (its
store, and the CPU manager's state in it) and forked children. Every load records what it read
(``Config.inputs``): the no-op proof checks exactly those.
"""
