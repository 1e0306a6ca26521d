"""The fingerprint `sync --settle` compares before and after a sync: it moves with every change a
sync would act on, and only then."""

from __future__ import annotations

import os

from sdqos.host import inputs


def test_fingerprint_moves_with_config_edits_and_vm_state(tmp_path, monkeypatch):
    cfg = tmp_path / "cfg"
    (cfg / "pods").mkdir(parents=True)
    (cfg / "vms").mkdir()
    (cfg / "node.yaml").write_text("capacity: {}\n")
    (cfg / "pods" / "a.yaml").write_text("x: 1\n")
    libvirt, machines = tmp_path / "libvirt", tmp_path / "machines"
    libvirt.mkdir()
    monkeypatch.setattr(inputs, "LIBVIRT_STATE", str(libvirt))
    monkeypatch.setattr(inputs, "MACHINED_STATE", str(machines))  # not there: fine
    first = inputs.fingerprint(cfg)
    assert inputs.fingerprint(cfg) == first  # nothing changed: equal
    st = os.stat(cfg / "pods" / "a.yaml")
    (cfg / "pods" / "a.yaml").write_text("x: 2\n")  # same size, new content
    os.utime(cfg / "pods" / "a.yaml", ns=(st.st_atime_ns, st.st_mtime_ns + 1))
    second = inputs.fingerprint(cfg)
    assert second != first
    (libvirt / "vm.xml").write_text("<domstatus/>")  # a domain started
    third = inputs.fingerprint(cfg)
    assert third != second
    (libvirt / "vm.xml").unlink()
    (cfg / "vms" / "v.yaml").write_text("v: 1\n")
    assert inputs.fingerprint(cfg) not in (first, second, third)
    os.rename(cfg / "node.yaml", cfg / "node.yaml.tmp")
    os.rename(cfg / "node.yaml.tmp", cfg / "node.yaml")  # an editor's save: same file, same name
    assert inputs.fingerprint(cfg) == inputs.fingerprint(cfg)


def test_with_the_run_dir_the_cpu_managers_state_moves_it(tmp_path):
    """A sync that gives a leaving pod's CPUs back writes the state file: --settle's next pass
    plans the wider shared pool (the scopes' AllowedCPUs on cgroup v2) at once."""
    from sdqos.host import rundir

    cfg, run = tmp_path / "cfg", tmp_path / "run"
    cfg.mkdir()
    run.mkdir()
    none = inputs.fingerprint(cfg, run)
    assert inputs.fingerprint(cfg) == none[:-1] and none[-1] == ()  # no file yet
    rundir.CPU_STATE.path(run).write_text('{"policyName":"static","defaultCpuSet":"0","checksum":1}')
    one = inputs.fingerprint(cfg, run)
    assert one != none
    rundir.CPU_STATE.path(run).write_text('{"policyName":"static","defaultCpuSet":"0-1","checksum":2}')
    assert inputs.fingerprint(cfg, run) != one
    assert inputs.fingerprint(cfg, run) == inputs.fingerprint(cfg, run)
