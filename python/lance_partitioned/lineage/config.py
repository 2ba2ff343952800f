"""Whether lineage is on, and the OpenLineage client that emits it.

Lineage is on when the ``openlineage-python`` client is configured the standard way: the
``OPENLINEAGE_URL`` or ``OPENLINEAGE_CONFIG`` environment variables, any
``OPENLINEAGE__TRANSPORT...`` variable, or an ``openlineage.yml`` in the working directory or
in ``~/.openlineage/``; or when :func:`set_client` gave a client. ``OPENLINEAGE_DISABLED=true``
turns it off. When it is off nothing is built or emitted and the client is never imported
(install it with ``pip install 'lance-partitioned[lineage]'``).

Settings (environment, or :func:`configure`):

- ``OPENLINEAGE_NAMESPACE``: the job namespace (default ``default``);
- ``LANCE_PARTITIONED_LINEAGE_JOB``: the job name of every operation (default
  ``lance_partitioned.<operation>``, e.g. ``lance_partitioned.write``);
- ``LANCE_PARTITIONED_LINEAGE_MAX_PARTITIONS`` (default 100) and
  ``LANCE_PARTITIONED_LINEAGE_MAX_LOCATIONS`` (default 100): the most partitions, then
  locations, a subset facet lists before it falls back to the filter's logical condition.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from lance_partitioned.exceptions import InvalidArgumentError

__all__ = ["Settings", "client", "configure", "set_client", "settings"]

log = logging.getLogger("lance_partitioned.lineage")

DEFAULT_MAX_PARTITIONS = 100
DEFAULT_MAX_LOCATIONS = 100
MAX_CONDITION_COMPARES = 1000
"""The most comparisons a logical subset condition holds (larger filters get none)."""


@dataclass(frozen=True)
class Settings:
    """Lineage settings (see the module docs)."""

    job_namespace: str = "default"
    job_name: str | None = None
    max_partitions: int = DEFAULT_MAX_PARTITIONS
    max_locations: int = DEFAULT_MAX_LOCATIONS


_overrides: dict[str, Any] = {}
_explicit_client: Any = None
_clients: dict[tuple[Any, ...], Any] = {}
_warned = False


def _int_env(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        log.warning("ignoring %s=%r: not an integer", name, raw)
        return default
    return max(value, 0)


def settings() -> Settings:
    """The settings in force: :func:`configure` over the environment over the defaults."""
    base = Settings(
        job_namespace=os.environ.get("OPENLINEAGE_NAMESPACE", "default"),
        job_name=os.environ.get("LANCE_PARTITIONED_LINEAGE_JOB") or None,
        max_partitions=_int_env("LANCE_PARTITIONED_LINEAGE_MAX_PARTITIONS", DEFAULT_MAX_PARTITIONS),
        max_locations=_int_env("LANCE_PARTITIONED_LINEAGE_MAX_LOCATIONS", DEFAULT_MAX_LOCATIONS),
    )
    return replace(base, **_overrides)


def configure(
    *,
    job_namespace: str | None = None,
    job_name: str | None = None,
    max_partitions: int | None = None,
    max_locations: int | None = None,
) -> Settings:
    """Overrides settings for this process (``None`` leaves one as it is); returns them."""
    for name, value in (("max_partitions", max_partitions), ("max_locations", max_locations)):
        if value is not None and (not isinstance(value, int) or value < 0):
            raise InvalidArgumentError(f"{name} must be a non-negative int, got {value!r}")
    given: dict[str, object] = {
        "job_namespace": job_namespace,
        "job_name": job_name,
        "max_partitions": max_partitions,
        "max_locations": max_locations,
    }
    _overrides.update({k: v for k, v in given.items() if v is not None})
    return settings()


def set_client(client: Any) -> None:
    """Emits through ``client`` (an ``openlineage.client.OpenLineageClient``) from now on,
    whatever the environment says; ``None`` goes back to the standard configuration."""
    global _explicit_client
    _explicit_client = client


def _configured() -> tuple[Any, ...] | None:
    """The standard configuration in force, as a cache key; None when there is none."""
    env = os.environ
    if env.get("OPENLINEAGE_DISABLED", "").strip().lower() == "true":
        return None
    keys = tuple(
        sorted(
            (k, v)
            for k, v in env.items()
            if k in ("OPENLINEAGE_URL", "OPENLINEAGE_CONFIG", "OPENLINEAGE_API_KEY")
            or k.startswith("OPENLINEAGE__")
        )
    )
    files = tuple(
        str(p)
        for p in (Path.cwd() / "openlineage.yml", Path.home() / ".openlineage" / "openlineage.yml")
        if p.is_file()
    )
    if not keys and not files:
        return None
    return (keys, files)


def client() -> Any:
    """The client to emit through, or None when lineage is off."""
    global _warned
    if _explicit_client is not None:
        return _explicit_client
    key = _configured()
    if key is None:
        return None
    if key not in _clients:
        try:
            from openlineage.client import OpenLineageClient
        except ImportError:
            if not _warned:
                log.warning(
                    "OpenLineage is configured but openlineage-python is not installed: "
                    "no lineage is emitted (pip install 'lance-partitioned[lineage]')"
                )
                _warned = True
            return None
        try:
            _clients[key] = OpenLineageClient()
        except Exception as e:  # a bad configuration must not fail the operation
            log.warning("cannot create the OpenLineage client (%s): no lineage is emitted", e)
            return None
    return _clients[key]
