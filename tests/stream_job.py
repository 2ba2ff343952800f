"""Subprocess entry point of the stream kill tests (tests/test_stream_kills.py): one driver
running a Structured Streaming query from a folder of parquet files into a namespace, one
file per micro-batch, until the folder is consumed (``availableNow``).

python stream_job.py INPUT URI CHECKPOINT HOW

HOW: ``sink`` (the data source's stream writer) or ``foreach_batch`` (``lps.write_batch``).
Prints ``done`` when the query ended. Test pause points (``LANCE_PARTITIONED_TEST_PAUSE``)
reach the commits, so the test can kill this process (and its JVM) around them.
"""

from __future__ import annotations

import os
import sys
import warnings

from pyspark.sql import SparkSession
from pyspark.sql.pandas.types import from_arrow_schema

import lance_partitioned as lp
import lance_partitioned.spark as lps


def main() -> None:
    folder, uri, checkpoint, how = sys.argv[1:5]
    os.environ["PYSPARK_PYTHON"] = sys.executable
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        spark = (
            SparkSession.builder.master("local[2]")
            .appName("lance-partitioned-stream-kills")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.shuffle.partitions", "2")
            .config("spark.driver.extraJavaOptions", "-XX:+UseSerialGC -XX:TieredStopAtLevel=1")
            .getOrCreate()
        )
    spark.sparkContext.setLogLevel("ERROR")
    lps.register(spark)
    schema = lp.PartitionedNamespace.open(uri).schema
    events = (
        spark.readStream.schema(from_arrow_schema(schema))
        .option("maxFilesPerTrigger", 1)
        .parquet(folder)
    )
    writer = events.writeStream.option("checkpointLocation", checkpoint).trigger(availableNow=True)
    if how == "sink":
        query = writer.format(lps.FORMAT).start(uri)
    else:
        query = writer.foreachBatch(lambda b, e: lps.write_batch(b, e, uri)).start()
    query.awaitTermination()
    print("done", flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
