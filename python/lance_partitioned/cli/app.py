"""The ``lance-partitioned`` click group, the options every command shares, and error
handling: an error of ours, a usage error or a file the OS refused is one line
``error: <message>`` on stderr and exit code 2, never a traceback."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import click

from lance_partitioned.cli.params import key_values
from lance_partitioned.exceptions import LancePartitionedError

if TYPE_CHECKING:
    from lance_partitioned.namespace import PartitionedNamespace

__all__ = [
    "EXIT_ERROR",
    "EXIT_INTERRUPTED",
    "CliError",
    "as_of_option",
    "cli",
    "filter_option",
    "json_option",
    "namespace_options",
    "open_namespace",
    "run",
    "storage_options",
]

EXIT_ERROR = 2
"""Exit code of every expected error: ours, usage, bad values, files the OS refused."""
EXIT_INTERRUPTED = 130

F = TypeVar("F", bound=Callable[..., Any])


class CliError(click.ClickException):
    """An error a command reports as one line (exit code 2)."""

    exit_code = EXIT_ERROR


CONTEXT = {"help_option_names": ["-h", "--help"], "max_content_width": 100}


@click.group(context_settings=CONTEXT)
@click.version_option(package_name="lance-partitioned", prog_name="lance-partitioned")
def cli() -> None:
    """Inspect, query and maintain Lance partitioned namespaces.

    Every command takes the namespace URI (a directory, or s3://, gs://, az://) first,
    --storage-option KEY=VALUE (repeatable) for object stores, and --json for one
    machine-readable JSON document on stdout. Errors are one line on stderr ("error: ...")
    and exit code 2. `lance-partitioned COMMAND --help` describes each command.
    """


def storage_options(f: F) -> F:
    """``--storage-option KEY=VALUE`` (repeatable), passed as the ``storage_options`` dict."""
    return click.option(
        "--storage-option",
        "storage_options",
        multiple=True,
        metavar="KEY=VALUE",
        callback=key_values,
        help="Object-store option (aws_endpoint, aws_region, allow_http, ...); repeatable.",
    )(f)


def json_option(f: F) -> F:
    """``--json``: one JSON document on stdout, nothing else there."""
    return click.option(
        "--json", "as_json", is_flag=True, help="Print one JSON document on stdout instead."
    )(f)


class _VersionOrTag(click.ParamType[Any]):
    """A manifest version number (>= 1) or a tag name."""

    name = "version"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, int) or not str(value).isdigit():
            return value
        if int(value) < 1:
            self.fail(f"a manifest version is >= 1, not {value}", param, ctx)
        return int(value)


def as_of_option(f: F) -> F:
    """``--as-of VERSION``: read the namespace at that manifest version (or tag)."""
    return click.option(
        "--as-of",
        type=_VersionOrTag(),
        default=None,
        metavar="VERSION",
        help="Read at this manifest version or tag (default: the latest).",
    )(f)


def filter_option(f: F) -> F:
    """``--filter SQL``."""
    return click.option(
        "--filter",
        "filter_",
        default=None,
        metavar="SQL",
        help="SQL filter over namespace columns (DataFusion dialect), e.g. \"country = 'US'\".",
    )(f)


def namespace_options(f: F) -> F:
    """The namespace ``URI`` argument, ``--storage-option`` and ``--json``."""
    return click.argument("uri")(storage_options(json_option(f)))


def open_namespace(uri: str, options: dict[str, str] | None) -> PartitionedNamespace:
    """The namespace at ``uri`` (its errors become one-line errors in :func:`run`)."""
    from lance_partitioned.namespace import PartitionedNamespace

    return PartitionedNamespace.open(uri, storage_options=options)


_NO_ARGS_HELP: type[click.UsageError] | None = getattr(click.exceptions, "NoArgsIsHelpError", None)
"""What click (8.2+) raises for a bare ``lance-partitioned``: its message is the help."""


def _one_line(message: str) -> str:
    return "; ".join(line.strip() for line in str(message).splitlines() if line.strip())


def _fail(message: str) -> int:
    print(f"error: {_one_line(message)}", file=sys.stderr, flush=True)
    return EXIT_ERROR


def run(argv: Sequence[str] | None = None) -> int:
    """Runs the command line on ``argv`` (default: ``sys.argv[1:]``); returns the exit code.
    Unexpected exceptions propagate (with their traceback)."""
    try:
        rv = cli.main(
            args=list(argv) if argv is not None else None,
            prog_name="lance-partitioned",
            standalone_mode=False,
        )
    except click.UsageError as e:
        if _NO_ARGS_HELP is not None and isinstance(e, _NO_ARGS_HELP):  # no command given
            click.echo(e.format_message(), err=True)
            return EXIT_ERROR
        command = e.ctx.command_path if e.ctx is not None else "lance-partitioned"
        return _fail(f"{e.format_message()} (see {command} --help)")
    except click.ClickException as e:
        return _fail(e.format_message())
    except click.exceptions.Abort:
        print("error: interrupted", file=sys.stderr, flush=True)
        return EXIT_INTERRUPTED
    except LancePartitionedError as e:
        return _fail(str(e))
    except OSError as e:  # --output into a missing directory, a PNG we may not write, ...
        detail = e.strerror or str(e)
        return _fail(f"{e.filename}: {detail}" if e.filename else detail)
    return rv if isinstance(rv, int) else 0
