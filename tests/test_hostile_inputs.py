"""Bad input never costs a running workload its QoS.

Every case runs `sdqos sync` in a sandbox that already holds a synced good config (node, 5 pods;
tests/hostile_helpers.py). In the same run the operator also adds a valid pod (pods/zz-fresh.yaml)
and deletes pods/db.yaml, then one bad input is planted. Each case checks

(a) stderr: exactly the expected error line(s), naming file, document and field — nothing else
    (no traceback, no library noise); `sdqos plan` reports the same lines;
(b) the exit code: 2 for invalid input;
(c) the units, by systemd's own account (state, owned properties, InvocationID), against what the
    README promises for that kind of input:

    POD    one pod's manifest is invalid but its identity is known: its units stay as they are,
           the valid new pod IS created, the removed pod IS removed, node and tier units stay.
    FILE   a file whose pods cannot be known (unreadable, unparsable, no identity): as POD but
           nothing is removed ("when any file cannot be read, nothing is removed").
    EITHER as FILE, except that removing db (which the config does ask for) is accepted too.
    VM     an invalid VM (pods/db.yaml is not deleted here): new pod created, nothing else moves.
    NODE   node.yaml is invalid: nothing can be computed (kubelet refuses to start): no change.
    DIR    the config directory (or pods/) is unusable: no change at all.

Security cases (StrictModes-like permission checks, symlinks out of the config dir, `sdqos run`
argv, /run/sdqos) are at the end.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from sdqos import sandbox as sbx

from .hostile_helpers import (
    API_SLICE,
    DB_SLICE,
    FRESH,
    FRESH_SLICE,
    MORE,
    NODE,
    WEB,
    WEB_SLICE,
    WEB_UID,
    active,
    assert_errors,
    diff_snapshots,
    error_lines,
    plan_in_process,
    private_sandbox,
    show_many,
    snapshot,
    stderr_lines,
    sync,
    wait_for,
    write_base,
)
from .sbhelpers import sdqos_in

POD, FILE, EITHER, VM, NODE_SCOPE, DIR = "pod", "file", "either", "vm", "node", "dir"


# --- the sandbox and the good config every case starts from ---------------------------------------


@pytest.fixture(scope="module")
def hsb(sandbox, sandbox_name):
    """A sandbox of this module's own (see hostile_helpers)."""
    with private_sandbox(f"{sandbox_name}-hostile") as sb:
        yield sb


@pytest.fixture(scope="module")
def base(hsb, tmp_path_factory):
    cfg = write_base(tmp_path_factory.mktemp("hostile") / "base")
    rc, report, err = sync(hsb, cfg)
    assert rc == 0, err
    assert len(report["created"]) == 8
    return cfg


class World:
    def __init__(self, sb, cfg: Path, base: Path):
        self.sb, self.cfg, self.base = sb, cfg, base
        self.dirty = True  # set False by a test that proved nothing changed


@pytest.fixture
def world(hsb, base, tmp_path):
    cfg = tmp_path / "cfg"
    shutil.copytree(base, cfg)
    w = World(hsb, cfg, base)
    yield w
    if w.dirty:  # put the good config back for the next case
        rc, _, err = sync(hsb, base)
        assert rc == 0, f"restoring the good config failed: {err}"


# --- the cases -----------------------------------------------------------------------------------

Mutate = Callable[[Path], None]


@dataclass
class Case:
    id: str
    scope: str
    mutate: Mutate
    errors: list[str]  # regexes, each matching one whole error line after "sdqos: error: "
    args: tuple[str, ...] = ()
    plan_same: bool = True  # `sdqos plan` prints the same error lines (sync-only errors: False)
    delete_db: bool = True
    add_fresh: bool = True
    notes: dict = field(default_factory=dict)


def L(where: str, fld: str | None, msg: str) -> str:
    """An error line: literal file[doc] and field, then a message regex."""
    return re.escape(where) + ": " + (re.escape(fld) + ": " if fld else "") + msg


def sub(text: str, old: str, new: str) -> str:
    assert text.count(old) >= 1, f"{old!r} not in the template"
    return text.replace(old, new, 1)


def web(transform: Callable[[str], str]) -> Mutate:
    def m(cfg: Path) -> None:
        (cfg / "pods" / "web.yaml").write_text(transform(WEB))
    return m


def web_sub(old: str, new: str) -> Mutate:
    return web(lambda t: sub(t, old, new))


def write(rel: str, text: str | bytes) -> Mutate:
    def m(cfg: Path) -> None:
        p = cfg / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(text) if isinstance(text, bytes) else p.write_text(text)
    return m


def replace_web(make: Callable[[Path, Path], None]) -> Mutate:
    """Remove pods/web.yaml and put something else at its name: make(path, cfg)."""
    def m(cfg: Path) -> None:
        p = cfg / "pods" / "web.yaml"
        p.unlink()
        make(p, cfg)
    return m


NGINX_REQ = "requests: {cpu: 250m, memory: 128Mi}"
R = "spec.containers[0].resources.requests"
W0 = "pods/web.yaml[0]"


