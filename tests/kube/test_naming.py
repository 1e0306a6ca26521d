"""Unit names both ways: every maker in sdqos.kube.naming has its parser, and parse(make(x)) == x
(kubelet's ToSystemd / ParseSystemdToCgroupName pair, pkg/kubelet/cm/cgroup_manager_linux.go)."""

from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st

from sdqos.kube import naming as N
from sdqos.kube.manifests import UID_RE

# A slice component as kubelet's NewCgroupName allows it: no "_" (that is how "-" is escaped), no "/".
component = st.from_regex(r"\A[A-Za-z0-9.:-]{1,20}\Z")
root = st.lists(st.from_regex(r"\A[A-Za-z0-9]{1,12}\Z"), max_size=3).map(tuple)  # cgroup_root_components
uid = st.from_regex(UID_RE.pattern.replace("^", r"\A").replace("$", r"\Z"))
tier = st.sampled_from([None, *N.TIERS.values()])
container = st.from_regex(r"\A[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\Z")  # a DNS label, as manifests require
any_text = st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=40)
hex64 = st.from_regex(r"\A[0-9a-f]{64}\Z")


@given(st.lists(component, max_size=5))
@example(["kubepods", "burstable", "pod1234-abcd"])
def test_slice_components(comps):
    assert N.slice_components(N.slice_name(comps)) == tuple(comps)


def test_slice_components_of_other_units():
    assert N.slice_components("x.scope") is None
    assert N.slice_components("-.slice") == ()


@given(root)
def test_node_slice(r):
    assert N.parse_node_slice(N.node_slice(r)) == r


@given(root, st.sampled_from(list(N.TIERS.values())))
def test_tier_slice(r, t):
    assert N.parse_tier_slice(N.tier_slice(r, t)) == (r, t)
    assert N.parse_pod_slice(N.tier_slice(r, t)) is None


@given(root, tier, uid)
@example((), "burstable", "1234-abcd")
@example(("kubepods",), None, "x")  # a root named like the tree: still told apart
@example(("burstable",), None, "x")
def test_pod_slice(r, t, u):
    parsed = N.parse_pod_slice(N.pod_slice(r, t, u))
    assert parsed == N.PodSlice(r, t, u)
    assert parsed.qos == N.QOS_OF_TIER[t]
    assert N.parse_tier_slice(N.pod_slice(r, t, u)) is None


@given(uid, container)
@example("a-b", "my-app")
def test_container_scope(u, c):
    assert N.parse_container_scope(N.container_scope(u, c)) == (u, c)


@given(any_text)
@example("qemu-1-vm1")
@example(".hidden/x")
def test_machine_scope(name):
    assert N.parse_machine_scope(N.machine_scope(name)) == name


@given(any_text)
@example("a\\x2db")
def test_systemd_escape(text):
    assert N.systemd_unescape(N.systemd_escape(text)) == text


@given(st.integers(min_value=0, max_value=10**6), any_text)
@example(3, "db-1")
def test_libvirt_scope(i, domain):
    assert N.parse_libvirt_scope(N.libvirt_scope(i, domain)) == (i, domain)
    assert N.libvirt_scope(1, "vm1") == "machine-qemu\\x2d1\\x2dvm1.scope"  # what machined makes of qemu-1-vm1


@given(hex64)
def test_podman_scopes(cid):
    assert N.parse_podman_scope(N.podman_scope(cid)) == cid
    assert N.parse_podman_conmon_scope(N.podman_conmon_scope(cid)) == cid
    assert N.parse_podman_scope(N.podman_conmon_scope(cid)) is None  # conmon's scope is no container's
    assert N.parse_podman_conmon_scope(N.podman_scope(cid)) is None


@given(root, tier, uid, hex64)
def test_podman_pod_slice(r, t, u, pod_id):
    parent = N.pod_slice(r, t, u)
    made = N.podman_pod_slice(parent, pod_id)
    assert N.parse_podman_pod_slice(made) == (parent, pod_id)
    assert N.owning_slice(made) == parent and N.owning_slice(parent) == parent
    assert N.parse_pod_slice(made) is None  # podman's sub-slice is not a pod slice of its own


def test_not_ours():
    for name in ("libpod-abc.scope", "machine.slice", "sdqos-pod.scope", "sdqos-podx.scope", "kubepods-pod.slice",
                 "kubepods-burstable.slice", "user-1000.slice", "machine-.scope", "kubepods-libpod_pod_x.slice"):
        assert N.parse_pod_slice(name) is None
        assert N.parse_container_scope(name) is None
        assert N.parse_podman_scope(name) is None
        assert N.parse_podman_pod_slice(name) is None
    assert N.parse_machine_scope("machine-.scope") is None
    assert N.parse_libvirt_scope("machine-vm1.scope") is None


