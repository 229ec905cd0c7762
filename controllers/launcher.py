"""Start the Ryu controller for a run, wait until every route is installed, stop it.

The controller listens on 127.0.0.1 only, on a free port, and logs into the run's
folder. `wait_ready` returns once the app's status file lists every switch of the
topology as ready (rules sent and a barrier answered); it fails early, with the log's
tail, if ryu-manager dies.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


class Controller:
    def __init__(self, topology_json: Path, run_dir: Path, host: str = "127.0.0.1"):
        self.topology_json = Path(topology_json)
        self.run_dir = Path(run_dir)
        self.host = host
        self.port = free_port(host)
        self.status_path = self.run_dir / "controller-status.json"
        self.log_path = self.run_dir / "controller.log"
        self.proc: subprocess.Popen | None = None

    def command(self) -> list[str]:
        return [sys.executable, "-m", "controllers.ryu_main",
                "--ofp-listen-host", self.host, "--ofp-tcp-listen-port", str(self.port),
                "--syncbed-topology", str(self.topology_json),
                "--syncbed-status", str(self.status_path),
                "controllers.syncbed_app"]

    def start(self) -> "Controller":
        self.status_path.unlink(missing_ok=True)
        log = open(self.log_path, "w")
        env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        self.proc = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT,
                                     cwd=ROOT, env=env, start_new_session=True)
        log.close()
        deadline = time.time() + 30
        while time.time() < deadline:  # listening?
            self._check_alive()
            with socket.socket() as s:
                if s.connect_ex((self.host, self.port)) == 0:
                    return self
            time.sleep(0.2)
        raise RuntimeError(f"Ryu did not listen on {self.host}:{self.port} within 30 s; see {self.log_path}")

    def status(self) -> dict:
        try:
            return json.loads(self.status_path.read_text())
        except (FileNotFoundError, json.JSONDecodeError):
            return {}

    def wait_ready(self, timeout: float = 60.0) -> dict:
        deadline = time.time() + timeout
        st: dict = {}
        while time.time() < deadline:
            self._check_alive()
            st = self.status()
            if st.get("errors"):
                raise RuntimeError(f"controller reported: {st['errors'][0]}")
            if st.get("expected") and set(st["ready"]) == set(st["expected"]):
                return st
            time.sleep(0.2)
        missing = sorted(set(st.get("expected", [])) - set(st.get("ready", [])))
        raise RuntimeError(f"switches without routes after {timeout:.0f} s: {', '.join(missing[:8]) or '?'}")

    def _check_alive(self):
        if self.proc is not None and self.proc.poll() is not None:
            tail = self.log_path.read_text()[-600:] if self.log_path.exists() else ""
            raise RuntimeError(f"ryu-manager exited with {self.proc.returncode}: {tail.strip().splitlines()[-1:] or ''}")

    def stop(self):
        if self.proc is None or self.proc.poll() is not None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(5)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(5)

    @property
    def pid(self):
        return self.proc.pid if self.proc else None
