"""A real `apportion serve` (uvicorn in its own process) on a free loopback port, for the tests."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from svc_pg import free_port


@dataclass
class LiveServer:
    """One server process; `start` again after `kill` to test recovery."""

    db_url: str
    workdir: Path
    args: list[str] = field(default_factory=list)
    port: int = 0
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """Its base URL."""
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 60.0) -> LiveServer:
        """Start and wait until it answers."""
        self.port = free_port()
        cmd = [sys.executable, "-c", "from apportion.cli import main; main()", "serve", "--db", self.db_url, "--port", str(self.port), *self.args]
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        # the child writes through its own copy of the descriptor, so ours is closed at once
        with open(self.workdir / f"server-{self.port}.log", "wb") as log:
            self.proc = subprocess.Popen(cmd, cwd=self.workdir, stdout=log, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited with {self.proc.returncode}: {self.log()[-2000:]}")
            try:
                if httpx.get(self.url + "/ws/v1/cluster", timeout=1.0).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        self.kill()
        raise RuntimeError(f"server did not answer within {timeout} s: {self.log()[-2000:]}")

    def log(self) -> str:
        """What the server printed."""
        p = self.workdir / f"server-{self.port}.log"
        return p.read_text(errors="replace") if p.exists() else ""

    def kill(self) -> None:
        """kill -9, as a crash."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=30)

    def stop(self) -> None:
        """A clean stop (SIGTERM), kill -9 if it does not go."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()