@given(st.sampled_from([N.POD, N.VM]), any_text, st.one_of(st.none(), container))
def test_owner_description(kind, name, c):
    owner = N.Owner(kind, name, c if kind == N.POD else None)
    text = N.description("container" if owner.container else kind, owner, "Burstable")
    assert N.marked(text)
    assert name in text and (owner.container is None or owner.container in text)


def test_scope_maker():
    assert N.scope_maker(N.container_scope("1-2", "app")) == "sdqos"
    assert N.scope_maker(N.libvirt_scope(3, "db")) == "libvirt"
    assert N.scope_maker(N.podman_scope("a" * 64)) == "podman"
    assert N.scope_maker(N.podman_conmon_scope("a" * 64)) == "podman's conmon"
    assert N.scope_maker("libpod-x.scope") == "podman"  # by its prefix: never taken, even if not a 64-hex id
    assert N.scope_maker(N.machine_scope("vm1")) == "systemd-machined"
    assert N.scope_maker("cri-containerd-abc.scope") == "containerd"
    assert N.scope_maker("session-1.scope") is None and N.scope_maker("libpod-x.slice") is None


@given(root, tier, uid)
def test_pod_slices_lie_in_their_tree(r, t, u):
    top = N.node_slice(r)
    assert N.in_tree(N.pod_slice(r, t, u), top) and N.in_tree(top, top)
    assert not N.in_tree(N.pod_slice(("other",), t, u), N.node_slice(("x",)))
    assert N.tree_globs(top)[0] == top


_NAME = st.text(alphabet="ab-_.", max_size=12)


@given(unit=st.one_of(_NAME, _NAME.map(lambda s: s + ".slice"), st.sampled_from(["-.slice", ".slice", "a.slice"])),
       top=st.one_of(_NAME.map(lambda s: s + ".slice"), st.sampled_from(["-.slice", "kubepods.slice", "a_b.slice"])))
@example(unit="kubepods-burstable-pod1_2.slice", top="kubepods.slice")
@example(unit="a-b.slice", top="a_b.slice")
def test_in_tree_is_a_prefix_of_the_slices_components(unit, top):
    """in_tree looks at the first components only; it answers what the components say."""
    comps, root = N.slice_components(unit), N.slice_components(top)
    assert N.in_tree(unit, top) == (comps is not None and root is not None and comps[:len(root)] == root)


@given(unit=st.one_of(_NAME.map(lambda s: s + ".slice"), _NAME.map(lambda s: s + ".scope"),
                      st.sampled_from(["-.slice", ".slice", "a.scope"])),
       parent=st.one_of(st.just(""), _NAME.map(lambda s: s + ".slice"), st.just("-.slice")))
@example(unit="kubepods-burstable-pod1_2.slice", parent="")
@example(unit="-a--b.slice", parent="")
@example(unit="c.scope", parent="a-b.slice")
def test_cgroup_path_nests_a_slice_in_each_prefix_of_its_name(unit, parent):
    """systemd nests ``a-b-c.slice`` in ``a.slice`` and ``a-b.slice``; anything else sits in its
    slice: as the join over the name's prefixes spells it."""
    def spelled(u: str, p: str) -> str:
        if u.endswith(".slice"):
            stem = u[: -len(".slice")]
            if stem in ("", "-"):
                return "/"
            parts = stem.split("-")
            return "/" + "/".join("-".join(parts[: i + 1]) + ".slice" for i in range(len(parts)))
        return f"{spelled(p, '') if p and p != N.ROOT_SLICE else ''}/{u}"
    assert N.cgroup_path(unit, parent) == spelled(unit, parent)


@given(st.text(alphabet=st.sampled_from("aZ09:_.-\\@/ é\x00*"), max_size=300) | st.text(max_size=300))
@example("kubepods-burstable-pod1.slice")
@example("a" * 256)
@example("a/b.slice")
def test_valid_unit_name_is_the_per_character_rule(name):
    """The one-pass check answers as the rule it replaced: length 1..UNIT_NAME_MAX, and every
    character a letter, digit, ``:_.`` or ``-\\@`` (so never ``/``)."""
    from sdqos.kube.naming import _SAFE, UNIT_NAME_MAX, valid_unit_name

    rule = 0 < len(name) <= UNIT_NAME_MAX and all(ch in _SAFE or ch in "-\\@" for ch in name) and "/" not in name
    assert valid_unit_name(name) == rule
