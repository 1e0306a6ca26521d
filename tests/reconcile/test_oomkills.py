"""The pure accounting of OOM kills (reconcile/oomkills.py) and the kernel log's parsing
(host/oomevents.parse_log): each kill once, from whichever source saw it first, counters of a
scope made anew counted from 0. The lines are the kernel's own (6.18, cgroup v1, in a sandbox's
cgroup namespace: the paths carry the namespace's place in the hierarchy)."""

from __future__ import annotations

from hypothesis import given, strategies as st

from sdqos.host.oomevents import Counter, LogKill, parse_log
from sdqos.reconcile.oomkills import Watched, account, attribute
from sdqos.reconcile.oomwatch import lines

NS = "/process_api/5231bc34/sdqos-sandbox-x"
POD = "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podabc.slice"
SCOPE = f"{POD}/sdqos-podabc-hog.scope"
OOM_LINE = (f"oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0,oom_memcg={NS}{POD},"
            f"task_memcg={NS}{SCOPE},task=python,pid=21372,uid=0")
KILLED = ("Memory cgroup out of memory: Killed process 21372 (python) total-vm:218796kB, anon-rss:65024kB, "
          "file-rss:6104kB, shmem-rss:0kB, UID:0 pgtables:184kB oom_score_adj:993")

UNITS = [
    Watched("kubepods.slice", "/kubepods.slice", "node"),
    Watched("kubepods-burstable.slice", "/kubepods.slice/kubepods-burstable.slice", "tier"),
    Watched("kubepods-burstable-podabc.slice", POD, "pod", "t/hog", "Burstable", 64 * 2**20),
    Watched("sdqos-podabc-hog.scope", SCOPE, "container", "t/hog/hog", "Burstable", 64 * 2**20),
]
HOG = "sdqos-podabc-hog.scope"


def log_kill(seq: int, t: float = 100.0, pid: int = 7) -> LogKill:
    return LogKill(seq, t, pid, "python", f"{NS}{SCOPE}", f"{NS}{POD}", "CONSTRAINT_MEMCG")


def test_the_kernels_lines_parse_into_one_kill_with_its_memcgs():
    (k,) = parse_log([(10, 5_000_000, "invoked oom-killer"), (11, 5_000_100, OOM_LINE), (12, 5_000_200, KILLED)], 1000.0)
    assert (k.seq, k.pid, k.comm, k.constraint) == (12, 21372, "python", "CONSTRAINT_MEMCG")
    assert k.task_memcg == NS + SCOPE and k.oom_memcg == NS + POD and k.time == 1005.0002


def test_a_node_wide_oom_has_no_oom_memcg():
    line = OOM_LINE.replace(f"oom_memcg={NS}{POD},", "global_oom,").replace("CONSTRAINT_MEMCG", "CONSTRAINT_NONE")
    (k,) = parse_log([(1, 0, line), (2, 0, KILLED)], 0.0)
    assert k.oom_memcg is None and k.constraint == "CONSTRAINT_NONE" and k.task_memcg == NS + SCOPE
    assert parse_log([(1, 0, KILLED)], 0.0) == []  # no oom-kill: line before it: not ours to place


