"""Command-line conventions operators expect: -h, bare `sdqos` shows help, shell completion for
bash/zsh/fish, and a man page generated from the help (checked against each command's own -h)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest

COMMANDS = ["plan", "explain", "sync", "diff", "status", "metrics", "pressure", "run", "adopt", "podman", "man", "install-units",
            "sandbox"]
SANDBOX = ["up", "exec", "status", "list", "down"]
PODMAN = ["start", "stop"]


def sdqos(*args, env=None):
    return subprocess.run([sys.executable, "-m", "sdqos", *args], capture_output=True, text=True, check=False,
                          env={**os.environ, **(env or {})})


def test_bare_sdqos_shows_help_and_exits_0():
    r = sdqos()
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("Usage: sdqos") and "Commands:" in r.stdout


@pytest.mark.parametrize("cmd", [[], *([c] for c in COMMANDS), *(["sandbox", s] for s in SANDBOX),
                                 *(["podman", s] for s in PODMAN)])
def test_dash_h_is_help_everywhere(cmd):
    short, long_ = sdqos(*cmd, "-h"), sdqos(*cmd, "--help")
    assert short.returncode == 0 and short.stdout == long_.stdout
    assert short.stdout.startswith("Usage: sdqos")


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_scripts(shell):
    r = sdqos("--show-completion", shell, env={"_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION": "1"})
    assert r.returncode == 0, r.stderr
    assert "_SDQOS_COMPLETE" in r.stdout


def test_completion_completes_commands_and_options():
    """What the bash script asks at a TAB: the console script's own answer."""
    env = {"_SDQOS_COMPLETE": "complete_bash", "COMP_WORDS": "sdqos sy", "COMP_CWORD": "1"}
    r = subprocess.run([sys.executable, "-c", "import sys; sys.argv[0] = 'sdqos'; from sdqos.cli.app import main; main()"],
                       capture_output=True, text=True, env={**os.environ, **env}, check=False)
    assert r.stdout.split() == ["sync"]
    env.update(COMP_WORDS="sdqos sync --dry", COMP_CWORD="2")
    r = subprocess.run([sys.executable, "-c", "import sys; sys.argv[0] = 'sdqos'; from sdqos.cli.app import main; main()"],
                       capture_output=True, text=True, env={**os.environ, **env}, check=False)
    assert r.stdout.split() == ["--dry-run"]


def _options(help_text: str) -> set[str]:
    section = help_text.split("Options:", 1)[1] if "Options:" in help_text else ""
    return set(re.findall(r"(?<![\w-])(--?[a-zA-Z][\w-]*)", section.split("Commands:", 1)[0]))


def test_man_page_has_every_command_and_option_of_the_help():
    page = sdqos("man").stdout
    assert page.startswith(".TH SDQOS 1")
    sections = dict(re.findall(r"^\.SS (sdqos[^\n]*)\n(.*?)(?=^\.SS |^\.SH |\Z)", page, flags=re.S | re.M))
    expected = ([["sdqos", c] for c in COMMANDS] + [["sdqos", "sandbox", s] for s in SANDBOX]
                + [["sdqos", "podman", s] for s in PODMAN])
    assert sorted(sections) == sorted(" ".join(c) for c in expected)
    for cmd in expected:
        opts = _options(sdqos(*cmd[1:], "-h").stdout)
        assert opts, cmd
        text = sections[" ".join(cmd)].replace("\\-", "-")
        missing = [o for o in opts if o not in text]
        assert not missing, (cmd, missing)


@pytest.mark.skipif(shutil.which("groff") is None, reason="groff not installed")
def test_man_page_is_clean_roff():
    page = sdqos("man").stdout
    r = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z"], input=page, capture_output=True, text=True)
    assert r.returncode == 0 and r.stderr == ""


def test_one_list_of_exit_codes_in_help_man_page_and_readme():
    """`sdqos -h`, the man page and README's table list the same codes (0–4) with the same words."""
    from pathlib import Path

    from sdqos.errors import EXIT_CODES, EXIT_CODES_LINE

    assert [c for c, _ in EXIT_CODES] == [0, 1, 2, 3, 4]
    assert EXIT_CODES_LINE in " ".join(sdqos("-h").stdout.split())
    page = sdqos("man").stdout
    listed = re.findall(r"^\.TP\n\\fB(\d)\\fR\n(.*)$", page.split(".SH EXIT STATUS", 1)[1].split(".SH ", 1)[0], re.M)
    assert [(int(c), m) for c, m in listed] == list(EXIT_CODES)
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    table = readme.split("### Exit codes", 1)[1].split("\n\n", 2)[1]
    assert re.findall(r"^\| (\d) \| (.*) \|$", table, re.M) == [(str(c), m) for c, m in EXIT_CODES]


