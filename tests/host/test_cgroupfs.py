"""What the kernel must hold for a unit's properties (sdqos.host.cgroupfs), read from files laid out
as cgroupfs lays them out. The v2 facts come from the v2 guest (tests/v2)."""

from __future__ import annotations

from sdqos.host import cgroupfs

INF = 2**64 - 1


def write(root, rel: str, files: dict[str, str]) -> None:
    d = root / rel.strip("/")
    d.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (d / name).write_text(text + "\n")


def in_sync(props: dict[str, int], cgroup: str, mode: str, root) -> bool:
    """Whether the files hold exactly what the properties produce (as sync's read_live asks it)."""
    want = cgroupfs.expected(props, mode, 4096)
    return want is not None and cgroupfs.read(cgroup, want, root) == want


def test_v2_without_quota_accepts_any_period_systemd_leaves_in_cpu_max(tmp_path):
    """systemd 252 and 257 keep cpu.max at "max 100000" for a unit with CPUQuotaPeriodUSec=50ms and no
    quota: that is in sync, not drift (it was reported as drift, and "restored", on every sync)."""
    props = {"CPUWeight": 100, "CPUQuotaPerSecUSec": INF, "CPUQuotaPeriodUSec": 50_000, "MemoryMax": INF,
             "MemoryMin": 0, "MemoryLow": 0, "MemoryHigh": INF, "TasksMax": 1024}
    write(tmp_path, "/a.slice", {"cpu.weight": "100", "cpu.max": "max 100000", "memory.max": "max", "memory.min": "0",
                                 "memory.low": "0", "memory.high": "max", "pids.max": "1024"})
    assert in_sync(props, "/a.slice", "v2", root=tmp_path)
    write(tmp_path, "/a.slice", {"cpu.max": "50000 100000"})  # a quota written behind systemd's back
    assert not in_sync(props, "/a.slice", "v2", root=tmp_path)


def test_v2_with_quota_checks_quota_and_period(tmp_path):
    props = {"CPUWeight": 100, "CPUQuotaPerSecUSec": 500_000, "CPUQuotaPeriodUSec": 50_000, "TasksMax": INF}
    write(tmp_path, "/b.slice", {"cpu.weight": "100", "cpu.max": "25000 50000", "pids.max": "max"})
    assert in_sync(props, "/b.slice", "v2", root=tmp_path)
    write(tmp_path, "/b.slice", {"cpu.max": "25000 100000"})
    assert not in_sync(props, "/b.slice", "v2", root=tmp_path)


def test_populated_reads_the_v2_tree_systemd_tracks_processes_in(tmp_path):
    """cgroup.events of the unified tree (or, on a hybrid host, of /sys/fs/cgroup/unified) says
    whether any process runs below a slice; a slice without a cgroup holds none; a legacy-only
    host has no such file (None: ask systemd)."""
    assert cgroupfs.populated("/kubepods.slice", tmp_path) is None  # legacy v1: nothing to read
    for base in (tmp_path / "unified", tmp_path):  # hybrid first, then unified
        other = tmp_path if base != tmp_path else tmp_path / "unified"
        (base / "kubepods.slice").mkdir(parents=True, exist_ok=True)
        (base / "cgroup.controllers").write_text("cpu memory pids\n")
        (base / "kubepods.slice" / "cgroup.events").write_text("populated 0\nfrozen 0\n")
        assert cgroupfs.populated("/kubepods.slice", tmp_path) is False
        (base / "kubepods.slice" / "cgroup.events").write_text("populated 1\nfrozen 0\n")
        assert cgroupfs.populated("/kubepods.slice", tmp_path) is True
        assert cgroupfs.populated("/machine.slice", tmp_path) is False  # no cgroup: no process
        (base / "cgroup.controllers").unlink()
        assert not (other / "cgroup.controllers").exists()


def test_populated_on_this_host_matches_the_processes_in_the_tree():
    """The real kernel: the root cgroup of this host's v2 tree holds processes (this one)."""
    import os

    mine = open("/proc/self/cgroup").read()
    if not any(line.startswith("0::") for line in mine.splitlines()):
        return  # no v2 tree on this kernel: populated() is None, covered above
    where = next(line[3:] for line in mine.splitlines() if line.startswith("0::"))
    base = "/sys/fs/cgroup/unified" if os.path.exists("/sys/fs/cgroup/unified/cgroup.controllers") else "/sys/fs/cgroup"
    if not os.path.isdir(base + where) or where == "/":
        return
    assert cgroupfs.populated(where) is True


# --- cgroupfs.holds: the bytes compared first, the same answer as read -------------------------

from hypothesis import example, given, strategies as st  # noqa: E402

from sdqos.plan import properties as P  # noqa: E402

_VALUES = st.one_of(st.sampled_from([0, 1, 2, 1000, 50_000, 100_000, 1_000_000, 2**63 - 1, INF]),
                    st.integers(min_value=0, max_value=2**64 - 1))


def _props(mode: str):
    periods = st.sampled_from([1000, 50_000, 100_000, 1_000_000, INF])  # (a period of 0 is refused before)
    return st.dictionaries(st.sampled_from(P.owned(mode)), _VALUES, min_size=1).flatmap(
        lambda d: periods.map(lambda p: {**d, "CPUQuotaPeriodUSec": p} if "CPUQuotaPeriodUSec" in d else d)).map(
        lambda d: {**d, "CPUQuotaPerSecUSec": d["CPUQuotaPerSecUSec"] or 1} if "CPUQuotaPerSecUSec" in d else d)


