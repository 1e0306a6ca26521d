"""The host side: one small adapter per thing sdqos talks to or reads on the machine.

``systemd`` is the only D-Bus client (every StartTransientUnit, SetUnitProperties, StopUnit and
read goes through it); ``cgroupfs`` reads what the kernel holds for a unit's cgroup (reads only:
sdqos never writes cgroupfs); ``procfs`` reads processes and writes the one file systemd cannot
set, ``/proc/PID/oom_score_adj``; ``facts`` detects capacity, the cgroup layout and the page size;
``rundir`` keeps /run/sdqos (sync lock, what the last sync applied); ``unitfiles`` renders the
timer, service and path unit and the pressure service that ``install-units`` writes; ``libvirt`` reads libvirt's record of
its running domains, ``machined`` talks to systemd-machined, ``podman`` runs the podman command.
New adapters go here, one module each.

May import: the standard library, the D-Bus library, ``sdqos.errors``, ``sdqos.humanize``,
``sdqos.kube``, ``sdqos.plan`` (the vocabulary of unit properties). Never ``loading``,
``reconcile``, ``cli`` or ``sandbox``.
"""
