"""Arguments of the wrong type fail typed.

The public API passes its arguments on to pyarrow and to the Rust extension, whose argument
conversion raises builtin ``TypeError``/``OverflowError``/``ValueError`` (``'str' object cannot
be interpreted as an integer``, ``can't convert negative int to unsigned``). :func:`typed_api`
turns those, when they come from the library itself, into the package's own
:class:`~lance_partitioned.exceptions.ArgumentTypeError` (a ``TypeError``) or
:class:`~lance_partitioned.exceptions.InvalidArgumentError` (a ``ValueError``), so callers
catch :class:`~lance_partitioned.exceptions.LancePartitionedError` for every bad input. An
exception raised by the caller's own code (an input generator, a callback) passes unchanged:
a traceback that runs through a frame outside the library, pyarrow and the standard library is
the caller's.
"""

from __future__ import annotations

import functools
import os
import sysconfig
from collections.abc import Callable
from types import TracebackType
from typing import Any, TypeVar

import pyarrow as pa

from lance_partitioned.exceptions import (
    ArgumentTypeError,
    InvalidArgumentError,
    LancePartitionedError,
)

F = TypeVar("F", bound=Callable[..., Any])
C = TypeVar("C", bound=type)


def _dirs(*paths: str) -> tuple[str, ...]:
    return tuple(os.path.normcase(os.path.realpath(p)) + os.sep for p in paths)


_PACKAGES = _dirs(os.path.dirname(__file__), os.path.dirname(pa.__file__))
_STDLIB = _dirs(sysconfig.get_paths()["stdlib"])
_THIRD_PARTY = _dirs(sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"])


def _in_library(filename: str) -> bool:
    """Whether code in `filename` is ours, pyarrow's or the standard library's."""
    if filename.startswith("<"):  # frozen standard-library modules; exec'd strings are not
        return filename.startswith("<frozen")
    if filename.startswith("pyarrow/"):  # pyarrow's Cython sources (types.pxi, lib.pyx)
        return True
    path = os.path.normcase(os.path.realpath(filename))
    if path.startswith(_PACKAGES):
        return True
    return path.startswith(_STDLIB) and not path.startswith(_THIRD_PARTY)


def _raised_by_caller(tb: TracebackType | None) -> bool:
    """Whether the traceback runs through code of the caller's (outside the library)."""
    while tb is not None:
        if not _in_library(tb.tb_frame.f_code.co_filename):
            return True
        tb = tb.tb_next
    return False


def _typed(e: Exception) -> Exception | None:
    """The package's exception for a builtin one raised by the library; None to keep it."""
    if isinstance(e, LancePartitionedError) or _raised_by_caller(e.__traceback__):
        return None
    if isinstance(e, (TypeError, AttributeError)):
        return ArgumentTypeError(f"wrong argument type: {e}")
    if isinstance(e, (OverflowError, ValueError)):
        return InvalidArgumentError(f"invalid argument: {e}")
    return None


def typed_api(fn: F) -> F:
    """Wraps a public function so that bad arguments raise the package's errors."""

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (TypeError, AttributeError, OverflowError, ValueError) as e:
            typed = _typed(e)
            if typed is None:
                raise
            raise typed from e

    return call  # type: ignore[return-value]


def typed_class(cls: C) -> C:
    """Applies :func:`typed_api` to a class's public methods (plain, class and static)."""
    for name, attr in list(vars(cls).items()):
        if name.startswith("_") and name != "__init__":
            continue
        if isinstance(attr, staticmethod):
            setattr(cls, name, staticmethod(typed_api(attr.__func__)))
        elif isinstance(attr, classmethod):
            setattr(cls, name, classmethod(typed_api(attr.__func__)))
        elif callable(attr) and not isinstance(attr, type):
            setattr(cls, name, typed_api(attr))
    return cls
