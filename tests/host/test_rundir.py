"""sdqos.host.rundir's record of what the last sync applied (pure file I/O, no systemd)."""

from __future__ import annotations

import json
import os
import stat

import pytest

from sdqos.host import rundir


@pytest.mark.parametrize("applied", [
    {},
    {"kubepods.slice": {"CPUShares": 2048, "MemoryLimit": 1 << 33}},
    {"b.slice": {"TasksMax": 2**64 - 1, "CPUShares": 2}, "a.slice": {}, "é-pod.scope": {"Z": -1, "A": 0}},
], ids=["empty", "one", "unsorted-unicode"])
def test_applied_is_written_as_json_dumps_writes_it(tmp_path, applied):
    rundir.save_applied(applied, tmp_path)
    path = tmp_path / rundir.APPLIED_NAME
    assert path.read_text() == json.dumps(applied, separators=(",", ":"), sort_keys=True)
    assert rundir.load_applied(tmp_path) == applied
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert os.listdir(tmp_path) == [rundir.APPLIED_NAME]  # the temp file was renamed, not left


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
def test_applied_batches_join_into_one_document(tmp_path, monkeypatch, n):
    monkeypatch.setattr(rundir, "APPLIED_BATCH", 2)
    applied = {f"u{i}.slice": {"CPUShares": i} for i in range(n, 0, -1)}
    rundir.save_applied(applied, tmp_path)
    assert (tmp_path / rundir.APPLIED_NAME).read_text() == json.dumps(applied, separators=(",", ":"), sort_keys=True)


def test_applied_of_many_units_round_trips(tmp_path):
    applied = {f"kubepods-pod{i:05d}.slice": {"CPUShares": i + 2, "CPUQuotaPerSecUSec": i * 1000}
               for i in range(5000, 0, -1)}
    rundir.save_applied(applied, tmp_path)
    assert rundir.load_applied(tmp_path) == applied
    assert (tmp_path / rundir.APPLIED_NAME).read_text() == json.dumps(applied, separators=(",", ":"), sort_keys=True)


def test_unreadable_applied_is_empty(tmp_path):
    assert rundir.load_applied(tmp_path) == {}
    (tmp_path / rundir.APPLIED_NAME).write_text('{"a.slice": {"CPUShares": 2')
    assert rundir.load_applied(tmp_path) == {}


@pytest.fixture
def no_hang():
    """Fail (instead of hanging the run) if a read blocks: a FIFO opened for reading waits for a
    writer that never comes."""
    import signal

    def alarm(*_):
        raise AssertionError("a read in the run dir blocked")
    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(10)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


def _plant(kind: str, path, tmp_path):
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "symlink":
        target = tmp_path / "elsewhere.json"
        target.write_text('{"a.slice": {"CPUShares": 2}, "evicted": {"shop/web": {}}, "seq": 1}')
        os.symlink(target, path)
    elif kind == "directory":
        os.mkdir(path)
    elif kind == "huge":
        with open(path, "wb") as fh:
            fh.truncate(rundir.MAX_READ + 1)  # sparse: no disk used


@pytest.mark.parametrize("kind", ["fifo", "symlink", "directory", "huge"])
def test_files_in_the_run_dir_are_read_only_when_regular_bounded_and_not_links(tmp_path, no_hang, kind):
    """applied.json, last-sync.json and parsed.json: a FIFO, a symlink, a directory or an
    oversized file in their place is ignored (as a missing file), and nothing blocks."""
    from sdqos.cli import metrics
    from sdqos.loading import cache

    run = tmp_path / "run"
    run.mkdir(mode=0o755)
    for name in (rundir.APPLIED_NAME, metrics.LAST_SYNC, cache.CACHE_NAME):
        _plant(kind, run / name, tmp_path)
    assert rundir.load_applied(run) == {}
    assert metrics.load_sync_record(run) == {}
    assert cache.ParseCache(run, "t").entries == {}
    for name in (rundir.APPLIED_NAME, metrics.LAST_SYNC, cache.CACHE_NAME):
        assert rundir.read_private(run / name) is None


