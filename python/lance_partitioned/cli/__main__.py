"""``python -m lance_partitioned.cli``: the ``lance-partitioned`` command line."""

from lance_partitioned.cli import main

raise SystemExit(main())
