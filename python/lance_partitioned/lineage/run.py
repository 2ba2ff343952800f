"""One OpenLineage run per operation: START when it begins, COMPLETE (or FAIL with an
``errorMessage`` facet) when it ends, emitted through the configured client. Emission never
fails the operation: errors are logged and the operation goes on."""

from __future__ import annotations

import datetime
import logging
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from lance_partitioned.lineage import config, facets

__all__ = ["Job", "LineageRun", "begin", "operation"]

log = logging.getLogger("lance_partitioned.lineage")

Job = str | tuple[str, str] | None
"""A job name, or (job namespace, job name); None: the settings' defaults."""

Datasets = Sequence[dict[str, Any]]


def _uuid7() -> str:
    """A time-ordered UUID (version 7), as OpenLineage recommends for run ids."""
    ms = time.time_ns() // 1_000_000
    rand = uuid.uuid4().int
    value = (ms & ((1 << 48) - 1)) << 80 | (0x7 << 76) | (rand & ((1 << 76) - 1))
    value = (value & ~(0x3 << 62)) | (0x2 << 62)
    return str(uuid.UUID(int=value))


def _job_id(operation: str, job: Job, settings: config.Settings) -> tuple[str, str]:
    if isinstance(job, tuple):
        return str(job[0]), str(job[1])
    if isinstance(job, str):
        return settings.job_namespace, job
    return settings.job_namespace, settings.job_name or f"lance_partitioned.{operation}"