def test_read_private_reads_a_regular_file_and_checks_owner_and_mode(tmp_path):
    p = tmp_path / "f.json"
    p.write_bytes(b"x" * 100)
    os.chmod(p, 0o600)
    assert rundir.read_private(p) == b"x" * 100
    assert rundir.read_private(p, 99) is None  # over the bound
    assert rundir.read_private(p, ours=True) == b"x" * 100
    os.chmod(p, 0o666)
    assert rundir.read_private(p, ours=True) is None  # writable by others: not trusted
    assert rundir.read_private(tmp_path / "missing") is None


def test_a_failed_atomic_write_leaves_no_temp_file(tmp_path):
    """write_atomic's temp file is removed when writing fails part-way (as on a full /run)."""
    from sdqos.errors import HostError

    def pieces():
        yield "{"
        raise OSError(28, "No space left on device")
    with pytest.raises(HostError, match="No space left on device"):
        rundir.write_atomic(tmp_path / "x.json", pieces())
    assert os.listdir(tmp_path) == []


def _every_run_dir_reader(run):
    """Each reader of a file sdqos keeps in the run dir → what it read (every one of them: a file
    added to the run dir gets its reader listed here)."""
    from sdqos.cli import metrics
    from sdqos.host import cpustate, oomevents
    from sdqos.loading import cache, load
    from sdqos.reconcile import evict, memo, noop

    readers = {
        rundir.APPLIED.name: lambda: rundir.load_applied(run),
        rundir.LAST_SYNC.name: lambda: (metrics.load_sync_record(run), load.last_sync_record(run), noop._last_sync_quiet(run),
                                        rundir.last_sync_part(run, "machines")),
        rundir.PARSE_CACHE.name: lambda: cache.ParseCache(run, "t").entries,
        rundir.OOM_KILLS.name: lambda: oomevents.load_record(run),
        rundir.EVICTED.name: lambda: (evict.load_evicted(run), evict.load_counts(run)),
        rundir.OBSERVED.name: lambda: memo.Memo(run).data,
        rundir.NOOP.name: lambda: noop.load(run),
        rundir.CPU_STATE.name: lambda: cpustate.assignments(run),
    }
    assert set(readers) == {r.name for r in rundir.RECORDS} - {rundir.LOCK.name}  # (the lock: SyncLock's own checks)
    return readers


@pytest.mark.parametrize("kind", ["fifo", "symlink", "directory", "huge"])
def test_every_run_dir_file_is_read_by_the_one_trusted_reader(tmp_path, no_hang, kind):
    """oom-kills.json, evicted.json, observed.json (and the rest): a FIFO
    in their place hung every command that read them, and
    evicted.json was read through a symlink. Each is read as a missing file now, promptly."""
    run = tmp_path / "run"
    run.mkdir(mode=0o755)
    readers = _every_run_dir_reader(run)
    for name in readers:
        _plant(kind, run / name, tmp_path)
    for name, read in readers.items():
        got = read()
        assert not any(got) if isinstance(got, tuple) else not got, (name, got)


def test_run_dir_files_of_ours_are_still_read(tmp_path):
    """The other side: a plain file of ours, 0600, is read by each of those readers."""
    from sdqos.host import oomevents
    from sdqos.reconcile import evict, memo

    run = tmp_path / "run"
    run.mkdir(mode=0o755)
    oomevents.save_record({"seq": 7, "units": {}}, run)
    evict._save(run, {"shop/web": {"why": "x"}}, {"memory.available": {"pods": 1}})
    m = memo.Memo(run)
    m.keep("a", 1, {"v": 2})
    m.save()
    assert oomevents.load_record(run) == {"seq": 7, "units": {}}
    assert evict.load_evicted(run) == {"shop/web": {"why": "x"}}
    assert memo.Memo(run).reuse("a", 1) == {"key": 1, "v": 2}
    os.chmod(rundir.OOM_KILLS.path(run), 0o666)  # writable by others: not trusted
    assert oomevents.load_record(run) == {}
