"""One writer of unit values (issue 31): only the reconciler's apply (sdqos/reconcile/apply.py)
calls what writes a unit's values — StartTransientUnit(s), SetUnitProperties, systemd-machined's
CreateMachine — besides the adapters that implement those calls. `run`, `adopt`, `podman start`,
budget updates: all go through the desired state, the diff and apply. Read from the source with
``ast``, so a new writer anywhere in sdqos/ fails here (docstrings that name the calls do not)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "sdqos"
# The SystemdAPI members (and machined's) that write unit values, and the D-Bus methods behind them.
WRITERS = frozenset({"start_transient_unit", "start_transient_units", "set_unit_properties",
                     "set_units_properties", "create_machine"})
METHODS = frozenset({"StartTransientUnit", "SetUnitProperties", "CreateMachine"})
ALLOWED = frozenset({
    "reconcile/apply.py",  # the one writer
    "host/systemd.py",  # the adapters that implement the calls
    "host/machined.py",
})


def writes_in(source: str) -> list[tuple[int, str]]:
    """(line, what) of every call in ``source`` to a writer member, or to any call naming a writing
    D-Bus method as an argument (a raw ``call_service(..., "CreateMachine")``)."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None
        if name in WRITERS:
            out.append((node.lineno, name))
        for arg in [*node.args, *(k.value for k in node.keywords)]:
            if isinstance(arg, ast.Constant) and arg.value in METHODS:
                out.append((node.lineno, str(arg.value)))
    return out


def writers(package: Path = PACKAGE) -> list[str]:
    """Every such call outside the allowed modules, as ``path:line what``."""
    found = []
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package).as_posix()
        if rel in ALLOWED:
            continue
        found += [f"{rel}:{line} {what}" for line, what in writes_in(path.read_text())]
    return found


def test_only_apply_writes_unit_values():
    assert writers() == [], "unit values written outside sdqos/reconcile/apply.py (make them actions of the diff)"


def test_the_check_sees_each_kind_of_writer():
    """It would fail on the code before issue 31 (launch.py's ensure_ancestors and start_scope, the
    machined registration): each of their forms is found; a docstring naming a call is not."""
    before = '''
"""Names StartTransientUnit in a docstring: not a call."""
async def ensure_ancestors(sd, u):
    await sd.start_transient_unit(u.name, {})
    await sd.set_unit_properties(u.name, {})
async def register(sd, name, leader, props):
    from sdqos.host import machined
    await machined.create_machine(sd, name, leader, props)
    await sd.call_service("org.freedesktop.machine1", "/", "m", "CreateMachine", "s", [])
async def bulk(sd, items):
    return await sd.set_units_properties(items), await sd.start_transient_units(items)
'''
    assert [what for _, what in writes_in(before)] == [
        "start_transient_unit", "set_unit_properties", "create_machine", "CreateMachine",
        "set_units_properties", "start_transient_units"]
    assert writes_in('"""StartTransientUnit, SetUnitProperties"""\nx = 1\n') == []