def cpu(value: str) -> Mutate:
    return web_sub(NGINX_REQ, f"requests: {{cpu: {value}, memory: 128Mi}}")


def mem(value: str) -> Mutate:
    return web_sub(NGINX_REQ, f"requests: {{cpu: 250m, memory: {value}}}")


def meta(line: str) -> Mutate:
    """Add a metadata line (uid, annotations...) to web."""
    return web_sub("  namespace: shop\n", f"  namespace: shop\n  {line}\n")


def name(value: str) -> Mutate:
    return web_sub("  name: web\n", f"  name: {value}\n")


def container(value: str) -> Mutate:
    return web_sub("  - name: nginx\n", f"  - name: {value}\n")


LONG = "a" * 300
LONG_SHOWN = r'"a+(\.\.\.)?"'  # long values may be shown shortened


def alias_bomb() -> str:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, 10):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]")
    return "\n".join(lines) + "\n"


def deep_nesting() -> str:
    return "apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: shop}\nspec: " + "[" * 50_000 + "]" * 50_000 + "\n"


def ten_megabytes() -> str:
    return WEB + ("# padding padding padding padding padding padding padding padding padding padding\n" * 131_072)


def more_as_list_with_bad_item(cfg: Path) -> None:
    import yaml

    items = list(yaml.safe_load_all(MORE))
    items[0]["metadata"]["name"] = "API!"
    (cfg / "pods" / "more.yaml").write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items}))


def outside_symlink(target_rel: str, text: str) -> Callable[[Path, Path], None]:
    def make(p: Path, cfg: Path) -> None:
        out = cfg.parent / "outside"
        out.mkdir(exist_ok=True)
        (out / target_rel).write_text(text)
        os.symlink(out / target_rel, p)
    return make


def node_sub(old: str, new: str) -> Mutate:
    return write("node.yaml", sub(NODE, old, new))


def node_symlink_out(cfg: Path) -> None:
    (cfg / "node.yaml").unlink()
    outside_symlink("node.yaml", NODE)(cfg / "node.yaml", cfg)


def vm(name_yaml: str, extra: str = "", api: str = "sdqos.io/v1alpha1") -> Mutate:
    return write("vms/bad.yaml", f"""\
apiVersion: {api}
kind: VirtualMachine
metadata: {{name: {name_yaml}}}
spec:
  resources:
    requests: {{cpu: 500m}}
    limits: {{cpu: "1"{extra}}}
""")


def vm_ok(name_yaml: str, api: str = "sdqos.io/v1alpha1") -> Mutate:
    return vm(name_yaml, ", memory: 64Mi", api)


def chmod(rel: str, mode: int) -> Mutate:
    def m(cfg: Path) -> None:
        os.chmod(cfg / rel if rel else cfg, mode)
    return m


def chown_nobody(rel: str) -> Mutate:
    def m(cfg: Path) -> None:
        os.chown(cfg / rel, 65534, 65534)
    return m


def remove_config_dir(cfg: Path) -> None:
    shutil.rmtree(cfg)


def empty_config_dir(cfg: Path) -> None:
    for p in cfg.iterdir():
        shutil.rmtree(p) if p.is_dir() else p.unlink()


def pods_not_a_dir(cfg: Path) -> None:
    shutil.rmtree(cfg / "pods")
    (cfg / "pods").write_text("not a directory\n")


def pods_symlink_loop(cfg: Path) -> None:
    shutil.rmtree(cfg / "pods")
    os.symlink("pods", cfg / "pods")


def config_dir_symlink_loop(cfg: Path) -> None:
    shutil.rmtree(cfg)
    os.symlink(cfg.name, cfg)


def config_dir_is_a_file(cfg: Path) -> None:
    shutil.rmtree(cfg)
    cfg.write_text(WEB)


DNS_SUB = r" is not a valid DNS-1123 subdomain.*"
DNS_LABEL = r" is not a valid DNS-1123 label.*"