def test_a_group_kill_is_one_oom_of_several_processes_in_one_journal_line():
    """memory.oom.group (kubelet's v2 default): the kernel names the group, then kills each of its
    processes; each counts (as the kernel's counter does), the journal has one line."""
    group = f"Tasks in {NS}{SCOPE} are going to be killed due to memory.oom.group set"
    recs = [(11, 0, OOM_LINE), (12, 0, group), (13, 0, KILLED), (14, 0, KILLED.replace("21372 (python)", "21370 (sh)")),
            (15, 0, KILLED.replace("21372 (python)", "21371 (sleep)"))]
    kills = parse_log(recs, 0.0)
    assert [(k.pid, k.comm, k.task_memcg, k.event) for k in kills] == [
        (21372, "python", NS + SCOPE, 11), (21370, "sh", NS + SCOPE, 11), (21371, "sleep", NS + SCOPE, 11)]
    r = account({}, UNITS, {HOG: None}, kills, 15, 1.0)  # the scope ended with them
    assert len(r.kills) == 3 and r.record["units"][HOG]["total"] == 3
    (line,) = lines(r.kills)
    assert line.startswith(f"oom-killed: t/hog/hog ({HOG}): the kernel killed process 21372 (python) and 2 more of its group: ")
    assert "limit 64 MiB of kubepods-burstable-podabc.slice" in line
    again = [LogKill(20, 2.0, 9, "python", f"{NS}{SCOPE}", None, "CONSTRAINT_NONE", 19)]
    assert len(lines(r.kills + account(r.record, UNITS, {HOG: None}, again, 20, 2.0).kills)) == 2


def test_attribute_takes_the_deepest_unit_behind_a_namespace_prefix():
    assert attribute(f"{NS}{SCOPE}", UNITS).unit == HOG
    assert attribute(f"{NS}{SCOPE}/libvirt/emulator", UNITS).unit == HOG
    assert attribute(f"{NS}{POD}", UNITS).unit == "kubepods-burstable-podabc.slice"
    assert attribute("/system.slice/cron.service", UNITS) is None
    assert attribute(f"{NS}{POD}x", UNITS).unit == "kubepods-burstable.slice"  # a name is matched whole


def test_a_counted_kill_is_reported_once_with_the_logs_details():
    r1 = account({}, UNITS, {HOG: Counter(5, 1)}, [log_kill(12)], 12, 200.0)
    assert [(k.unit, k.detail["pid"], k.detail["source"], k.detail["limitUnit"]) for k in r1.kills] == [
        (HOG, 7, "kernel log", "kubepods-burstable-podabc.slice")]
    r2 = account(r1.record, UNITS, {HOG: Counter(5, 1)}, [], 12, 300.0)
    assert r2.kills == [] and r2.record["units"][HOG]["total"] == 1


def test_without_the_log_the_counter_tells_with_the_time_first_seen():
    r = account({}, UNITS, {HOG: Counter(5, 2)}, None, None, 200.0)
    assert [(k.detail["time"], k.detail["pid"], k.detail["source"]) for k in r.kills] == [(200.0, None, "counter")] * 2
    assert r.record["seq"] is None


def test_counter_first_log_later_fills_the_kill_in_instead_of_counting_it_again():
    r1 = account({"seq": 11}, UNITS, {HOG: Counter(5, 1)}, [], 11, 200.0)
    assert len(r1.kills) == 1 and r1.kills[0].detail["source"] == "counter"
    r2 = account(r1.record, UNITS, {HOG: Counter(5, 1)}, [log_kill(12)], 12, 300.0)
    assert r2.kills == [] and r2.record["units"][HOG]["last"]["pid"] == 7 and r2.record["units"][HOG]["total"] == 1


def test_log_first_counter_later_waits_for_the_counter():
    r1 = account({"seq": 11}, UNITS, {HOG: Counter(5, 0)}, [log_kill(12)], 12, 200.0)
    assert r1.kills == []
    r2 = account(r1.record, UNITS, {HOG: Counter(5, 1)}, [], 12, 300.0)
    assert [k.detail["pid"] for k in r2.kills] == [7]
    assert account(r2.record, UNITS, {HOG: Counter(5, 1)}, [], 12, 400.0).kills == []


def test_a_scope_gone_with_its_victim_is_told_by_the_log_and_a_new_one_starts_from_zero():
    r1 = account({"seq": 11}, UNITS, {HOG: Counter(5, 0)}, [], 11, 100.0)
    r2 = account(r1.record, UNITS, {HOG: None}, [log_kill(12)], 12, 200.0)
    assert [k.detail["pid"] for k in r2.kills] == [7]
    r3 = account(r2.record, UNITS, {HOG: Counter(9, 0)}, [], 12, 300.0)  # made anew: another inode
    assert r3.kills == [] and r3.record["units"][HOG]["total"] == 1
    r4 = account(r3.record, UNITS, {HOG: Counter(9, 1)}, [log_kill(13, pid=8)], 13, 400.0)
    assert [k.detail["pid"] for k in r4.kills] == [8] and r4.record["units"][HOG]["total"] == 2


