"""sdqos.cli.codecache: dataclasses' generated methods compiled once per boot — the same code as
compiling them, reused by the next process, and never taken from a file someone else could write."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from sdqos.cli import codecache

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def fresh(monkeypatch):
    """The cache's state as in a new process, and dataclasses as it was after the test."""
    monkeypatch.setattr(codecache, "_cached", {})
    monkeypatch.setattr(codecache, "_known", set())
    monkeypatch.setattr(codecache, "_fresh", {})
    monkeypatch.setattr(codecache, "_counts", {"cached": 0, "compiled": 0, "new": 0})
    had = "exec" in vars(dataclasses)
    yield
    if not had:
        vars(dataclasses).pop("exec", None)


def _classes():
    """A few dataclasses of the shapes sdqos uses (frozen, slots, defaults, factories, order)."""
    @dataclasses.dataclass(frozen=True, slots=True)
    class A:
        name: str
        n: int = 0
        tags: tuple[str, ...] = ()

    @dataclasses.dataclass
    class B:
        items: list[int] = dataclasses.field(default_factory=list)
        extra: dict[str, int] = dataclasses.field(default_factory=dict, repr=False)

    @dataclasses.dataclass(order=True, slots=True)
    class C:
        key: tuple[int, str]
        value: float = 1.5

    return A, B, C


def _codes(classes) -> list:
    out = []
    for cls in classes:
        for name in ("__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__", "__lt__", "__le__",
                     "__gt__", "__ge__"):
            fn = vars(cls).get(name)
            code = getattr(getattr(fn, "__wrapped__", fn), "__code__", None)
            if code is not None:
                out.append((cls.__name__, name, code))
    return out


def test_the_cached_methods_are_the_compiled_ones(fresh, tmp_path, monkeypatch):
    plain = _codes(_classes())
    codecache.install(tmp_path)
    first = _codes(_classes())  # compiled, and kept for the file
    made = codecache.stats()
    assert made["cached"] == 0 and made["compiled"] == made["new"] == len(first)  # (every method, each compiled once)
    codecache.save(tmp_path)
    monkeypatch.setattr(codecache, "_cached", {})
    monkeypatch.setattr(codecache, "_known", set())
    monkeypatch.setattr(codecache, "_counts", {"cached": 0, "compiled": 0, "new": 0})
    codecache.install(tmp_path)  # as the next process does
    again = _codes(_classes())
    assert codecache.stats() == {"cached": made["new"], "compiled": 0, "new": 0}
    assert plain == first == again  # code objects compare by their bytecode, constants, names, flags…
    a, b, c = _classes()
    assert a("x", 2) == a("x", 2) and hash(a("x", 2)) == hash(a("x", 2)) and repr(a("x")).startswith("_classes.<locals>.A(name='x'")
    with pytest.raises(dataclasses.FrozenInstanceError):
        a("x").n = 3  # type: ignore[misc]
    assert b().items == [] and b().items is not b().items and c((1, "a")) < c((2, "a"))


def _child(run_dir: Path) -> dict:
    """A new interpreter that imports the modules a sync imports, through the cache of ``run_dir``."""
    code = textwrap.dedent(f"""
        import json, pathlib
        from sdqos.cli import codecache
        codecache.install(pathlib.Path({str(run_dir)!r}))
        import sdqos.reconcile.sync, sdqos.loading.load
        codecache.save(pathlib.Path({str(run_dir)!r}))
        print(json.dumps(codecache.stats()))
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    return json.loads(r.stdout)


def test_the_next_process_compiles_nothing(tmp_path):
    tmp_path.chmod(0o700)
    first = _child(tmp_path)
    assert first["new"] > 100 and first["cached"] == 0
    cache = tmp_path / codecache.NAME
    assert cache.stat().st_mode & 0o777 == 0o600
    written = cache.stat().st_mtime_ns
    second = _child(tmp_path)
    assert second == {"cached": first["new"], "compiled": first["compiled"] - first["new"], "new": 0}
    assert cache.stat().st_mtime_ns == written  # (nothing new: not written again)


@pytest.mark.parametrize("spoil", ["group-writable file", "world-writable dir", "garbage", "other magic", "truncated", "symlink"])
def test_a_cache_that_cannot_be_trusted_is_not_used(tmp_path, spoil):
    tmp_path.chmod(0o700)
    _child(tmp_path)
    cache = tmp_path / codecache.NAME
    if spoil == "group-writable file":
        cache.chmod(0o620)
    elif spoil == "world-writable dir":
        tmp_path.chmod(0o777)
    elif spoil == "garbage":
        cache.write_bytes(b"\x00not marshal")
    elif spoil == "other magic":
        cache.write_bytes(b"\x00\x00\r\n" + cache.read_bytes()[4:])
    elif spoil == "truncated":
        cache.write_bytes(cache.read_bytes()[:-100])
    else:
        real = tmp_path / "elsewhere"
        cache.rename(real)
        os.symlink(real, cache)
    again = _child(tmp_path)  # (works, compiling as without a cache)
    assert again["cached"] == 0 and again["new"] > 100


def test_a_run_dir_it_cannot_write_is_no_fault(tmp_path, fresh):
    codecache.install(tmp_path / "missing")
    _classes()
    codecache.save(tmp_path / "missing")  # (no error, nothing written)
    assert not (tmp_path / "missing").exists()
