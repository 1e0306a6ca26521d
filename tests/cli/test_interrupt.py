"""Ctrl-C is never lost in an event loop: every command's coroutine runs through
``sdqos.cli.app.run_async``, which ends in KeyboardInterrupt after a SIGINT however the task
ended (Python 3.11's ``asyncio.wait_for`` returns a result that meets the cancellation instead of
raising it: on a busy machine `status --watch` kept printing after Ctrl-C)."""

from __future__ import annotations

import asyncio
import os
import signal
import time

import pytest

from sdqos.cli.app import run_async  # (sdqos.host.systemd.run)


def test_a_cancellation_wait_for_swallows_still_ends_in_keyboard_interrupt():
    async def reply_and_ctrl_c_in_one_pass():
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        loop.call_soon(fut.set_result, "reply")  # the reply arrives in the same loop pass as Ctrl-C
        os.kill(os.getpid(), signal.SIGINT)
        return await asyncio.wait_for(fut, 10)

    with pytest.raises(KeyboardInterrupt):
        run_async(reply_and_ctrl_c_in_one_pass())
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_task_that_swallows_the_cancellation_is_cancelled_again_until_it_ends():
    async def swallows_once():
        os.kill(os.getpid(), signal.SIGINT)
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            pass  # e.g. a library's broad handler
        await asyncio.sleep(20)
        return "went on"

    t0 = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        run_async(swallows_once())
    assert time.monotonic() - t0 < 10
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_without_ctrl_c_the_result_comes_back():
    async def fine():
        await asyncio.sleep(0)
        return 42

    assert run_async(fine()) == 42
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_ctrl_c_in_the_tasks_last_step_is_not_lost():
    """SIGINT just before the task ends: the loop would only have noted it in its pipe, and stopped
    without reading it (status --watch went on after a Ctrl-C that came as a screen was collected)."""
    async def last_step():
        await asyncio.sleep(0)
        os.kill(os.getpid(), signal.SIGINT)
        return "done"

    with pytest.raises(KeyboardInterrupt):
        run_async(last_step())
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_ctrl_c_while_a_module_makes_a_class_is_interrupted_not_an_internal_error():
    """A SIGINT that lands while a lazily imported module defines a class (a dataclass's field,
    say) reaches main as Python 3.11's RuntimeError "Error calling __set_name__", the
    KeyboardInterrupt its cause: one line, exit 130, as any other Ctrl-C (seen once at a delay of
    0 s in test_ctrl_c_sandbox's `pressure --evict`)."""
    import subprocess
    import sys

    script = """
import sdqos.cli.app as app

class Hit:
    def __set_name__(self, owner, name):
        raise KeyboardInterrupt  # the SIGINT, in the middle of making a class

def command(**_):
    class Model:
        field = Hit()

app.for_args = lambda args: command
app.main()
"""
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert (r.returncode, r.stderr) == (130, "sdqos: interrupted\n"), (r.returncode, r.stderr)


def test_a_ctrl_c_while_the_commands_module_makes_a_class_is_interrupted_too():
    """The same while sdqos.cli.app itself loads (the console script's own guard): seen once at a
    delay of 0 s in test_ctrl_c_sandbox's `status --watch`, in the standard library's platform."""
    import subprocess
    import sys

    script = """
import sys, types

class Loading(types.ModuleType):
    def __getattr__(self, name):
        class Hit:
            def __set_name__(self, owner, attr):
                raise KeyboardInterrupt  # the SIGINT, while the module makes a class

        class Model:
            field = Hit()

sys.modules["sdqos.cli.app"] = Loading("sdqos.cli.app")
from sdqos.cli import main
main()
"""
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert (r.returncode, r.stderr) == (130, "sdqos: interrupted\n"), (r.returncode, r.stderr)