def test_a_log_record_of_an_earlier_scope_of_that_name_is_reported_after_one_sync():
    r1 = account({"seq": 11}, UNITS, {HOG: Counter(9, 0)}, [log_kill(12)], 12, 200.0)
    assert r1.kills == []
    r2 = account(r1.record, UNITS, {HOG: Counter(9, 0)}, [], 12, 300.0)
    assert [k.detail["pid"] for k in r2.kills] == [7]
    assert account(r2.record, UNITS, {HOG: Counter(9, 0)}, [], 12, 400.0).kills == []


def test_a_kill_below_a_pod_but_in_no_container_is_the_pods():
    rec = LogKill(12, 1.0, 7, "sh", f"{NS}{POD}/libpod-0a1b.scope", f"{NS}{POD}", "CONSTRAINT_MEMCG")
    r = account({}, UNITS, {HOG: Counter(5, 0)}, [rec], 12, 2.0)
    assert [(k.unit, k.name) for k in r.kills] == [("kubepods-burstable-podabc.slice", "t/hog")]


@given(st.lists(st.tuples(st.booleans(), st.integers(0, 3), st.booleans()), max_size=12))
def test_every_kill_is_reported_exactly_once_whatever_order_the_sources_see_it(steps):
    """Each step: maybe the scope is made anew, k kills happen, and sync reads the log before
    or after them (the log then shows them one sync later)."""
    record: dict = {"seq": 0}
    ino, count, seq, happened, reported = 1, 0, 0, 0, 0
    late: list[LogKill] = []
    for new_scope, k, log_lags in steps:
        if new_scope:
            ino, count = ino + 1, 0
        fresh = []
        for _ in range(k):
            seq += 1
            fresh.append(log_kill(seq, pid=seq))
        count += k
        happened += k
        shown = late + ([] if log_lags else fresh)
        late = fresh if log_lags else []
        r = account(record, UNITS, {HOG: Counter(ino, count)}, shown, max([x.seq for x in shown], default=record["seq"]), 1.0)
        reported += len(r.kills)
        record = r.record
    for _ in range(2):  # quiet syncs: everything settles
        r = account(record, UNITS, {HOG: Counter(ino, count)}, late, max([x.seq for x in late], default=record["seq"]), 1.0)
        late = []
        reported += len(r.kills)
        record = r.record
    assert reported == happened


PATHS = [POD, SCOPE, f"{POD}/libpod-0a1b.scope", "/kubepods.slice/kubepods-burstable.slice",
         "/system.slice/cron.service", "/sdqos-other-sandbox/kubepods.slice/kubepods-besteffort.slice/x.scope"]


@given(st.lists(st.tuples(st.sampled_from(PATHS), st.sampled_from([None, *PATHS]), st.booleans()), max_size=6),
       st.booleans(), st.sampled_from([None, Counter(5, 0), Counter(5, 2)]))
def test_only_the_units_a_record_names_are_needed_to_place_it(recs, recorded, counter):
    """observe_kills hands ``account`` only the units named in a record's paths (plus those
    counted or recorded; oomwatch._components): the kills and the record are the same as with
    every unit."""
    from sdqos.reconcile.oomwatch import _components

    log = [LogKill(12 + i, 1.0 + i, 7 + i, "sh", (NS if ns else "") + task, oom and (NS + oom), "CONSTRAINT_MEMCG")
           for i, (task, oom, ns) in enumerate(recs)]
    counters = {HOG: counter}
    old = account({"seq": 11}, UNITS, counters, log[:1], 12, 0.5).record if recorded else {"seq": 11}
    named = _components(log) | set(counters) | set(old.get("units") or {})
    narrow = [w for w in UNITS if w.unit in named]
    assert account(old, narrow, counters, log, 20, 30.0) == account(old, UNITS, counters, log, 20, 30.0)


