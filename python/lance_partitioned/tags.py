"""Tags of a namespace handle: names for manifest versions (mixed into
:class:`~lance_partitioned.PartitionedNamespace`)."""

from __future__ import annotations

from lance_partitioned import _native
from lance_partitioned._arguments import typed_class
from lance_partitioned.exceptions import ArgumentTypeError, NamespaceNotFoundError
from lance_partitioned.options import version_arg


@typed_class
class Tags:
    """Names for manifest versions: ``as_of="name"`` reads a tagged version, and
    :meth:`expire` keeps every tagged version with all it reads, until the tag is deleted."""

    _ns: _native.Namespace

    def tag(self, name: str, version: int | None = None) -> int:
        """Names manifest ``version`` (the latest when ``None``) ``name`` and returns the
        version. Names use letters, digits, ``.``, ``-`` and ``_``; an existing tag is not
        moved (``InvalidArgumentError``: delete it first). The tag is a Lance tag of
        ``__manifest``."""
        _name_arg(name)
        if version is not None:
            version = version_arg(version, "version")
        return self._ns.create_tag(name, version)

    def delete_tag(self, name: str) -> None:
        """Removes the tag ``name`` (``NamespaceNotFoundError``, a ``FileNotFoundError``, when
        there is none); its version may then be expired."""
        _name_arg(name)
        self._ns.delete_tag(name)

    def _tagged(self, name: str) -> int:
        """The version the tag ``name`` names (``as_of="name"``)."""
        try:
            return self._ns.tag_version(name)
        except NamespaceNotFoundError:
            if name.isdigit():
                raise ArgumentTypeError(
                    f"as_of={name!r} names no tag; a manifest version is an int (as_of={name})"
                ) from None
            raise

    def tags(self) -> dict[str, int]:
        """Every tag and the manifest version it names, ordered by version."""
        return dict(self._ns.tags())


def _name_arg(name: object) -> None:
    if not isinstance(name, str):
        raise ArgumentTypeError(f"a tag name is a str, not {name!r}")
