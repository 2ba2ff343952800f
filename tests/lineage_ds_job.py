"""A Spark job writing through the Data Source with lineage configured in the environment the
driver's JVM starts with (run by tests/test_lineage.py in its own process)."""

from __future__ import annotations

import sys

from pyspark.sql import SparkSession

import lance_partitioned as lp
import lance_partitioned.spark as lps


def main(uri: str) -> None:
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("lineage-data-source")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    lps.register(spark)
    spec = lp.PartitionSpec([lp.PartitionField("country", "country", lp.Identity())])
    df = spark.createDataFrame([("US", 1), ("DE", 2), ("US", 3)], "country string, n long")
    (
        df.write.format("lance-partitioned")
        .option("spec", lps.spec_option(spec, df))
        .option("lineage_job", "ds_ingest")
        .mode("append")
        .save(uri)
    )
    spark.stop()


if __name__ == "__main__":
    main(sys.argv[1])