CASES = [
    # -- quantities (one container's request) --------------------------------------------------
    Case("quantity-empty", POD, cpu('""'), [L(W0, f"{R}.cpu", r'"" is not a quantity.*')]),
    Case("quantity-12x", POD, cpu('"12x"'), [L(W0, f"{R}.cpu", r'"12x" is not a quantity.*')]),
    Case("quantity-1.1.1", POD, cpu('"1.1.1"'), [L(W0, f"{R}.cpu", r'"1\.1\.1" is not a quantity.*')]),
    Case("quantity-negative", POD, cpu('"-1"'), [L(W0, f"{R}.cpu", r'"-1" must be greater than or equal to 0')]),
    Case("quantity-1e400", POD, cpu('"1e400"'), [L(W0, f"{R}.cpu", r'"1e400" (is too large|is not a quantity).*')]),
    Case("quantity-0.1mi", POD, mem('"0.1mi"'), [L(W0, f"{R}.memory", r'"0\.1mi" is not a quantity.*')]),
    Case("quantity-leading-space", POD, cpu('" 1"'), [L(W0, f"{R}.cpu", r'" 1" is not a quantity.*')]),
    Case("quantity-memory-beyond-int64", POD, mem('"9223372036854775808"'),
         [L(W0, f"{R}.memory", r'"9223372036854775808" is too large.*')]),
    Case("quantity-cpu-beyond-int64", POD, cpu('"9223372036854775808"'),
         [L(W0, f"{R}.cpu", r'"9223372036854775808" is too large.*')]),
    Case("quantity-fractional-bytes-100m", POD, mem("100m"),
         [L(W0, f"{R}.memory", r'"100m" is a fractional number of bytes \(did you mean Mi\?\)')]),
    Case("quantity-fractional-bytes-1.5", POD, mem('"1.5"'), [L(W0, f"{R}.memory", r'"1\.5" is a fractional number of bytes')]),
    Case("quantity-a-list", POD, cpu("[1, 2]"), [L(W0, f"{R}.cpu", r".* is not a quantity.*")]),
    # -- pod semantics --------------------------------------------------------------------------
    Case("request-above-limit", POD, cpu('"2"'),
         [L(W0, f"{R}.cpu", r'"2" must be less than or equal to cpu limit of "500m"')]),
    Case("duplicate-container-name", POD, container("migrate"),
         [L(W0, "spec.containers[0].name", r'Duplicate value: "migrate".*')]),
    Case("unknown-field-typo", POD, web_sub("  - name: nginx\n    resources:", "  - name: nginx\n    resource:"),
         [L(W0, "spec.containers[0].resource", r'unknown field \(did you mean "resources"\?\)')]),
    Case("sidecar-restart-policy", POD, web_sub("restartPolicy: Always", "restartPolicy: Sometimes"),
         [L(W0, "spec.initContainers[1].restartPolicy", r'Unsupported value: "Sometimes".*')]),
    Case("priority-not-integer", POD, web_sub("spec:\n", "spec:\n  priority: high\n"),
         [L(W0, "spec.priority", r"must be an integer.*")]),
    # A number in a string field is refused, as kubectl refuses it (YAML to JSON, then a typed decode).
    Case("annotation-not-string", POD, meta("annotations: {sdqos.io/scopes: 5}"),
         [L(W0, "metadata.annotations.sdqos.io/scopes", r"must be a string.*")]),
    Case("annotation-a-list", POD, meta("annotations: {sdqos.io/scopes: [a]}"),
         [L(W0, "metadata.annotations.sdqos.io/scopes", r"must be a string.*")]),
    Case("scopes-annotation-malformed", POD, meta("annotations: {sdqos.io/scopes: 'nginx=/etc/passwd'}"),
         [L(W0, "metadata.annotations.sdqos.io/scopes", r".*\.scope.*")]),
    # -- identities that try to escape their unit name ---------------------------------------------
    Case("uid-dotdot", POD, meta("uid: ../x"), [L(W0, "metadata.uid", r'"\.\./x" .*')]),
    Case("uid-escaped-dash", POD, meta(r"uid: 'x\x2d'"), [L(W0, "metadata.uid", r'"x\\x2d" .*')]),
    Case("uid-300-chars", POD, meta(f"uid: {LONG}"), [L(W0, "metadata.uid", LONG_SHOWN + " .*")]),
    Case("uid-unicode", POD, meta("uid: üid-1"), [L(W0, "metadata.uid", r'"üid-1" .*')]),
    Case("container-dotdot", POD, container('"../x"'), [L(W0, "spec.containers[0].name", r'"\.\./x"' + DNS_LABEL)]),
    Case("container-escaped-dash", POD, container(r"'x\x2d'"), [L(W0, "spec.containers[0].name", r'"x\\x2d"' + DNS_LABEL)]),
    Case("container-300-chars", POD, container(LONG),
         [L(W0, "spec.containers[0].name", LONG_SHOWN + " must be no more than 63 characters")]),
    Case("container-unicode", POD, container("ngïnx"), [L(W0, "spec.containers[0].name", r'"ngïnx"' + DNS_LABEL)]),
    Case("namespace-not-dns1123", EITHER, web_sub("namespace: shop", 'namespace: "Shop!"'),
         [L(W0, "metadata.namespace", r'"Shop!"' + DNS_LABEL)]),
    Case("name-not-dns1123", FILE, name("Web_Server"), [L(W0, "metadata.name", r'"Web_Server"' + DNS_SUB)]),
    Case("name-dotdot", FILE, name('"../x"'), [L(W0, "metadata.name", r'"\.\./x"' + DNS_SUB)]),
    Case("name-escaped-dash", FILE, name(r"'x\x2d'"), [L(W0, "metadata.name", r'"x\\x2d"' + DNS_SUB)]),
    Case("name-300-chars", FILE, name(LONG), [L(W0, "metadata.name", LONG_SHOWN + " must be no more than 253 characters")]),
    Case("name-unicode", FILE, name("wéb"), [L(W0, "metadata.name", r'"wéb"' + DNS_SUB)]),
    # -- documents that are not pods ----------------------------------------------------------------
    Case("missing-metadata-name", FILE, web_sub("  name: web\n", ""), [L(W0, "metadata.name", "Required value")]),
    Case("wrong-kind", FILE, web_sub("kind: Pod", "kind: Deployment"), [L(W0, "kind", r'must be "Pod", not "Deployment" \(sdqos reads Pods: .*\)')]),
    Case("wrong-apiversion", FILE, web_sub("apiVersion: v1", "apiVersion: apps/v1"),
         [L(W0, "apiVersion", r'must be "v1" for a Pod, not "apps/v1"')]),
    Case("document-is-a-list", FILE, write("pods/web.yaml", "- web\n- shop\n"), [L(W0, None, r"must be a mapping.*")]),
    Case("document-is-a-string", FILE, write("pods/web.yaml", "just some text\n"), [L(W0, None, r"must be a mapping.*")]),
    Case("yaml-syntax-error", FILE, web_sub("  namespace: shop\n", "  namespace: [shop\n"),
         [L("pods/web.yaml", None, r"line \d+ column \d+: .+")]),
    Case("yaml-duplicate-key", FILE, web_sub("  name: web\n", "  name: web\n  name: web2\n"),
         [L("pods/web.yaml", None, r"line \d+ column \d+: .*name.*")]),
    Case("yaml-python-object-tag", FILE, web_sub("  name: web\n", "  name: !!python/object/apply:os.system [true]\n"),
         [L("pods/web.yaml", None, r"line \d+ column \d+: .*tag.*")]),
    Case("list-item-bad-name", FILE, more_as_list_with_bad_item,
         [L("pods/more.yaml[0]", "items[0].metadata.name", r'"API!"' + DNS_SUB)]),
    # -- files that must not be read as they are ------------------------------------------------------
    Case("file-10-megabytes", FILE, write("pods/web.yaml", ten_megabytes()),
         [L("pods/web.yaml", None, r"is [\d.]+ MiB, over the \d+ MiB limit")]),
    Case("yaml-alias-bomb", FILE, write("pods/web.yaml", alias_bomb()), [L("pods/web.yaml", None, r".*alias bomb.*")]),
    Case("yaml-deep-nesting", FILE, write("pods/web.yaml", deep_nesting()),
         [L("pods/web.yaml", None, r"(line \d+ column \d+: )?nesting deeper than \d+ levels")]),
    Case("non-utf8-bytes", FILE, write("pods/web.yaml", WEB.encode().replace(b"name: nginx", b"name: ngi\xffnx")),
         [L("pods/web.yaml", None, r"is not UTF-8 text \(byte 0xff at offset \d+\)")]),
    Case("symlink-loop", FILE, replace_web(lambda p, cfg: os.symlink("web.yaml", p)), [L("pods/web.yaml", None, "symlink loop")]),
    Case("fifo", FILE, replace_web(lambda p, cfg: os.mkfifo(p)), [L("pods/web.yaml", None, "is not a regular file")]),
    Case("directory-named-yaml", FILE, replace_web(lambda p, cfg: p.mkdir()), [L("pods/web.yaml", None, "is not a regular file")]),
    Case("dangling-symlink", FILE, replace_web(lambda p, cfg: os.symlink("gone.yaml", p)),
         [L("pods/web.yaml", None, r"cannot resolve: No such file or directory")]),
    Case("symlink-out-of-config-dir", FILE, replace_web(outside_symlink("web.yaml", WEB)),
         [L("pods/web.yaml", None, r"is a symlink to .*/outside/web\.yaml, outside the config directory; refused")]),
    # -- two files, one identity ----------------------------------------------------------------------
    Case("same-namespace-name-in-two-files", POD,
         write("pods/aa-copy.yaml", sub(WEB, "limits: {cpu: 500m, memory: 256Mi}", "limits: {cpu: 700m, memory: 300Mi}")),
         [L("pods/aa-copy.yaml[0]", "metadata.name",
            r'Duplicate namespace/name "shop/web" \(defined in pods/aa-copy\.yaml\[0\], pods/web\.yaml\[0\]\)'),
          L(W0, "metadata.name",
            r'Duplicate namespace/name "shop/web" \(defined in pods/aa-copy\.yaml\[0\], pods/web\.yaml\[0\]\)')]),
    Case("duplicate-uid-across-files", POD,
         write("pods/aa-dup.yaml", sub(sub(WEB, "  name: web\n", "  name: other\n"), "  namespace: shop\n",
                                       f"  namespace: shop\n  uid: {WEB_UID}\n")),
         [L("pods/aa-dup.yaml[0]", "metadata.uid",
            re.escape(f'Duplicate uid "{WEB_UID}" (defined in pods/aa-dup.yaml[0], pods/web.yaml[0])')),
          L(W0, "metadata.uid", re.escape(f'Duplicate uid "{WEB_UID}" (defined in pods/aa-dup.yaml[0], pods/web.yaml[0])'))]),
    # -- VMs -------------------------------------------------------------------------------------------
    Case("vm-name-dotdot", VM, vm_ok('"../x"'), [L("vms/bad.yaml[0]", "metadata.name", r'"\.\./x"' + DNS_SUB)], delete_db=False),
    Case("vm-name-escaped-dash", VM, vm_ok(r"'x\x2d'"), [L("vms/bad.yaml[0]", "metadata.name", r'"x\\x2d"' + DNS_SUB)],
         delete_db=False),
    Case("vm-name-300-chars", VM, vm_ok(LONG),
         [L("vms/bad.yaml[0]", "metadata.name", LONG_SHOWN + " must be no more than 253 characters")], delete_db=False),
    Case("vm-name-unicode", VM, vm_ok("vm-ü"), [L("vms/bad.yaml[0]", "metadata.name", r'"vm-ü"' + DNS_SUB)], delete_db=False),
    Case("vm-wrong-apiversion", VM, vm_ok("vm1", api="v1"),
         [L("vms/bad.yaml[0]", "apiVersion", r'must be "sdqos\.io/v1alpha1", not "v1"')], delete_db=False),
    Case("vm-without-memory", VM, vm("vm1"),
         [L("vms/bad.yaml[0]", "spec.resources.limits.memory", r"Required value: the guest's RAM")], delete_db=False),
    # -- node.yaml ---------------------------------------------------------------------------------------
    Case("reserved-above-capacity", NODE_SCOPE, node_sub("  memory: 1Gi\n  pid", "  memory: 15Gi\n  pid"),
         [L("node.yaml", "kubeReserved/systemReserved.memory",
            r'Resource "memory" has a reservation of .* but capacity of 16 GiB\. Expected capacity >= reservation.*')]),
    Case("reserved-negative", NODE_SCOPE, node_sub("systemReserved:\n  cpu: 500m", "systemReserved:\n  cpu: -500m"),
         [L("node.yaml", "systemReserved.cpu", r'"-500m" must not be negative')]),
    Case("qosreserved-150-percent", NODE_SCOPE, node_sub("memory: 50%", 'memory: "150%"'),
         [L("node.yaml", "qosReserved.memory", r'"150%": percentage must be between 0 and 100')]),
    Case("qosreserved-abc", NODE_SCOPE, node_sub("memory: 50%", "memory: abc"),
         [L("node.yaml", "qosReserved.memory", r'percentage expected, got "abc"')]),
    Case("cfs-period-below-1ms", NODE_SCOPE, node_sub("cpuCFSQuotaPeriod: 100ms", "cpuCFSQuotaPeriod: 500us"),
         [L("node.yaml", "cpuCFSQuotaPeriod", r'"500us" must be between 1ms and 1s, inclusive')]),
    Case("cfs-period-above-1s", NODE_SCOPE, node_sub("cpuCFSQuotaPeriod: 100ms", "cpuCFSQuotaPeriod: 1001ms"),
         [L("node.yaml", "cpuCFSQuotaPeriod", r'"1001ms" must be between 1ms and 1s, inclusive')]),
    Case("node-not-a-mapping", NODE_SCOPE, write("node.yaml", "- pods\n"), [L("node.yaml", None, r"must be a mapping.*")]),
    Case("node-yaml-syntax-error", NODE_SCOPE, node_sub("  cpu: 500m\n  memory: 1Gi\n  pid", "  cpu: [500m\n  memory: 1Gi\n  pid"),
         [L("node.yaml", None, r"line \d+ column \d+: .+")]),
    Case("node-wrong-kind", NODE_SCOPE, node_sub("kind: KubeletConfiguration", "kind: Pod"),
         [L("node.yaml", "kind", r'must be "KubeletConfiguration", not "Pod"')]),
    Case("cgroup-root-escape", NODE_SCOPE, write("node.yaml", NODE + "cgroupRoot: /../etc\n"),
         [L("node.yaml", "cgroupRoot", r".*\.\..*")]),
    Case("node-symlink-out-of-config-dir", NODE_SCOPE, node_symlink_out,
         [L("node.yaml", None, r"is a symlink to .*/outside/node\.yaml, outside the config directory; refused")]),
    # -- the directory itself ----------------------------------------------------------------------------
    Case("config-dir-missing", DIR, remove_config_dir, [r"config directory .*/cfg does not exist"]),
    Case("config-dir-empty", DIR, empty_config_dir,
         [re.escape("the config has no pods but 5 pod slice(s) exist; refusing to remove them all"
                    " (pass --allow-empty to really do that)")], plan_same=False),
    Case("pods-not-a-directory", DIR, pods_not_a_dir, [L("pods", None, "is not a directory")]),
    Case("pods-symlink-loop", DIR, pods_symlink_loop, [L("pods", None, r".*Too many levels of symbolic links.*")]),
    Case("config-dir-symlink-loop", DIR, config_dir_symlink_loop, [r".*/cfg.*Too many levels of symbolic links.*"]),
    Case("config-dir-is-a-file", DIR, config_dir_is_a_file, [r".*/cfg is not a directory"]),
    # -- security: StrictModes and symlinks --------------------------------------------------------------
    Case("config-dir-world-writable", DIR, chmod("", 0o777),
         [r".*/cfg: config directory is writable by group or others \(mode 0777\).*--insecure"]),
    Case("pods-dir-group-writable", DIR, chmod("pods", 0o775),
         [L("pods", None, r"directory is writable by group or others \(mode 0775\).*--insecure")]),
    Case("pod-file-world-writable", FILE, chmod("pods/web.yaml", 0o666),
         [L("pods/web.yaml", None, r"file is writable by group or others \(mode 0666\).*--insecure")]),
    Case("pod-file-owned-by-nobody", FILE, chown_nobody("pods/web.yaml"),
         [L("pods/web.yaml", None, r"file is owned by uid 65534, not root.*--insecure")]),
    Case("node-file-world-writable", NODE_SCOPE, chmod("node.yaml", 0o666),
         [L("node.yaml", None, r"file is writable by group or others \(mode 0666\).*--insecure")]),
    Case("symlink-out-refused-even-insecure", FILE, replace_web(outside_symlink("web.yaml", WEB)),
         [L("pods/web.yaml", None, r"is a symlink to .*/outside/web\.yaml, outside the config directory; refused")],
         args=("--insecure",)),
]