# --- the log read in pieces: a sync may read it between an OOM's lines --------------------------

from sdqos.host.oomevents import select_records  # noqa: E402


def _event(pid: int, members: list[int], where: str) -> list[str]:
    """The kernel's lines for one OOM: its oom-kill: line, its victim's kill, and with
    memory.oom.group the group line and each other member's kill."""
    oom = OOM_LINE.replace("pid=21372", f"pid={pid}").replace(SCOPE, where)
    out = [f"{where} invoked oom-killer", oom, KILLED.replace("21372 (python)", f"{pid} (python)")]
    if members:
        out.append(f"Tasks in {NS}{where} are going to be killed due to memory.oom.group set")
        out += [KILLED.replace("21372 (python)", f"{m} (sh)") for m in members]
    return out


EVENTS = st.lists(st.tuples(st.integers(100, 999), st.lists(st.integers(1000, 1999), max_size=3),
                            st.sampled_from([SCOPE, SCOPE.replace("hog", "web")]), st.booleans()),
                  min_size=1, max_size=4)


@given(EVENTS, st.data())
def test_a_log_read_in_two_pieces_finds_the_kills_one_read_finds(events, data):
    """Wherever a sync's read of the kernel log ends — between an OOM's oom-kill: line and its
    kill, between a group's line and its members' — the next read, from that sequence number on,
    finds the rest: the two reads together name each kill once, with the memcg one read of the
    whole log gives it."""
    log: list[tuple[int, int, str, int]] = []
    for pid, members, where, noise in events:
        for msg in _event(pid, members, where) + (["audit: something else"] if noise else []):
            log.append((len(log) + 1, len(log) * 10, msg, 0))
    split = data.draw(st.integers(0, len(log)), label="the first read ends after")
    whole = parse_log(select_records(log, None)[0], 0.0)
    first, last = select_records(log[:split], None)
    second, _ = select_records(log, last)
    assert parse_log(first, 0.0) + parse_log(second, 0.0) == whole
    assert len(whole) == sum(1 + len(m) for _, m, _, _ in events)


def test_a_kill_line_read_after_its_oom_line_keeps_that_oom_memcg():
    """The case the property above found in the code before: the read ended right after the
    oom-kill: line, and the next read's Killed process line had nothing to be placed by."""
    log = [(11, 0, OOM_LINE, 0), (12, 0, KILLED, 0)]
    first, last = select_records(log[:1], None)
    assert parse_log(first, 0.0) == [] and last == 11
    (k,) = parse_log(select_records(log, last)[0], 0.0)
    assert (k.seq, k.pid, k.task_memcg, k.event) == (12, 21372, NS + SCOPE, 11)


def test_the_kill_count_is_recorded_only_as_far_as_the_log_told_of_it():
    from sdqos.reconcile.oomwatch import logged_total

    # the kernel counted a kill whose Killed process line was not printed yet: the next sync reads the log again
    assert logged_total({"kernelTotal": 4, "kernelSeen": 4}, 5, 0) == 4
    # ... and finds it there
    assert logged_total({"kernelTotal": 4, "kernelSeen": 5}, 5, 1) == 5
    # ... or not, with the count standing still since: that line is not coming (rate-limited, wrapped)
    assert logged_total({"kernelTotal": 4, "kernelSeen": 5}, 5, 0) == 5
    # every counted kill in the log, or no count recorded before (the first read): the count as it is
    assert logged_total({"kernelTotal": 4, "kernelSeen": 4}, 6, 2) == 6
    assert logged_total({}, 6, 0) == 6


