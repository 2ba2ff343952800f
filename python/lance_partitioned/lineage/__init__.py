"""OpenLineage events for every read, write and delete of a partitioned namespace.

Nothing is emitted, built or imported unless the ``openlineage-python`` client is configured
the standard way (see :mod:`lance_partitioned.lineage.config`). Then each operation
(``create``, ``write``, ``scan``, ``delete``, ``evolve``, ``update_schema``, distributed and
Spark writes, Spark reads) is one run: START, then COMPLETE or FAIL, with the namespace as
its input or output dataset and these facets:

- ``partitions`` (custom, schema shipped in this package): the partition spec as dimensions
  (source columns and transform) with a ``PARTITIONED BY (...)`` description, and every
  spec version under ``versions``;
- ``schema``, ``version`` (the ``__manifest`` version read or committed),
  ``lifecycleStateChange`` (CREATE, OVERWRITE, TRUNCATE, ALTER), ``outputStatistics``;
- ``subset`` (``BaseSubsetDatasetFacet`` 1-0-0): the partitions read or written (partition
  field -> value string form, the leaf's object id as ``identifier``), or their locations, or
  the filter's logical condition (see :mod:`lance_partitioned.lineage.facets`).

The job name and namespace are overridable per call (``lineage_job=``) and by settings.
"""

from lance_partitioned.lineage.config import Settings, configure, set_client, settings
from lance_partitioned.lineage.facets import PARTITIONS_SCHEMA_URL, partitions_schema
from lance_partitioned.lineage.run import Job

__all__ = [
    "PARTITIONS_SCHEMA_URL",
    "Job",
    "Settings",
    "configure",
    "enabled",
    "partitions_schema",
    "set_client",
    "settings",
]


def enabled() -> bool:
    """Whether operations emit lineage now."""
    from lance_partitioned.lineage.config import client

    return client() is not None