class LineageRun:
    """The run of one operation; see the module docs."""

    def __init__(self, client: Any, operation: str, job: Job, run_id: str | None = None) -> None:
        self._client = client
        self.settings = config.settings()
        self.job_namespace, self.job_name = _job_id(operation, job, self.settings)
        self.operation = operation
        self.run_id = run_id or _uuid7()
        self.events: list[dict[str, Any]] = []
        self._done = False

    def event(
        self,
        event_type: str,
        inputs: Datasets = (),
        outputs: Datasets = (),
        run_facets: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """A run event as a JSON-ready dict."""
        now = datetime.datetime.now(datetime.timezone.utc)
        job_type = {
            "_producer": facets.PRODUCER,
            "_schemaURL": "https://openlineage.io/spec/facets/2-0-4/JobTypeJobFacet.json"
            "#/$defs/JobTypeJobFacet",
            "processingType": "BATCH",
            "integration": "LANCE_PARTITIONED",
            "jobType": self.operation.upper(),
        }
        return {
            "eventType": event_type,
            "eventTime": now.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "run": {"runId": self.run_id, "facets": run_facets or {}},
            "job": {
                "namespace": self.job_namespace,
                "name": self.job_name,
                "facets": {"jobType": job_type},
            },
            "inputs": list(inputs),
            "outputs": list(outputs),
            "producer": facets.PRODUCER,
            "schemaURL": f"{facets.OPENLINEAGE_SPEC}#/$defs/RunEvent",
        }

    def emit(self, event: dict[str, Any]) -> None:
        """Sends ``event`` through the client; logs (never raises) on failure."""
        self.events.append(event)
        try:
            self._client.emit(_client_event(event))
        except Exception as e:
            log.warning(
                "OpenLineage %s event of %s not emitted: %s", event["eventType"], self.job_name, e
            )

    def start(self, inputs: Datasets = (), outputs: Datasets = ()) -> None:
        self.emit(self.event("START", inputs, outputs))

    def complete(
        self,
        inputs: Datasets | Callable[[], Datasets] = (),
        outputs: Datasets | Callable[[], Datasets] = (),
    ) -> None:
        """Emits COMPLETE (once); callables are built here, failures logged."""
        self._end("COMPLETE", inputs, outputs, None)

    def fail(
        self,
        error: BaseException,
        inputs: Datasets | Callable[[], Datasets] = (),
        outputs: Datasets | Callable[[], Datasets] = (),
    ) -> None:
        """Emits FAIL (once) with an ``errorMessage`` facet."""
        self._end("FAIL", inputs, outputs, {"errorMessage": facets.error_facet(error)})

    def _end(
        self,
        kind: str,
        inputs: Datasets | Callable[[], Datasets],
        outputs: Datasets | Callable[[], Datasets],
        run_facets: dict[str, Any] | None,
    ) -> None:
        """The run's one end event (later calls do nothing)."""
        if self._done:
            return
        self._done = True
        ins = _safe(inputs) if callable(inputs) else inputs
        outs = _safe(outputs) if callable(outputs) else outputs
        self.emit(self.event(kind, ins, outs, run_facets))


def _client_event(event: dict[str, Any]) -> Any:
    """``event`` as the client's ``RunEvent`` (facets stay plain dicts, which its serializer
    writes as they are)."""
    from openlineage.client.event_v2 import (
        InputDataset,
        Job,
        OutputDataset,
        Run,
        RunEvent,
        RunState,
    )

    def datasets(cls: Any, role: str) -> list[Any]:
        key = f"{role}Facets"
        return [
            cls(
                namespace=d["namespace"],
                name=d["name"],
                facets=d.get("facets", {}),
                **{key: d.get(key, {})},
            )
            for d in event[f"{role}s"]
        ]

    return RunEvent(
        eventType=RunState(event["eventType"]),
        eventTime=event["eventTime"],
        run=Run(runId=event["run"]["runId"], facets=event["run"]["facets"]),
        job=Job(
            namespace=event["job"]["namespace"],
            name=event["job"]["name"],
            facets=event["job"]["facets"],
        ),
        inputs=datasets(InputDataset, "input"),
        outputs=datasets(OutputDataset, "output"),
        producer=event["producer"],
    )


def _safe(build: Callable[[], Datasets]) -> Datasets:
    try:
        return build()
    except Exception as e:  # lineage must never fail the operation
        log.warning("OpenLineage datasets not built: %s", e)
        return ()


class _Scope:
    """What an operation tells its run: the datasets of its START and of its end."""

    def __init__(self, run: LineageRun | None) -> None:
        self.run = run
        self.inputs: Callable[[], Datasets] = tuple
        self.outputs: Callable[[], Datasets] = tuple

    @property
    def active(self) -> bool:
        return self.run is not None


def begin(
    name: str,
    job: Job = None,
    *,
    inputs: Callable[[], Datasets] = tuple,
    outputs: Callable[[], Datasets] = tuple,
) -> LineageRun | None:
    """A run whose START is emitted now (with ``inputs()`` / ``outputs()``, built only when
    lineage is on); None when lineage is off. The caller completes or fails it."""
    client = config.client()
    if client is None:
        return None
    run = LineageRun(client, name, job)
    run.start(_safe(inputs), _safe(outputs))
    return run


def resume(name: str, job: Job, run_id: str) -> LineageRun | None:
    """The run ``run_id`` begun (START emitted) in another process, to be completed or failed
    here; None when lineage is off here."""
    client = config.client()
    if client is None:
        return None
    return LineageRun(client, name, job, run_id)


@contextmanager
def operation(
    name: str,
    job: Job = None,
    *,
    inputs: Callable[[], Datasets] = tuple,
    outputs: Callable[[], Datasets] = tuple,
) -> Iterator[_Scope]:
    """Runs an operation as one lineage run: START with ``inputs()``/``outputs()`` (built only
    when lineage is on), then COMPLETE with the datasets the body sets on the scope
    (``scope.inputs`` / ``scope.outputs``, callables), or FAIL when the body raises."""
    run = begin(name, job, inputs=inputs, outputs=outputs)
    if run is None:
        yield _Scope(None)
        return
    scope = _Scope(run)
    scope.inputs, scope.outputs = inputs, outputs
    try:
        yield scope
    except BaseException as e:
        run.fail(e, inputs, outputs)
        raise
    run.complete(scope.inputs, scope.outputs)