@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3)), min_size=1, max_size=12))
def test_a_counted_kill_keeps_the_log_read_until_its_line_is_seen_or_stops_coming(steps):
    """Syncs, each after the kernel counted some kills and printed some of the counted ones'
    lines: a sync skips the log (the recorded count is the counter's) only when every counted
    kill's line was seen by a read, or was given up on — by the first read, which cannot know
    what the log lost before it, or by a read after the counter stood still over two reads (a
    line the kernel prints microseconds after counting is not coming a sync later)."""
    from sdqos.reconcile.oomwatch import logged_total

    counted = printed = forgiven = 0
    record: dict = {}
    reads: list[tuple[int, int]] = []  # (the counter, the lines seen so far) at each read
    for new, lines_now in steps:
        counted += new
        printed = min(counted, printed + lines_now)
        if record and record["kernelTotal"] == counted:  # the sync skips the log
            seen = reads[-1][1]
            assert seen + forgiven >= counted
            continue
        logged = printed - (reads[-1][1] if reads else 0)
        stood_still = bool(reads) and reads[-1][0] == counted
        record = {"kernelTotal": logged_total(record, counted, logged), "kernelSeen": counted}
        reads.append((counted, printed))
        assert record["kernelTotal"] <= counted
        if record["kernelTotal"] == counted and printed + forgiven < counted:
            # lines still missing are given up on only by the first read or after the count stood still
            assert len(reads) == 1 or stood_still
            forgiven = counted - printed


def test_a_kill_whose_oom_line_was_rate_limited_is_not_placed_in_the_oom_before_it():
    """The kernel prints an OOM's header (and its oom-kill: line) only within its rate limit; the
    Killed process line always. A kill of another PID after a single kill is not that OOM's."""
    other = KILLED.replace("21372 (python)", "555 (postgres)")
    kills = parse_log([(11, 0, OOM_LINE), (12, 0, KILLED), (13, 0, other)], 0.0)
    assert [(k.pid, k.task_memcg) for k in kills] == [(21372, NS + SCOPE)]


# --- the kernel's lines, matched whole: a message that quotes one is no OOM line -------------------

from sdqos.host.oomevents import oom_line  # noqa: E402

# arch/x86/mm/fault.c show_signal_msg: "comm[pid]: segfault at ... in FILE[base+size] likely on CPU ..."
# (kernel-origin, facility 0): the file is the attacker's to name.
SEGFAULT = ("Killed process [4242]: segfault at 0 ip 000055d0c1a2b139 sp 00007ffd8e1c2a30 error 6 in "
            "Killed process 21372 (cryptominer)[55d0c1a2b000+1000] likely on CPU 1 (core 1, socket 0)")
FORGED = KILLED.replace("(python)", "(cryptominer)")  # the kill line's exact shape, written to /dev/kmsg by userspace
# Real lines of this host's kernel (6.18, cgroup v1, a sandbox's cgroup namespace), as /dev/kmsg gave them.
REAL_OOM = ("oom-kill:constraint=CONSTRAINT_MEMCG,nodemask=(null),cpuset=/,mems_allowed=0,oom_memcg=/process_api/"
            "128adc2fb5e329658b5be2270f1e7037/sdqos-sandbox-sdqos-test-3624/machine.slice,task_memcg=/process_api/"
            "128adc2fb5e329658b5be2270f1e7037/sdqos-sandbox-sdqos-test-3624/machine.slice/"
            "machine-oomvm3624x202980.scope,task=python,pid=8671,uid=0")
REAL_KILLED = ("Memory cgroup out of memory: Killed process 8623 (python) total-vm:217316kB, anon-rss:65280kB, "
               "file-rss:5828kB, shmem-rss:0kB, UID:0 pgtables:188kB oom_score_adj:993")


