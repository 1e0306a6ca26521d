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
    found = libvirt.running_domains(tmp_path, warnings)
    assert list(found) == ["db_replica.2"]
    assert warnings == [f"{tmp_path}/other.xml is not libvirt's (owner or mode): ignored"]
    assert libvirt.running_domains(tmp_path / "missing") == {}
