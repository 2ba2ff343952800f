"""Directory trees of data files on a local disk or an object store, through pyarrow's file
systems: the file system of a URI (with the same ``storage_options`` keys as a namespace),
and listing a tree."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Literal
from urllib.parse import urlsplit

import pyarrow.fs as pafs

from lance_partitioned.exceptions import InvalidArgumentError, StorageError

__all__ = ["filesystem", "list_files", "remove_tree"]

_TRUE = ("1", "true", "yes", "on")


def filesystem(uri: str, storage_options: Mapping[str, str] | None) -> tuple[pafs.FileSystem, str]:
    """(file system, path inside it) of a local path or ``scheme://`` URI. For ``s3://`` the
    namespace's storage option keys apply (``aws_endpoint``, ``aws_region``,
    ``aws_access_key_id``, ``aws_secret_access_key``, ``aws_session_token``, ``allow_http``);
    other schemes use pyarrow's defaults and the standard environment variables."""
    if not isinstance(uri, str) or not uri.strip():
        raise InvalidArgumentError(f"expected a non-empty path or URI, not {uri!r}")
    opts = dict(storage_options or {})
    if "://" not in uri or uri.startswith("file://"):
        path = urlsplit(uri).path if uri.startswith("file://") else uri
        return pafs.LocalFileSystem(), os.path.abspath(path)
    parts = urlsplit(uri)
    path = f"{parts.netloc}{parts.path}".rstrip("/")
    try:
        if parts.scheme in ("s3", "s3a"):
            endpoint = opts.get("aws_endpoint") or opts.get("endpoint")
            scheme: Literal["http", "https"] = "https"
            if endpoint and "://" in endpoint:
                given, endpoint = endpoint.split("://", 1)
                scheme = "http" if given == "http" else "https"
            elif endpoint and opts.get("allow_http", "").lower() in _TRUE:
                scheme = "http"
            s3 = pafs.S3FileSystem(
                access_key=opts.get("aws_access_key_id"),
                secret_key=opts.get("aws_secret_access_key"),
                session_token=opts.get("aws_session_token"),
                region=opts.get("aws_region") or opts.get("region"),
                endpoint_override=endpoint,
                scheme=scheme,
                connect_timeout=10,
                request_timeout=30,
            )
            return s3, path
        fs, inner = pafs.FileSystem.from_uri(uri)
        return fs, inner
    except (OSError, ValueError) as e:
        raise StorageError(f"cannot open {uri}: {e}") from None


def list_files(fs: pafs.FileSystem, root: str) -> list[str]:
    """Every file under ``root`` (relative paths, sorted)."""
    try:
        info = fs.get_file_info(root)
        if info.type == pafs.FileType.NotFound:
            raise InvalidArgumentError(f"{root} does not exist")
        if info.type != pafs.FileType.Directory:
            raise InvalidArgumentError(f"{root} is not a directory")
        found = fs.get_file_info(pafs.FileSelector(root, recursive=True))
    except OSError as e:
        raise StorageError(f"cannot list {root}: {e}") from None
    base = root.rstrip("/") + "/"
    return sorted(
        f.path[len(base) :]
        for f in found
        if f.type == pafs.FileType.File and f.path.startswith(base)
    )


def remove_tree(fs: pafs.FileSystem, root: str) -> None:
    """Removes ``root`` and everything under it (missing: nothing to do)."""
    try:
        if fs.get_file_info(root).type != pafs.FileType.NotFound:
            fs.delete_dir(root)
    except OSError as e:
        raise StorageError(f"cannot remove {root}: {e}") from None