def test_the_kernels_real_lines_are_recognised_whole():
    assert oom_line(REAL_OOM) == ("oom", {"constraint": "CONSTRAINT_MEMCG", "oom": REAL_OOM.split("oom_memcg=")[1]
                                          .split(",task_memcg=")[0], "task": REAL_OOM.split("task_memcg=")[1]
                                          .split(",task=")[0], "comm": "python", "pid": "8671"})
    assert oom_line(REAL_KILLED) == ("killed", {"pid": "8623", "comm": "python"})
    assert oom_line(OOM_LINE)[0] == "oom" and oom_line(KILLED)[0] == "killed"
    group = f"Tasks in {NS}{SCOPE} are going to be killed due to memory.oom.group set"
    assert oom_line(group) == ("group", {"group": NS + SCOPE})
    # the other messages of __oom_kill_process, and a kernel before UID/pgtables (4.19)
    assert oom_line(REAL_KILLED.replace("Memory cgroup out of memory", "Out of memory"))[0] == "killed"
    assert oom_line(REAL_KILLED.split(", UID:")[0])[0] == "killed"
    # a node-wide OOM of a kernel without cpusets
    assert oom_line(OOM_LINE.replace(",cpuset=/,mems_allowed=0", "").replace(f"oom_memcg={NS}{POD}", "global_oom")
                    )[1]["oom"] is None


def test_a_kernel_line_quoting_a_kill_line_is_no_kill():
    """A segfault in a file named ``Killed process PID (cryptominer)``: the kernel's own line
    (facility 0), quoting user text. After a real OOM kill of that PID it counted as one more
    kill, with the attacker's name."""
    assert oom_line(SEGFAULT) is None
    assert oom_line(f"x {KILLED}") is None and oom_line(f"{KILLED} x") is None and oom_line(f"x {OOM_LINE}") is None
    recs = [(11, 0, OOM_LINE), (12, 0, KILLED), (13, 0, SEGFAULT)]
    assert [(k.pid, k.comm) for k in parse_log(recs, 0.0)] == [(21372, "python")]


def test_a_record_userspace_wrote_to_kmsg_is_no_kill():
    """/dev/kmsg takes lines from userspace (root), with facility LOG_USER (1) or any but the
    kernel's (0): a line of the kill's exact shape there is not the kernel's."""
    log = [(11, 0, OOM_LINE, 0), (12, 0, KILLED, 0), (13, 0, FORGED, 1), (14, 0, FORGED.replace("21372", "9"), 3)]
    records, last = select_records(log, None)
    assert last == 14 and [r[0] for r in records] == [11, 12]
    assert [(k.pid, k.comm) for k in parse_log(records, 0.0)] == [(21372, "python")]


def test_a_comm_that_imitates_the_format_is_kept_whole():
    """The victim's command (its own to set, 15 bytes) may hold ``,task=``, ``) total-vm:`` …:
    the whole line's format decides where it ends."""
    for comm in ("a,task=b", "x) total-vm:1kB", "(", "a,pid=1,uid=0", ""):
        oom = OOM_LINE.replace("task=python", f"task={comm}")
        killed = KILLED.replace("(python)", f"({comm})")
        (k,) = parse_log([(1, 0, oom), (2, 0, killed)], 0.0)
        assert (k.pid, k.comm, k.task_memcg) == (21372, comm, NS + SCOPE)


NOISE = st.sampled_from([SEGFAULT, "audit: type=1400 msg=Killed process 21372 (x)", f"{KILLED} (quoted)",
                         "Killed process 21372 (cryptominer)", f"comm[1]: in {OOM_LINE}"])


@given(EVENTS, st.lists(st.tuples(st.integers(0, 40), NOISE, st.sampled_from([0, 1, 3])), max_size=6))
def test_messages_that_quote_the_kernels_lines_change_nothing(events, noise):
    """Kernel lines that quote user text and userspace's records of the exact shape, anywhere in
    the log: the kills are those of the log without them."""
    clean: list[tuple[int, int, str, int]] = []
    for pid, members, where, _ in events:
        clean += [(0, 0, msg, 0) for msg in _event(pid, members, where)]
    dirty = list(clean)
    for at, msg, facility in noise:
        dirty.insert(min(at, len(dirty)), (0, 0, msg if facility == 0 else FORGED, facility))

    def numbered(log):
        return [(i + 1, i, m, f) for i, (_, _, m, f) in enumerate(log)]

    def kills(log):
        return [(k.pid, k.comm, k.task_memcg) for k in parse_log(select_records(numbered(log), None)[0], 0.0)]
    assert kills(dirty) == kills(clean)


