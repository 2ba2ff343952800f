"""A job submitted with ``spark-submit --archives env.tar.gz#env`` (the cluster test): its
executors run ``./env/bin/python`` from the unpacked archive, which holds the wheel.

    spark-submit ... archive_job.py S3_OPTIONS_JSON URI
"""

from __future__ import annotations

import json
import sys

from pyspark.sql import SparkSession

import lance_partitioned as lp
import lance_partitioned.spark as lps

options = json.loads(sys.argv[1])
uri = sys.argv[2]
spark = SparkSession.builder.getOrCreate()
spark.sparkContext.setLogLevel("ERROR")
df = spark.range(0, 1000, 1, 4).selectExpr("id", "cast(id % 3 as string) as c")
spec = lp.PartitionSpec([lp.PartitionField("c", source="c", transform=lp.Identity())])
res = lps.write(df, uri, spec=spec, storage_options=options)
got = lp.PartitionedNamespace.open(uri, storage_options=options).to_table().num_rows
print(f"RESULT {res.rows} {got}", flush=True)
spark.stop()
