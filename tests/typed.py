"""Expecting the package's typed errors in tests, where a caught Rust panic or a bug
(`InternalError`, itself a `LancePartitionedError`) is never an acceptable outcome."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest

import lance_partitioned as lp


@contextlib.contextmanager
def raises_typed(
    cls: type[lp.LancePartitionedError] = lp.LancePartitionedError,
) -> Iterator[pytest.ExceptionInfo[lp.LancePartitionedError]]:
    """Like ``pytest.raises(cls)``, failing on an ``InternalError``."""
    with pytest.raises(cls) as info:
        yield info
    assert not isinstance(info.value, lp.InternalError), f"a panic or bug: {info.value}"


@contextlib.contextmanager
def typed_or_nothing() -> Iterator[None]:
    """Accepts success or a typed error; an ``InternalError`` propagates."""
    try:
        yield
    except lp.InternalError:
        raise
    except lp.LancePartitionedError:
        pass
