"""Every default of a write, defined once, and the validation of write arguments.

The defaults the core crate also uses (rows per file, write concurrency, buffer budget, new
partitions) come from the native extension, which defines them; the Python-only ones (object
storage, Spark tasks) are defined here. The Python API (local writes, distributed writes, the
Spark writers) takes its defaults from here and passes every value to the extension.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from typing import Any, Literal

from lance_partitioned import _native
from lance_partitioned.exceptions import ArgumentTypeError, InvalidArgumentError

WriteMode = Literal["append", "overwrite", "overwrite_all"]
TransactionMode = Literal["strong", "weak"]

MAX_ROWS_PER_FILE: int = _native.MAX_ROWS_PER_FILE
"""Rows of one partition buffered before they are written as a file (the native default)."""
WRITE_CONCURRENCY: int = _native.WRITE_CONCURRENCY
"""Partitions a write (and a commit) writes concurrently on a local disk (the native
default)."""
OBJECT_STORE_WRITE_CONCURRENCY = 64
"""Partitions a write (and a commit) writes concurrently on object storage, where each
request waits on the network rather than the disk (measured on a concurrent S3 server: 2.04,
2.36 and 2.96 M rows/s with 8, 32 and 128 writes in flight)."""


def write_concurrency(root: str, concurrency: int | None) -> int:
    """``concurrency``, or the default for where ``root`` lives: object storage (a URI with a
    scheme other than ``file``) gets :data:`OBJECT_STORE_WRITE_CONCURRENCY`, a local path
    :data:`WRITE_CONCURRENCY`."""
    if concurrency is not None:
        return concurrency
    scheme, sep, _ = root.partition("://")
    remote = bool(sep) and scheme.lower() not in ("file", "file+uring", "memory")
    return OBJECT_STORE_WRITE_CONCURRENCY if remote else WRITE_CONCURRENCY


STAGE_CONCURRENCY = 4
"""Partitions one staged part (a Spark task) writes concurrently."""
ROUTE_THREADS: int | None = None
"""Threads that compute the partition values of one batch of a local write and route it.
``None``: every core for batches of 100,000 rows or more, else the calling thread (decided by
the native router, which sees each batch)."""
WRITE_BUFFER_BYTES: int = _native.WRITE_BUFFER_BYTES
"""Memory budget of a local write's buffers (the native default)."""
TASK_BUFFER_BYTES = 256 << 20
"""Memory budget of one staged part (one Spark task, in the Python worker)."""
SPARK_FORMAT = "lance-partitioned"
"""The name of the Spark data source."""
DEFAULT_MAX_NEW_PARTITIONS: int = _native.DEFAULT_MAX_NEW_PARTITIONS
"""Default of ``max_new_partitions``: the most partitions one write (one task of a
distributed write) may create, like Hive's limit on dynamic partitions per node (the native
default)."""


def check_sizes(**limits: Any) -> None:
    """Validates positive integer limits given as keywords (``max_rows_per_file=...``)."""
    for name, value in limits.items():
        if isinstance(value, bool) or not isinstance(value, int):
            raise ArgumentTypeError(f"{name} must be an int, not {value!r}")
        if value < 1:
            raise InvalidArgumentError(f"{name} must be positive, not {value}")


def check_limit(max_new_partitions: int | None) -> None:
    """Validates ``max_new_partitions`` (a positive int, or None for no limit)."""
    if max_new_partitions is not None:
        check_sizes(max_new_partitions=max_new_partitions)


def write_args(mode: str, transaction_mode: str | None) -> bool | None:
    """Validates a write's ``mode`` and ``transaction_mode``; returns the strong flag (None:
    the namespace's own mode)."""
    if mode not in ("append", "overwrite", "overwrite_all"):
        raise InvalidArgumentError(
            f"mode must be 'append', 'overwrite' or 'overwrite_all', not {mode!r}"
        )
    if transaction_mode is None:
        return None
    if transaction_mode not in ("strong", "weak"):
        raise InvalidArgumentError(
            f"transaction_mode must be 'strong' or 'weak', not {transaction_mode!r}"
        )
    return transaction_mode == "strong"