def test_every_warning_has_one_prefix(tmp_path):
    """Warnings on stderr and in reports start with `warning: ` (never `sdqos: warning:`)."""
    import shutil as sh
    from pathlib import Path

    cfg = tmp_path / "cfg"
    sh.copytree(Path(__file__).resolve().parents[2] / "examples", cfg)
    (cfg / "node.yaml").write_text((cfg / "node.yaml").read_text() + "kubeReserverd: {}\n")
    (cfg / "pods" / "notes.txt").write_text("x")
    for p in [cfg, *cfg.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)
    plan = sdqos("plan", "--config", str(cfg))
    explain = sdqos("explain", "--config", str(cfg), "shop/web")
    warnings = [l for r in (plan, explain) for l in (r.stdout + r.stderr).splitlines() if "warning" in l]
    assert len(warnings) >= 3, warnings
    assert all(l.startswith("warning: ") for l in warnings), warnings


def _complete(words: str, cword: int, env: dict | None = None) -> list[str]:
    """What the bash completion script gets for COMP_WORDS/COMP_CWORD (the console script's answer)."""
    env = {**os.environ, **(env or {}), "_SDQOS_COMPLETE": "complete_bash", "COMP_WORDS": words, "COMP_CWORD": str(cword)}
    r = subprocess.run([sys.executable, "-c", "import sys; sys.argv[0] = 'sdqos'; from sdqos.cli.app import main; main()"],
                       capture_output=True, text=True, env=env, check=False, timeout=60)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    return r.stdout.split()


def test_completion_completes_pod_container_and_vm_names(tmp_path):
    """As kubectl completes resource names: pods (explain, run, adopt, podman start/stop, status
    --pod, sync --recreate) from the config on the command line (or SDQOS_CONFIG), a pod's
    containers, declared VMs; nothing (and no error) when the config cannot be read."""
    from pathlib import Path

    examples = str(Path(__file__).resolve().parents[2] / "examples")
    pods = ["batch/report", "kube-system/node-agent", "shop/api", "shop/db", "shop/web"]
    assert _complete(f"sdqos explain --config {examples} sh", 4) == ["shop/api", "shop/db", "shop/web"]
    assert _complete(f"sdqos status --config {examples} --pod", 5) == pods
    assert _complete(f"sdqos podman start --config {examples} b", 5) == ["batch/report"]
    assert _complete(f"sdqos podman stop --config {examples}", 5) == pods
    assert _complete(f"sdqos run --config {examples} shop/web", 5) == ["migrate", "log-shipper", "nginx"]
    assert _complete(f"sdqos adopt --config {examples} web n", 5) == ["nginx"]
    assert _complete("sdqos sync --recreate", 3, env={"SDQOS_CONFIG": examples}) == pods
    vms = tmp_path / "cfg"
    import shutil as sh

    sh.copytree(examples, vms)
    (vms / "vms").mkdir()
    (vms / "vms" / "db1.yaml").write_text("apiVersion: sdqos.io/v1alpha1\nkind: VirtualMachine\nmetadata: {name: db1}\n"
                                          "spec: {resources: {limits: {cpu: '1', memory: 1Gi}}}\n")
    assert _complete(f"sdqos explain --config {vms} --vm", 5) == ["db1"]
    assert _complete(f"sdqos explain --config {tmp_path}/nowhere sh", 4) == []


def test_a_mistyped_command_suggests_the_one_it_most_likely_meant():
    for typo, meant in (("stauts", "status"), ("snyc", "sync"), ("explian", "explain")):
        r = subprocess.run([sys.executable, "-m", "sdqos", typo], capture_output=True, text=True)
        assert r.returncode == 2
        assert r.stderr.strip().splitlines()[-1] == f"Error: No such command {typo!r}. Did you mean {meant!r}?"
