"""libvirt's record of its running domains, as sync reads it (the shape libvirt 9 writes)."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

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
    assert libvirt.parse_status(STATUS) == libvirt.Domain("db_replica.2", 4242, 2 * 2**30, 2, "/machine/tenant1", 7,
                                                          "5b0a7a5e-3d1c-5f2e-9a57-7364716f7300")
    assert libvirt.parse_status(STATUS.replace("<uuid>5b0a", "<uuid>--5b0a")).uuid is None  # not a UUID: none


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


# --- virsh's command line for a domain (eviction) ---------------------------------------------------
# Checked against virsh itself with libvirt's in-process test driver (test:///default: one domain
# "test", id 1, held in memory; nothing is written and no daemon is asked).

TEST_URI = "test:///default"


def _virsh_test(argv: list[str]) -> subprocess.CompletedProcess:
    assert argv[:4] == ["virsh", "--quiet", "--connect", libvirt.URI]
    return subprocess.run(["virsh", "--quiet", "--connect", TEST_URI, *argv[4:]], capture_output=True, text=True,
                          timeout=20, stdin=subprocess.DEVNULL)


needs_virsh = pytest.mark.skipif(shutil.which("virsh") is None, reason="virsh not installed (libvirt-clients)")


@needs_virsh
@settings(max_examples=60, deadline=None)
@given(st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=40))
@example("--help")
@example("--domain=test")
@example("-- test")
@example("--graceful")
def test_whatever_the_domain_holds_virsh_takes_it_as_the_domain_never_as_an_option(text):
    assume(text.strip() not in ("test", "1", "6695eb01-f6a4-8304-79aa-97f2502e193f") and text == text.strip())
    argv = libvirt.virsh_argv("destroy", text)
    assert argv[-1] == f"--domain={text}" and len(argv) == 6
    cp = _virsh_test(argv)
    assert cp.returncode == 1 and cp.stderr.strip() == f"error: failed to get domain '{text}'", cp.stderr


@needs_virsh
def test_virsh_reads_a_number_as_an_id_before_a_name_so_a_domain_is_stopped_by_its_uuid():
    """The test driver's domain is named "test" with id 1: `--domain=1` finds it, so a domain named
    "1" would be mistaken for the domain with id 1 (checked with real libvirtd too: a domain named
    "1" and `virsh domname --domain 1` gives another domain's name). A UUID is unambiguous."""
    assert _virsh_test(libvirt.virsh_argv("domname", "1")).stdout.strip() == "test"
    uuid = _virsh_test(["virsh", "--quiet", "--connect", libvirt.URI, "domuuid", "--domain=test"]).stdout.strip()
    assert _virsh_test(libvirt.virsh_argv("domname", uuid)).stdout.strip() == "test"
    assert _virsh_test(libvirt.virsh_argv("destroy", uuid)).returncode == 0