# A manifest version to read: its number, or the name of a tag (``None``: the latest).
AsOf = int | str | None


def version_arg(version: Any, name: str) -> int:
    """A manifest version argument: a positive int."""
    if isinstance(version, bool) or not isinstance(version, int):
        raise ArgumentTypeError(f"{name} must be a manifest version (an int), not {version!r}")
    if version < 1:
        raise InvalidArgumentError(f"{name} must be a manifest version >= 1, not {version}")
    return version


def columns_arg(columns: Any) -> list[str] | None:
    """``columns`` as a list of names (a single string is a mistake, not a list of letters)."""
    if columns is None:
        return None
    if isinstance(columns, (str, bytes)) or not isinstance(columns, Iterable):
        raise InvalidArgumentError(
            f"columns must be a list of column names, not {type(columns).__name__} {columns!r}"
        )
    cols = list(columns)
    for c in cols:
        if not isinstance(c, str):
            raise InvalidArgumentError(f"column names must be strings, not {c!r}")
    return cols


def namespace_uri(root: Any) -> str:
    """A namespace root: local paths become absolute; URIs pass through."""
    if not isinstance(root, str) or not root.strip():
        raise InvalidArgumentError(f"root must be a non-empty path or URI, not {root!r}")
    if "://" in root:
        return root
    return os.path.abspath(root)


StorageOptions = Mapping[str, str]
"""Object-store options (Lance's keys: ``aws_endpoint``, ``aws_region``,
``aws_access_key_id``, ``aws_secret_access_key``, ``allow_http``, ``google_service_account``,
``azure_storage_account_name``, ...). Without them the standard ``AWS_*`` / ``GOOGLE_*`` /
``AZURE_*`` environment variables apply."""


def storage_options_arg(options: Any) -> dict[str, str] | None:
    """Checks storage options: a mapping of string keys to string values (booleans and
    numbers are accepted and written the way Lance reads them)."""
    if options is None:
        return None
    if not isinstance(options, Mapping):
        raise InvalidArgumentError(
            f"storage_options must be a dict of strings, not {type(options).__name__}"
        )
    out: dict[str, str] = {}
    for key, value in options.items():
        if not isinstance(key, str) or not key:
            raise InvalidArgumentError(f"storage option keys must be strings, not {key!r}")
        if isinstance(value, bool):
            out[key] = "true" if value else "false"
        elif isinstance(value, (str, int, float)):
            out[key] = str(value)
        else:
            # The value may be a secret: name only the key and the type.
            raise InvalidArgumentError(
                f"storage option {key!r} must be a string, not {type(value).__name__}"
            )
    return out


# Object-store options the Spark data source accepts one by one (besides the JSON
# ``storage_options`` option): every key with these prefixes, and these generic keys.
_STORE_OPTION_PREFIXES = ("aws_", "google_", "gcs_", "azure_")
_STORE_OPTION_KEYS = frozenset(
    {
        "allow_http",
        "allow_invalid_certificates",
        "connect_timeout",
        "timeout",
        "client_max_retries",
        "client_retry_timeout",
        "proxy_url",
        "region",
        "endpoint",
        "access_key_id",
        "secret_access_key",
        "session_token",
        "virtual_hosted_style_request",
    }
)


def storage_options_from(options: Mapping[str, str]) -> dict[str, str] | None:
    """The storage options in a Spark data source's options: the ``storage_options`` option
    (a JSON object), then single keys (``aws_endpoint``, ``allow_http``, ...) on top."""
    out: dict[str, str] = {}
    text = options.get("storage_options")
    if text:
        try:
            parsed = json.loads(text)
        except ValueError:
            raise InvalidArgumentError("option 'storage_options' must be a JSON object") from None
        out.update(storage_options_arg(parsed) or {})
    for key, value in options.items():
        k = key.lower()
        if k.startswith(_STORE_OPTION_PREFIXES) or k in _STORE_OPTION_KEYS:
            out[k] = value
    return out or None