assert len({c.id for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_costs_no_workload_its_qos(world, case: Case):
    sb, cfg = world.sb, world.cfg
    if case.add_fresh:
        (cfg / "pods" / "zz-fresh.yaml").write_text(FRESH)
    if case.delete_db:
        (cfg / "pods" / "db.yaml").unlink()
    case.mutate(cfg)
    before = snapshot(sb)
    assert active(before, WEB_SLICE) and active(before, DB_SLICE) and not active(before, FRESH_SLICE)

    rc, report, err = sync(sb, cfg, *case.args)
    after = snapshot(sb)

    # (a) exactly the expected error line(s) on stderr, and plan says the same
    bodies = assert_errors(err, case.errors)
    if case.plan_same:
        plan_rc, plan_err = plan_in_process(cfg, *case.args)
        assert plan_rc == 2, plan_err
        assert error_lines(plan_err) == error_lines(err)
    # (b) invalid input
    assert rc == 2, f"exit {rc}\n{err}"
    # (c) units
    if case.scope in (NODE_SCOPE, DIR):
        assert report is None or (report["created"], report["updated"], report["removed"]) == ([], [], []), report
        assert diff_snapshots(before, after) == []
        world.dirty = False
        return
    assert report is not None, err
    assert sorted(report["invalid"]) == sorted(bodies)
    assert report["errors"] == [] and report["updated"] == [] and report["drift"] == [], report
    assert report["created"] == [FRESH_SLICE], "the valid new pod must be created anyway"
    assert active(after, FRESH_SLICE)
    expected = {k: v for k, v in before.items() if k != FRESH_SLICE}
    got = {k: v for k, v in after.items() if k != FRESH_SLICE}
    if case.scope == POD:
        assert report["removed"] == [DB_SLICE], "a pod that left a readable config is removed"
    elif case.scope == FILE:
        assert report["removed"] == [], "nothing may be removed while a file cannot be known"
        assert DB_SLICE in report["kept"]
    elif case.scope == EITHER:
        assert report["removed"] in ([], [DB_SLICE])
    else:
        assert report["removed"] == []
    if DB_SLICE in report["removed"]:
        assert not active(after, DB_SLICE)
        expected.pop(DB_SLICE)
        got.pop(DB_SLICE, None)
    assert diff_snapshots(expected, got) == [], "units changed that must not"
    assert active(after, WEB_SLICE) and active(after, API_SLICE)


def test_insecure_accepts_what_strict_mode_refuses(world):
    """--insecure is the documented way past the permission checks (and only those)."""
    sb, cfg = world.sb, world.cfg
    (cfg / "pods" / "zz-fresh.yaml").write_text(FRESH)
    os.chmod(cfg, 0o777)
    os.chmod(cfg / "pods", 0o777)
    os.chmod(cfg / "node.yaml", 0o666)
    os.chown(cfg / "pods" / "web.yaml", 65534, 65534)
    rc, report, err = sync(sb, cfg)
    assert rc == 2 and len(error_lines(err)) == 1  # the directory itself is refused first
    rc, report, err = sync(sb, cfg, "--insecure")
    assert rc == 0, err
    assert stderr_lines(err) == []
    assert report["created"] == [FRESH_SLICE]


# --- names that look dangerous but are valid stay inside their unit ------------------------------------

TRICKY_POD = """\
apiVersion: v1
kind: Pod
metadata: {name: a-b, namespace: a-b, uid: a-b}
spec:
  containers:
  - name: a-b
    resources:
      requests: {cpu: 10m, memory: 16Mi}
"""
TRICKY_VM = """\
apiVersion: sdqos.io/v1alpha1
kind: VirtualMachine
metadata: {name: a-b}
spec:
  resources:
    limits: {cpu: 100m, memory: 32Mi}
  overhead: {cpu: 10m, memory: 16Mi}
"""


def _run_bg(sb, cfg, *args):
    return sbx.popen(sb, [sys.executable, "-m", "sdqos", "run", "--config", str(cfg), *args],
                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_dashes_in_uid_container_and_vm_names_add_no_slice_level(world):
    """uid a-b → kubepods-burstable-poda_b.slice (one level), container a-b → …-a\\x2db.scope inside it,
    VM a-b → machine-a\\x2db.scope in machine.slice; no kubepods-burstable-poda.slice appears."""
    sb, cfg = world.sb, world.cfg
    (cfg / "pods" / "tricky.yaml").write_text(TRICKY_POD)
    (cfg / "vms").mkdir()
    (cfg / "vms" / "tricky.yaml").write_text(TRICKY_VM)
    rc, report, err = sync(sb, cfg)
    assert rc == 0, err
    pod_slice = "kubepods-burstable-poda_b.slice"
    assert pod_slice in report["created"]
    procs = [_run_bg(sb, cfg, "a-b/a-b", "a-b", "--", "sleep", "300"), _run_bg(sb, cfg, "--vm", "a-b", "--", "sleep", "300")]
    try:
        scope = "sdqos-poda_b-a\\x2db.scope"
        vm_scope = "machine-a\\x2db.scope"
        pids = sb.cgroup_path("pids")
        wait_for(lambda: (pids / "kubepods.slice/kubepods-burstable.slice" / pod_slice / scope).is_dir()
                 and (pids / "machine.slice" / vm_scope).is_dir(), "both scopes")
        shown = show_many(sb, [pod_slice, scope, vm_scope], ("Id", "ActiveState", "Slice"))
        assert shown[scope]["Slice"] == pod_slice and shown[scope]["ActiveState"] == "active"
        assert shown[vm_scope]["Slice"] == "machine.slice" and shown[vm_scope]["ActiveState"] == "active"
        assert shown[pod_slice]["Slice"] == "kubepods-burstable.slice"
        r = sbx.run(sb, ["systemctl", "list-units", "--all", "--plain", "--no-legend", "kubepods-burstable-poda.slice",
                         "kubepods-burstable-poda-*"], check=True)
        assert r.stdout.strip() == "", r.stdout
    finally:
        for p in procs:
            p.kill()
            p.wait()
        sbx.run(sb, ["systemctl", "stop", "machine-a\\x2db.scope", "sdqos-poda_b-a\\x2db.scope"])
        _reset_machine_slice(sb)


def _reset_machine_slice(sb):
    """machine.slice got VM values from a test: give it back its unit-file defaults."""
    sbx.run(sb, ["rm", "-rf", "/run/systemd/system.control/machine.slice.d"])
    sbx.run(sb, ["systemctl", "daemon-reload"], check=True)


# --- VMs whose name or scope points at a unit that is not theirs ---------------------------------------


def test_vm_name_colliding_with_foreign_machine_scope_leaves_it_alone(world):
    """machine-web1.scope exists (machined registered a container "web1"); a VM named web1 with no
    libvirt/scope/pidFile must not claim it by name alone (README): its values and its processes'
    OOM scores stay as they are, and sync says so."""
    sb, cfg = world.sb, world.cfg
    foreign = "machine-web1.scope"
    holder = sbx.popen(sb, ["systemd-run", "--scope", f"--unit={foreign}", "--slice=machine.slice",
                            "--description=nspawn container web1", "-p", "CPUShares=77", "sleep", "300"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: show_many(sb, [foreign], ("Id", "ActiveState"))[foreign].get("ActiveState") == "active", "foreign scope")
        (cfg / "vms").mkdir()
        (cfg / "vms" / "web1.yaml").write_text(TRICKY_VM.replace("name: a-b", "name: web1"))
        before = show_many(sb, [foreign])
        r = sdqos_in(sb, "sync", "--config", str(cfg))
        after = show_many(sb, [foreign])
        stderr_lines(r.stderr)
        assert r.returncode in (0, 2), r.stderr
        said = [ln for ln in (r.stdout + r.stderr).splitlines() if "web1" in ln and foreign in ln]
        assert said, f"no line names VM web1 and {foreign}:\n{r.stdout}\n{r.stderr}"
        assert diff_snapshots({foreign: before[foreign]}, {foreign: after[foreign]}) == [], "a foreign scope was changed"
        inner = sbx.run(sb, ["pgrep", "-f", "^(/usr/bin/)?sleep 300$"], check=True).stdout.split()
        for pid in inner:
            assert sbx.run(sb, ["cat", f"/proc/{pid}/oom_score_adj"], check=True).stdout.strip() == "0"
    finally:
        holder.kill()
        holder.wait()
        sbx.run(sb, ["systemctl", "stop", foreign])
        _reset_machine_slice(sb)


def test_vm_scope_pointing_outside_machine_slice_is_never_touched(world):
    """spec.scope: init.scope (PID 1's own scope) must not get a VM's CPU quota and memory limit."""
    sb, cfg = world.sb, world.cfg
    (cfg / "vms").mkdir()
    (cfg / "vms" / "evil.yaml").write_text(TRICKY_VM.replace("name: a-b", "name: evil") + "  scope: init.scope\n")
    before = show_many(sb, ["init.scope"])
    oom1 = sbx.run(sb, ["cat", "/proc/1/oom_score_adj"], check=True).stdout.strip()
    try:
        r = sdqos_in(sb, "sync", "--config", str(cfg))
        after = show_many(sb, ["init.scope"])
        stderr_lines(r.stderr)
        assert r.returncode in (0, 2), r.stderr
        assert diff_snapshots(before, after) == [], "init.scope was changed by a VM definition"
        assert sbx.run(sb, ["cat", "/proc/1/oom_score_adj"], check=True).stdout.strip() == oom1
        said = [ln for ln in (r.stdout + r.stderr).splitlines() if "evil" in ln and "init.scope" in ln]
        assert said, f"no line names VM evil and init.scope:\n{r.stdout}\n{r.stderr}"
    finally:
        sbx.run(sb, ["systemctl", "set-property", "--runtime", "init.scope", "CPUShares=", "CPUQuota=", "MemoryLimit=infinity"])
        sbx.run(sb, ["rm", "-rf", "/run/systemd/system.control/init.scope.d"])
        _reset_machine_slice(sb)


# --- sdqos run: argv reaches the command untouched, no shell ------------------------------------------


def test_run_passes_hostile_argv_untouched(world):
    sb, cfg = world.sb, world.cfg
    canary = world.cfg.parent / "pwned"
    args = [b"$(touch " + bytes(canary) + b")", b"`touch " + bytes(canary) + b"`", b"; touch " + bytes(canary),
            b"| cat", b"*", b"", b" leading space", b"new\nline", b"--config", b"--", b"-c", b"\xff\xfe not utf-8",
            b"'quoted'", b'"dq"', b"$HOME", b"a\\x2db"]
    printer = "import os, sys; sys.stdout.buffer.write(b'\\0'.join(os.fsencode(a) for a in sys.argv[1:]))"
    argv = [sys.executable, "-m", "sdqos", "run", "--config", str(cfg), "shop/web", "nginx", "--",
            sys.executable, "-c", printer, *args]
    r = subprocess.run(sbx.nsenter_argv(sb, argv), check=False, capture_output=True, env=sbx.inner_env(), timeout=60)
    assert r.returncode == 0, r.stderr.decode(errors="replace")
    assert r.stdout.split(b"\0") == args
    assert not canary.exists()
    stderr_lines(r.stderr.decode())


# --- /run/sdqos: root-only, and never trusted when someone else could have touched it ---------------


def test_run_dir_has_safe_owner_and_modes_after_sync(world):
    sb = world.sb
    rc, _, err = sync(sb, world.base)
    assert rc == 0, err
    world.dirty = False
    run = sb.run_dir / "sdqos"
    st = run.lstat()
    assert (st.st_uid, st.st_gid, st.st_mode & 0o7777) == (0, 0, 0o755) and not run.is_symlink()
    sandbox_own = {"units", "generators", "libvirt"}  # the sandbox's unit dirs live here too
    names = sorted(p.name for p in run.iterdir() if p.name not in sandbox_own)
    assert "sync.lock" in names and "applied.json" in names, names
    for n in names:
        p = run / n
        st = p.lstat()
        assert p.is_file() and not p.is_symlink(), n
        assert st.st_uid == 0 and st.st_mode & 0o077 == 0, f"{n}: mode {st.st_mode & 0o7777:04o} uid {st.st_uid}"
        assert not n.startswith("."), f"temporary file left behind: {n}"
    json.loads((run / "applied.json").read_text())


RUN_DIR = "/run/sdqos-hostile"


@pytest.mark.parametrize("setup,message", [
    (f"ln -s /run/sdqos-elsewhere {RUN_DIR} && mkdir -p /run/sdqos-elsewhere", r".*sdqos-hostile.*(symlink|not a directory).*"),
    (f"mkdir -m 777 {RUN_DIR}", r".*sdqos-hostile.*(writable|owned).*"),
    (f"mkdir -m 755 {RUN_DIR} && chown 65534 {RUN_DIR}", r".*sdqos-hostile.*(writable|owned).*"),
    (f"mkdir -m 755 {RUN_DIR} && echo keep > /run/sdqos-target && ln -s /run/sdqos-target {RUN_DIR}/sync.lock",
     r".*sync\.lock.*"),
], ids=["run-dir-symlink", "run-dir-world-writable", "run-dir-foreign-owner", "lock-file-symlink"])
def test_hostile_run_dir_is_refused_with_one_line(world, setup, message):
    """A run dir (SDQOS_RUN_DIR) or lock file someone else could have planted: refused, exit 1, one
    line, no unit touched, the symlink's target untouched."""
    sb = world.sb
    sbx.run(sb, ["sh", "-c", f"rm -rf {RUN_DIR} /run/sdqos-elsewhere /run/sdqos-target && {setup}"], check=True)
    (world.cfg / "pods" / "zz-fresh.yaml").write_text(FRESH)
    before = snapshot(sb)
    try:
        env = dict(sbx.inner_env(), SDQOS_RUN_DIR=RUN_DIR)
        r = sdqos_in(sb, "sync", "--config", str(world.cfg), env=env)
        after = snapshot(sb)
        assert_errors(r.stderr, [message])
        assert r.returncode == 1, r.stderr
        assert diff_snapshots(before, after) == []
        world.dirty = False
        if "sdqos-target" in setup:
            assert (sb.run_dir / "sdqos-target").read_text() == "keep\n"
    finally:
        sbx.run(sb, ["sh", "-c", f"rm -rf {RUN_DIR} /run/sdqos-elsewhere /run/sdqos-target"])
