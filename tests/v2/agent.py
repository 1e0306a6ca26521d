#!/usr/bin/python3
"""The guest side of the v2 test guest's command channel (installed as /usr/local/sbin/sdqos-v2-agent).

One JSON request per line on the virtio-serial port ``sdqos-agent`` — {"id", "argv" or "sh",
"timeout", "env"} — and one JSON reply per line — {"id", "rc", "out", "err", "t"} (out/err in
base64). It runs as a service of the guest's own systemd, started before anything else, so the
host can wait for it as the sign that the guest is up. Standard library only: the guest's python3.
"""

import base64
import json
import os
import subprocess
import time

PORT = "/dev/virtio-ports/sdqos-agent"
ENV = {"HOME": "/root", "LANG": "C.UTF-8", "PATH": "/opt/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}


def b64(data: bytes | None) -> str:
    return base64.b64encode(data or b"").decode()


def handle(req: dict) -> dict:
    argv = req.get("argv") or ["/bin/sh", "-c", req["sh"]]
    t0 = time.monotonic()
    try:
        p = subprocess.run(argv, capture_output=True, timeout=req.get("timeout") or None,
                           env={**ENV, **(req.get("env") or {})}, cwd=req.get("cwd") or "/root", stdin=subprocess.DEVNULL)
        rep = {"rc": p.returncode, "out": b64(p.stdout), "err": b64(p.stderr)}
    except subprocess.TimeoutExpired as e:
        rep = {"rc": 124, "out": b64(e.stdout), "err": b64((e.stderr or b"") + b"\nsdqos-v2-agent: timed out\n")}
    except OSError as e:
        rep = {"rc": 127, "out": "", "err": b64(f"sdqos-v2-agent: {e}\n".encode())}
    rep["id"] = req.get("id")
    rep["t"] = round(time.monotonic() - t0, 3)
    return rep


def serve() -> None:
    while not os.path.exists(PORT):
        time.sleep(0.05)
    fd = os.open(PORT, os.O_RDWR)
    buf = b""
    while True:
        try:
            chunk = os.read(fd, 1 << 16)
        except OSError:
            time.sleep(0.05)
            continue
        if not chunk:  # no host connected: poll
            time.sleep(0.05)
            continue
        buf += chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            try:
                req = json.loads(line)
            except ValueError:
                continue
            data = (json.dumps(handle(req)) + "\n").encode()
            while data:
                try:
                    data = data[os.write(fd, data):]
                except BlockingIOError:
                    time.sleep(0.01)


if __name__ == "__main__":
    serve()