# --- kills the kernel counted and its log never named (its OOM report rate limit) ---------------


def test_a_kill_whose_report_was_rate_limited_stays_unnamed_and_the_next_kill_keeps_its_name():
    """A tenant's OOM loop uses up the kernel's report rate limit: this container's first kill has
    no line (its counter counts it), its second has one. The second line names the second kill,
    not the first (it named the first, and the second was reported as a nameless one)."""
    r1 = account({"seq": 11}, UNITS, {HOG: Counter(5, 1)}, [], 11, 200.0)
    assert [(k.detail["source"], k.detail["pid"]) for k in r1.kills] == [("counter", None)]
    assert r1.record["units"][HOG]["unnamed"] == 1
    r2 = account(r1.record, UNITS, {HOG: Counter(5, 2)}, [log_kill(30, t=290.0, pid=8)], 30, 300.0)
    assert [(k.detail["source"], k.detail["pid"]) for k in r2.kills] == [("kernel log", 8)]
    st = r2.record["units"][HOG]
    assert st["total"] == 2 and st["unnamed"] == 1 and st["last"]["pid"] == 8
    (line,) = lines(r1.kills)
    assert "the kernel killed a process the kernel log did not name" in line and "counted by the kernel" in line


def test_a_late_line_still_names_the_kill_it_belongs_to():
    """The kernel counts a kill just before printing its line: a sync between the two counts it
    nameless, the next one's read finds the line and names it (the counter did not rise since)."""
    r1 = account({"seq": 11}, UNITS, {HOG: Counter(5, 1)}, [], 11, 200.0)
    r2 = account(r1.record, UNITS, {HOG: Counter(5, 1)}, [log_kill(12)], 12, 300.0)
    st = r2.record["units"][HOG]
    assert r2.kills == [] and st["unnamed"] == 0 and st["total"] == 1 and st["last"]["pid"] == 7
    # two counted nameless, then the counter rises by one and two lines come: one late, one new
    r1 = account({"seq": 11}, UNITS, {HOG: Counter(5, 2)}, [], 11, 200.0)
    r2 = account(r1.record, UNITS, {HOG: Counter(5, 3)}, [log_kill(12, pid=7), log_kill(13, pid=8)], 13, 300.0)
    assert [k.detail["pid"] for k in r2.kills] == [8]
    assert r2.record["units"][HOG]["unnamed"] == 1 and r2.record["units"][HOG]["total"] == 3


@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 3)), min_size=1, max_size=10))
def test_every_counted_kill_is_reported_once_named_or_not(steps):
    """Syncs, each after some kills of which some lines the rate limit dropped (the rest printed
    before the read): every kill the counter counted is reported once; those named are named with
    their own line; the nameless ones are counted as such."""
    record: dict = {}
    count = seq = 0
    named_lines: list[int] = []
    reported: list = []
    for t, (kills, dropped) in enumerate(steps):
        dropped = min(dropped, kills)
        new = []
        for i in range(kills):
            count += 1
            if i >= dropped:
                seq += 1
                new.append(log_kill(seq, t=float(t), pid=1000 + count))
                named_lines.append(1000 + count)
        r = account(record, UNITS, {HOG: Counter(5, count)}, new, seq, float(t))
        reported += r.kills
        record = r.record
    assert len(reported) == count
    assert sorted(k.detail["pid"] for k in reported if k.detail["pid"] is not None) == named_lines
    st_ = record["units"].get(HOG, {})
    assert st_.get("unnamed", 0) == count - len(named_lines) == sum(k.detail["pid"] is None for k in reported)