def _texts(want: dict, data) -> dict[str, str | None]:
    """What each file holds: the wanted value as the kernel prints it, or a near miss (another
    number, no newline, spaces, another period, "max", nothing), or no file at all (None)."""
    out: dict[str, str | None] = {}
    for f, v in want.items():
        printed = f"{v[0]} {100_000 if v[1] is None else v[1]}" if isinstance(v, tuple) else str(v)
        out[f] = data.draw(st.sampled_from([printed + "\n", printed + "\n", printed, f" {printed} \n",
                                            printed + "0\n", "max\n", "max 100000\n", "-1\n", "1\n", "", None]),
                           label=f)
    return out


@given(mode=st.sampled_from(["v1", "v2"]), data=st.data())
@example(mode="v1", data=None)
def test_holds_answers_what_read_answers(tmp_path_factory, mode, data):
    """Whatever the files hold, ``holds`` (bytes first, parsed only on a difference) answers what
    ``read`` answers: equal to the wanted values exactly when they are in place, the same dict of
    what is held otherwise, None where a file is missing; and the usual case — every file as the
    kernel prints the wanted value — is answered from the bytes alone (no file parsed)."""
    if data is None:  # the kernel's own spelling of a unit with no limits: every file rendered
        props = {k: INF for k in P.owned(mode)}
        want = cgroupfs.expected(props, mode, 4096)
        assert want is not None
        texts: dict[str, str | None] = {f: (r.decode() if r is not None else None)
                                        for f, r in zip(want, cgroupfs.rendered(want))}
        texts = {f: t if t is not None else "max 100000\n" for f, t in texts.items()}
    else:
        props = data.draw(_props(mode), label="props")
        want = cgroupfs.expected(props, mode, 4096)
        if want is None:
            return
        texts = _texts(want, data)
    root = tmp_path_factory.mktemp("cg")
    for f, text in texts.items():
        if text is not None:
            d = root / (f.split("/")[0] if "/" in f else "") / "kubepods.slice" / "p.slice"
            d.mkdir(parents=True, exist_ok=True)
            (d / f.split("/")[-1]).write_text(text)
    raw = cgroupfs.rendered(want)
    assert cgroupfs.holds("/kubepods.slice/p.slice", want, root) == cgroupfs.read("/kubepods.slice/p.slice",
                                                                                      want, root)
    for f, r in zip(want, raw):  # a rendering is what the kernel prints, and reads back as the value
        if r is not None:
            assert r.endswith(b"\n") and cgroupfs._parse(f, r.decode()) == want[f]
    if all(r is not None and texts[f] == r.decode() for f, r in zip(want, raw)):
        # the bytes alone answered: ``want`` itself, where read builds a dict of what it parsed
        assert cgroupfs.holds("/kubepods.slice/p.slice", want, root) is want


def _fake(tmp_path, comm: str, cgroup: str, tree: dict[str, str]):
    proc, root = tmp_path / "proc", tmp_path / "cg"
    (proc / "1").mkdir(parents=True)
    (proc / "1" / "comm").write_text(comm + "\n")
    (proc / "1" / "cgroup").write_text(cgroup)
    for rel, pids in tree.items():
        (root / rel).mkdir(parents=True, exist_ok=True)
        (root / rel / "cgroup.procs").write_text(pids)
    return proc, root


V1 = "9:name=systemd:/init.scope\n4:memory:/init.scope\n1:cpu:/\n0::/init.scope\n"


def test_available_when_the_tree_here_holds_pid_1_where_its_cgroup_says(tmp_path):
    """Without the /proc/1/ns links (a service without CAP_SYS_PTRACE cannot read them): PID 1
    is systemd and its cgroup, as /proc/1/cgroup names it here, holds PID 1 in the tree mounted
    here — systemd's hierarchy on v1 (and hybrid), the one tree on v2."""
    assert cgroupfs.available(*_fake(tmp_path / "v1", "systemd", V1, {"systemd/init.scope": "1\n"}))
    assert cgroupfs.available(*_fake(tmp_path / "v2", "systemd", "0::/init.scope\n", {"init.scope": "1\n57\n"}))
    assert not cgroupfs.available(*_fake(tmp_path / "init", "bash", "0::/init.scope\n", {"init.scope": "1\n"}))
    # another cgroup namespace: PID 1's cgroup lies outside this one's root
    assert not cgroupfs.available(*_fake(tmp_path / "ns", "systemd", "0::/../../init.scope\n",
                                          {"init.scope": "1\n"}))
    # another mount of the tree (a subtree, or another systemd's): PID 1 is not where its cgroup says
    assert not cgroupfs.available(*_fake(tmp_path / "sub", "systemd", "0::/init.scope\n", {"init.scope": "4242\n"}))
    assert not cgroupfs.available(*_fake(tmp_path / "none", "systemd", V1, {"init.scope": "1\n"}))
    assert not cgroupfs.available(tmp_path / "nothing", tmp_path / "cg")
