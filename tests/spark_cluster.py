"""A real Spark standalone cluster for the tests, started from the pyspark package: one master
and two workers, each its own JVM on 127.0.0.1, with their own work directories. Executors
start Python workers from the interpreter the application names (``spark.pyspark.python``),
which in the tests is a fresh venv holding only the installed wheel: nothing of the source tree
reaches the executors."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pyspark


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _spark_class(main: str, args: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen:
    spark_home = os.path.dirname(pyspark.__file__)
    with log.open("wb") as out:
        return subprocess.Popen(
            [os.path.join(spark_home, "bin", "spark-class"), main, *args],
            env={**env, "SPARK_HOME": spark_home},
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


@dataclass
class SparkCluster:
    """A running master and its workers."""

    master_url: str
    master_ui: str
    workdir: Path
    processes: list[subprocess.Popen] = field(default_factory=list)
    logs: list[Path] = field(default_factory=list)

    def alive_workers(self) -> int:
        import json

        with urllib.request.urlopen(f"{self.master_ui}/json/", timeout=5) as r:
            state = json.load(r)
        return sum(1 for w in state.get("workers", []) if w.get("state") == "ALIVE")

    def executor_log(self) -> str:
        """Everything the executors logged (their stderr in the workers' work directories)."""
        return "\n".join(
            p.read_text(errors="replace")
            for p in sorted(self.workdir.glob("worker-*/app-*/*/stderr"))
        )

    def tail(self, n: int = 40) -> str:
        out = []
        for log in self.logs:
            lines = log.read_text(errors="replace").splitlines()[-n:]
            out.append(f"== {log.name}\n" + "\n".join(lines))
        return "\n".join(out)

    def stop(self) -> None:
        for p in self.processes:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGTERM)
        for p in self.processes:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()


def start(workdir: Path, workers: int = 2, worker_memory: str = "2g") -> SparkCluster:
    """Starts a master and ``workers`` workers (one core each) on 127.0.0.1 and waits until every
    worker has registered."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK")}
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    env["SPARK_LOG_DIR"] = str(workdir)
    port, ui = _free_port(), _free_port()
    master = f"spark://127.0.0.1:{port}"
    cluster = SparkCluster(master, f"http://127.0.0.1:{ui}", workdir)
    log = workdir / "master.log"
    cluster.logs.append(log)
    cluster.processes.append(
        _spark_class(
            "org.apache.spark.deploy.master.Master",
            ["--host", "127.0.0.1", "--port", str(port), "--webui-port", str(ui)],
            log,
            env,
        )
    )
    for i in range(workers):
        # Each worker on its own loopback address (127.0.0.1, 127.0.0.2, ...): to Spark they
        # are different hosts, which speculation and locality need (a speculative copy never
        # runs on the host of the attempt it races).
        host = f"127.0.0.{i + 1}"
        wdir = workdir / f"worker-{i}"
        wdir.mkdir(parents=True, exist_ok=True)
        log = workdir / f"worker-{i}.log"
        cluster.logs.append(log)
        cluster.processes.append(
            _spark_class(
                "org.apache.spark.deploy.worker.Worker",
                [
                    "--host",
                    host,
                    "--port",
                    str(_free_port()),
                    "--webui-port",
                    str(_free_port()),
                    "--cores",
                    "1",
                    "--memory",
                    worker_memory,
                    "--work-dir",
                    str(wdir),
                    master,
                ],
                log,
                {**env, "SPARK_LOCAL_IP": host},
            )
        )
    deadline = time.monotonic() + 120
    while True:
        try:
            if cluster.alive_workers() == workers:
                return cluster
        except (OSError, ValueError):
            # Not listening yet, or (seen once under load) the UI answering /json/ with its HTML
            # page while it is still attaching its handlers: both mean "not ready".
            pass
        if time.monotonic() > deadline or any(p.poll() is not None for p in cluster.processes):
            tail = cluster.tail()
            cluster.stop()
            raise RuntimeError(f"the Spark cluster did not start:\n{tail}")
        time.sleep(0.5)
