"""OpenLineage dataset names of namespaces and their leaves (OpenLineage's naming for files
and object stores): a local directory is namespace ``file`` with its absolute path as the
name; ``s3://bucket/a/b`` is namespace ``s3://bucket`` and name ``a/b`` (likewise ``gs``,
``az``, ``abfss`` and any other ``scheme://authority/path``)."""

from __future__ import annotations

import os
from urllib.parse import urlsplit

__all__ = ["dataset_id", "location_uri"]


def dataset_id(root: str) -> tuple[str, str]:
    """(namespace, name) of the dataset rooted at ``root``."""
    if root.startswith("file://"):
        return "file", os.path.abspath(urlsplit(root).path)
    if "://" not in root:
        return "file", os.path.abspath(root)
    parts = urlsplit(root)
    return f"{parts.scheme}://{parts.netloc}", parts.path.strip("/")


def location_uri(root: str, location: str) -> str:
    """The full URI (or absolute path) of a leaf's directory ``location`` under ``root``."""
    namespace, name = dataset_id(root)
    if namespace == "file":
        return f"{name.rstrip('/')}/{location}"
    return f"{namespace}/{name}/{location}" if name else f"{namespace}/{location}"
