"""libvirt's record of its running domains, as sync reads it (the shape libvirt 9 writes)."""

from __future__ import annotations

import os

from sdqos.host import libvirt

STATUS = """<domstatus state='running' reason='booted' pid='4242'>
  <taint flag='high-privileges'/>
  <monitor path='/var/lib/libvirt/qemu/domain-7-db_replica.2/monitor.sock' type='unix'/>
  <domain type='qemu' id='7'>
    <name>db_replica.2</name>
    <uuid>5b0a7a5e-3d1c-5f2e-9a57-7364716f7300</uuid>
    <memory unit='KiB'>2097152</memory>
    <currentMemory unit='KiB'>2097152</currentMemory>
    <vcpu placement='static'>2</vcpu>
    <resource>
      <partition>/machine/tenant1</partition>
    </resource>
  </domain>
</domstatus>
"""


def test_a_status_file_gives_name_pid_ram_vcpus_and_partition():
    assert libvirt.parse_status(STATUS) == libvirt.Domain("db_replica.2", 4242, 2 * 2**30, 2, "/machine/tenant1", 7)


def test_what_is_not_a_running_domains_status_is_ignored():
    assert libvirt.parse_status("<domain><name>x</name></domain>") is None  # a definition, not a status
    assert libvirt.parse_status(STATUS.replace("pid='4242'", "")) is None
    assert libvirt.parse_status("not xml <") is None
    assert libvirt.parse_status(STATUS.replace("<name>db_replica.2</name>", "<name> </name>")) is None


def test_only_roots_files_are_trusted(tmp_path):
    (tmp_path / "db_replica.2.xml").write_text(STATUS)
    (tmp_path / "other.xml").write_text(STATUS.replace("db_replica.2", "other").replace("4242", "1"))
    os.chmod(tmp_path / "other.xml", 0o666)  # writable by anyone: it could point sdqos at any process
    (tmp_path / "db_replica.2.pid").write_text("4242")
    warnings: list[str] = []
    found = libvirt.running_domains(tmp_path, warnings, proc=fake_proc(tmp_path, {4242: "db_replica.2", 1: "other"}))
    assert list(found) == ["db_replica.2"]
    assert warnings == [f"{tmp_path}/other.xml is not libvirt's (owner or mode): ignored"]
    assert libvirt.running_domains(tmp_path / "missing") == {}


def fake_proc(tmp_path, guests: dict[int, str | None], started: float = 100.0):
    """A /proc with processes ``pid`` → QEMU of guest ``name`` (None: not a QEMU), started
    ``started`` seconds after boot (boot at 1000 s past the epoch)."""
    import os as _os

    proc = tmp_path / "proc"
    proc.mkdir(exist_ok=True)
    (proc / "stat").write_text("cpu  1 2 3\nbtime 1000\n")
    ticks = int(started * _os.sysconf("SC_CLK_TCK"))
    for pid, name in guests.items():
        (proc / str(pid)).mkdir(exist_ok=True)
        argv = ["/usr/bin/qemu-system-x86_64", "-name", f"guest={name.replace(',', ',,')},debug-threads=on"] \
            if name is not None else ["sleep", "100000"]
        (proc / str(pid) / "cmdline").write_bytes(b"\0".join(a.encode() for a in argv) + b"\0")
        fields = ["S"] + ["0"] * 18 + [str(ticks)] + ["0"] * 10
        (proc / str(pid) / "stat").write_text(f"{pid} (qemu-system-x86) " + " ".join(fields) + "\n")
    return proc


def test_a_record_counts_only_while_its_pid_is_that_domains_qemu(tmp_path):
    """libvirtd down while the guest ended, the PID reused: the record is ignored, with a warning."""
    d = tmp_path / "qemu"
    d.mkdir()
    for name, pid in (("a,b", 11), ("reused", 12), ("other", 13), ("gone", 14), ("late", 15)):
        (d / f"{name}.xml").write_text(STATUS.replace("db_replica.2", name.replace(",", "&#44;")).replace("4242", str(pid)))
        os.utime(d / f"{name}.xml", (1200, 1200))
    proc = fake_proc(tmp_path, {11: "a,b", 12: None, 13: "someone-else"})
    fake_proc(tmp_path, {15: "late"}, started=300.0)  # started 1300 s: after the record was written
    warnings: list[str] = []
    assert list(libvirt.running_domains(d, warnings, proc=proc)) == ["a,b"]
    why = {w.split(" names PID ")[0].rsplit("/", 1)[1]: w.split(", but ")[1].split(" (libvirtd")[0] for w in warnings}
    assert why == {"reused.xml": "that process is not its QEMU", "other.xml":
                   "that process is not its QEMU (it runs guest 'someone-else')", "gone.xml": "no such process",
                   "late.xml": "that process started after the record was written"}


def test_guest_name_as_qemu_reads_it():
    assert libvirt.guest_name(["qemu", "-name", "guest=x,,y,debug-threads=on"]) == "x,y"
    assert libvirt.guest_name(["qemu", "-name", "plain,process=p"]) == "plain"
    assert libvirt.guest_name(["qemu", "-machine", "pc"]) is None
