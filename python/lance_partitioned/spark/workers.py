"""Spark's Python workers: the check that they can run this package (one tiny probe task per
SparkSession, before the first write or read, so that a worker without ``lance_partitioned``
or with another version fails with one clear error instead of a JVM stack trace), and the
errors their tasks raise, given back their type on the driver."""

from __future__ import annotations

import os
import re
import sys
from typing import TYPE_CHECKING, Any

from lance_partitioned import exceptions
from lance_partitioned._native import __version__
from lance_partitioned.exceptions import InvalidArgumentError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

# The probe runs on the workers, where this package may be missing: it is compiled from source
# in a module of its own, so that Spark pickles it by value (a function of this module would
# be pickled by reference, and unpickling it would import lance_partitioned).
_PROBE_SOURCE = """
def probe(_rows):
    import sys
    try:
        import lance_partitioned
        return [(sys.executable, lance_partitioned.__version__, "")]
    except BaseException as e:
        return [(sys.executable, "", type(e).__name__ + ": " + str(e))]
"""

_CHECKED: set[str] = set()

_FIX = (
    "Install the same lance-partitioned wheel on every node's Python and point Spark at it: "
    "the PYSPARK_PYTHON environment variable, set before the SparkSession starts (with "
    "spark-submit also the spark.pyspark.python configuration), e.g. PYSPARK_PYTHON={driver} "
    "in local mode"
)


def _probe() -> Any:
    scope: dict[str, Any] = {"__name__": "lance_partitioned_worker_probe"}
    exec(compile(_PROBE_SOURCE, "<lance_partitioned worker probe>", "exec"), scope)
    return scope["probe"]


def check_workers(spark: SparkSession) -> None:
    """Raises ``InvalidArgumentError`` naming the worker interpreter, what it found and the fix
    when Spark's Python workers cannot import ``lance_partitioned`` at this version. Runs one
    task once per SparkSession (its application id)."""
    app = spark.sparkContext.applicationId
    if app in _CHECKED:
        return
    fix = _FIX.format(driver=sys.executable)
    # The interpreter PySpark asks the executors to start (from PYSPARK_PYTHON when the
    # context was created; "python3" from PATH otherwise).
    configured = getattr(spark.sparkContext, "pythonExec", None) or os.environ.get(
        "PYSPARK_PYTHON", "python3"
    )
    try:
        # One probe per core Spark knows of (capped), so that on a cluster the tasks are spread
        # over the executors and each node's interpreter answers.
        n = max(1, min(spark.sparkContext.defaultParallelism, 16))
        rows = spark.sparkContext.parallelize(range(n), n).mapPartitions(_probe()).collect()
    except Exception as e:
        # The worker interpreter itself could not start (or died): Spark names it.
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise InvalidArgumentError(
            f"Spark's Python workers could not run a probe task ({first[:300]}). {fix}"
        ) from None
    for executable, version, error in rows:
        worker = f"{configured} (running {executable})"
        if error:
            raise InvalidArgumentError(
                f"Spark's Python worker {worker} cannot import lance_partitioned "
                f"({error[:300]}); the driver runs lance-partitioned {__version__}. {fix}"
            )
        if version != __version__:
            raise InvalidArgumentError(
                f"Spark's Python worker {worker} has lance-partitioned {version}, the "
                f"driver {__version__}: every node must run the same version. {fix}"
            )
    _CHECKED.add(app)


_RAISED = re.compile(r"(?:lance_partitioned\.exceptions\.)?(\w+Error): ([^\n]*)")


def task_error(e: Exception) -> Exception:
    """The error a task raised, as this package's exception type when it is one of ours (Spark
    reports it as text inside its own exception), else ``e``."""
    for name, message in reversed(_RAISED.findall(str(e))):
        cls = getattr(exceptions, name, None)
        if isinstance(cls, type) and issubclass(cls, exceptions.LancePartitionedError):
            return cls(f"{message} (raised in a Spark task)")
    return e


def collect(frame: Any) -> list[Any]:
    """``frame.collect()``, a task's error raised with its own type (see :func:`task_error`)."""
    try:
        return list(frame.collect())
    except Exception as e:
        raise task_error(e) from e
