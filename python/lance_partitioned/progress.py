"""Progress of a local write (``PartitionedNamespace.write(..., progress=True)``): a rich
display on stderr of the rows, batches and bytes the native writer has pulled from the input
(the rows routed so far), then one line of what the write committed.

The input is wrapped, never copied: a table's record batches (or an Arrow stream's) are passed
on one by one by a generator behind ``pa.RecordBatchReader.from_batches`` and counted as the
writer pulls them. Disabled (the default), nothing is wrapped, imported or printed.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from types import TracebackType
from typing import TYPE_CHECKING, Any

import pyarrow as pa

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress, TaskID

    from lance_partitioned._native import WriteResult

__all__ = ["WriteProgress"]


class WriteProgress:
    """The progress display of one write (a context manager; inert unless ``enabled``)::

    with WriteProgress(enabled) as shown:
        result = native_write(shown.wrap(stream))
    shown.report(result)
    """

    def __init__(self, enabled: bool, console: Console | None = None) -> None:
        self.enabled = bool(enabled)
        self.rows = 0
        self.batches = 0
        self.bytes = 0
        self.total_rows: int | None = None
        self._console = console
        self._lock = threading.Lock()
        self._progress: Progress | None = None
        self._task: TaskID | None = None

    def __enter__(self) -> WriteProgress:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- the input ----------------------------------------------------------------------------

    def wrap(self, stream: Any) -> Any:
        """``stream`` (what ``_input.arrow_stream`` returns: a table, an Arrow stream object
        or an iterator of record batches) with every batch counted as the writer pulls it, and
        the display started. A table or an Arrow stream becomes a ``RecordBatchReader`` of its
        schema; an iterator stays an iterator (each batch keeps its own schema). Disabled:
        ``stream`` itself."""
        if not self.enabled:
            return stream
        wrapped: Any
        if isinstance(stream, pa.Table):
            self.total_rows = stream.num_rows
            wrapped = pa.RecordBatchReader.from_batches(
                stream.schema, self._counted(iter(stream.to_batches()))
            )
        elif hasattr(stream, "__arrow_c_stream__"):
            reader = pa.RecordBatchReader.from_stream(stream)
            wrapped = pa.RecordBatchReader.from_batches(reader.schema, self._counted(iter(reader)))
        else:
            wrapped = self._counted(iter(stream))
        self._start()
        return wrapped

    def _counted(self, batches: Iterator[Any]) -> Iterator[Any]:
        for batch in batches:
            if isinstance(batch, pa.RecordBatch):
                self._advance(batch.num_rows, batch.nbytes)
            yield batch

    def _advance(self, rows: int, size: int) -> None:
        with self._lock:
            self.rows += rows
            self.batches += 1
            self.bytes += size
            if self._progress is not None and self._task is not None:
                self._progress.update(self._task, completed=self.rows, detail=self._detail())

    def _detail(self) -> str:
        from rich.filesize import decimal

        batches = "batch" if self.batches == 1 else "batches"
        return f"{self.batches:,} {batches}, {decimal(self.bytes)}"

    # -- the display --------------------------------------------------------------------------

    def _start(self) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
        )

        if self._console is None:
            self._console = Console(stderr=True, highlight=False)
        self._progress = Progress(
            SpinnerColumn(),
            TextColumn("rows routed"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[detail]}"),
            TimeElapsedColumn(),
            console=self._console,
        )
        self._task = self._progress.add_task(
            "write", total=self.total_rows, completed=self.rows, detail=self._detail()
        )
        self._progress.start()

    def close(self) -> None:
        """Stops the display (showing the final counts); idempotent."""
        with self._lock:
            progress, self._progress = self._progress, None
        if progress is not None:
            if self._task is not None:
                total = self.rows if self.total_rows is None else self.total_rows
                progress.update(self._task, completed=self.rows, total=total, detail=self._detail())
            progress.stop()

    def report(self, result: WriteResult) -> None:
        """One line on what the write committed (partitions, files, bytes)."""
        if not self.enabled:
            return
        from rich.console import Console
        from rich.filesize import decimal

        self.close()
        console = self._console or Console(stderr=True, highlight=False)
        console.print(
            f"wrote {result.rows:,} rows to {result.partitions:,} partitions "
            f"({result.created:,} new, {result.rewritten:,} rewritten), {result.files:,} files, "
            f"{decimal(result.bytes)}; manifest version {result.manifest_version}",
            markup=False,
            soft_wrap=True,
        )
