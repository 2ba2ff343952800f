"""The maintenance operations of a namespace handle: ``optimize``, ``expire``, ``cleanup`` and
``repair`` (mixed into :class:`~lance_partitioned.PartitionedNamespace`)."""

from __future__ import annotations

import datetime

from lance_partitioned import _native
from lance_partitioned._arguments import typed_class
from lance_partitioned.exceptions import ArgumentTypeError, InvalidArgumentError
from lance_partitioned.options import check_sizes, write_concurrency


@typed_class
class Maintenance:
    """Keeping a namespace healthy: compaction, expiry of old versions, removal of what
    failed writes left, repair of a manifest another tool rewrote."""

    _ns: _native.Namespace

    def refresh(self) -> bool:
        """Reloads the manifest if another writer moved it (the handle's own)."""
        raise NotImplementedError

    def optimize(
        self,
        *,
        filter: str | None = None,
        target_rows_per_file: int | None = None,
        min_files: int = 2,
        dry_run: bool = False,
        concurrency: int | None = None,
    ) -> _native.OptimizeResult:
        """Compacts the small files of the partitions ``filter`` selects (all by default).

        In every selected partition, files with fewer than ``target_rows_per_file`` rows are
        rewritten into files of up to that many rows (Lance's compaction: deleted rows are
        dropped on the way; ``None``: the namespace's
        ``lance_partitioned.partition.target_rows_per_file``, else ``MAX_ROWS_PER_FILE``, the
        target of the compaction after writes too); a partition is compacted only when at
        least ``min_files`` of its files would be. Atomic like a write: every compacted
        partition becomes visible in one manifest commit. A concurrent append to a partition
        being compacted is rebased, and a partition whose files a concurrent commit replaced
        is compacted again from what is there, so nothing is lost or duplicated; readers of
        older versions (``as_of``) keep reading the files they named until :meth:`expire`
        removes them. A partition carrying
        the namespace's declared indexes is compacted and its indexes built again over the new
        files; one whose leaf table has indexes the namespace does not declare (made by another
        tool) is left alone (``skipped_indexed``). With a sort order, every other file whose rows
        are out of the order is rewritten sorted too (``resorted``). In strong mode the selected
        partitions' ``table_version`` rows beyond ``lance_partitioned.manifest.versions_kept``
        go too, in one more manifest commit (``version_rows_removed``; commits keep up to twice
        the limit per partition they change), and the selected partitions whose read version
        has no column statistics (written by another tool or an older release) are read once
        and get them, in one more manifest commit (``stats_recorded``), so reads can skip
        them. The declared indexes (:meth:`create_index`) of the selected partitions that are
        missing or do not cover every row are built again, in one more manifest commit
        (``indexes_refreshed``). ``dry_run`` only reports what would be done.
        """
        if filter is not None and (not isinstance(filter, str) or not filter.strip()):
            raise InvalidArgumentError("optimize's filter must be a non-empty SQL string or None")
        conc = write_concurrency(self._ns.root, concurrency)
        check_sizes(min_files=min_files, concurrency=conc)
        if target_rows_per_file is not None:
            check_sizes(target_rows_per_file=target_rows_per_file)
        result = self._ns.optimize(
            filter,
            target_rows_per_file=target_rows_per_file,
            min_files=min_files,
            dry_run=bool(dry_run),
            strong=None,
            concurrency=conc,
        )
        self.refresh()
        return result

    def expire(
        self,
        *,
        older_than: datetime.timedelta | float | None = None,
        retain_versions: int | None = None,
        dry_run: bool = False,
    ) -> _native.ExpireResult:
        """Removes old versions: ``__manifest`` versions past the retention, then every leaf
        version and data file that only those versions read.

        A manifest version is kept when it is the latest, tagged, younger than
        ``older_than`` (a ``timedelta`` or seconds) or among the last ``retain_versions``;
        with both rules, a version goes only when both let it go; with neither, versions
        older than 7 days go. Every kept version stays readable with ``snapshot(version)``
        (``as_of``); reading a removed one raises ``NotFoundError``. Writes in flight are not
        affected (their files are named by no version yet); files of failed writes are
        :meth:`cleanup`'s job. ``dry_run`` reports what would go.
        """
        seconds: float | None
        if older_than is None:
            seconds = None if retain_versions is not None else 7 * 86400.0
        elif isinstance(older_than, datetime.timedelta):
            seconds = older_than.total_seconds()
        elif isinstance(older_than, (int, float)) and not isinstance(older_than, bool):
            seconds = float(older_than)
        else:
            raise InvalidArgumentError(
                f"older_than must be a datetime.timedelta or seconds, not {older_than!r}"
            )
        if seconds is not None and not (seconds >= 0 and seconds != float("inf")):
            raise InvalidArgumentError("older_than must be a non-negative, finite duration")
        if retain_versions is not None:
            check_sizes(retain_versions=retain_versions)
        result = self._ns.expire(
            older_than_seconds=seconds, retain_versions=retain_versions, dry_run=bool(dry_run)
        )
        self.refresh()
        return result

    def cleanup(
        self,
        older_than: datetime.timedelta = datetime.timedelta(days=1),
        *,
        dry_run: bool = False,
        retention_check: bool = True,
    ) -> _native.CleanupResult:
        """Removes what failed writes left behind, all of it invisible to readers:

        - leaf tables no ``__manifest`` version references (partitions created by a write that
          died before its manifest commit);
        - in live partitions, detached versions no manifest version records (neither as a
          ``read_version`` nor as a ``table_version`` row), then the data files no remaining
          version names (rows a dead write added to existing partitions);
        - plans that the tasks of a stream's micro-batch shared, left by runs that never
          committed (``_lance_partitioned/plans/``).

        Only files older than ``older_than`` are touched, so a write in progress is safe; keep
        the grace period longer than your longest write. Every version any manifest version
        (old or new) reads stays, so ``as_of`` reads keep working.

        A deleting cleanup refuses a grace period under one hour (the retention floor, as
        Delta's ``VACUUM`` has one) unless ``retention_check=False``. Whatever the grace period,
        an operation whose files a cleanup removed fails at its commit with
        :class:`CommitConflictError` and makes nothing visible.
        """
        if not isinstance(older_than, datetime.timedelta) or older_than < datetime.timedelta(0):
            raise InvalidArgumentError("older_than must be a non-negative datetime.timedelta")
        if not isinstance(retention_check, bool):
            raise ArgumentTypeError(f"retention_check must be a bool, not {retention_check!r}")
        return self._ns.cleanup(older_than.total_seconds(), bool(dry_run), retention_check)

    def repair(self) -> list[str]:
        """Restores manifest columns another tool dropped (pylance's DirectoryNamespace drops
        ``read_version`` and ``partition_field_*`` whenever it writes the manifest): partition
        values come back from each namespace's ``partition.<field_id>`` property, read versions
        from the ``table_version`` rows. Returns the restored columns (empty if none were
        missing)."""
        restored = self._ns.repair()
        self.refresh()
        return restored
