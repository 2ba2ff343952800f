package io.lancepartitioned.spark;

import org.apache.spark.sql.api.java.UDF2;

/**
 * {@code bucket(n, value)}: the spec's {@code abs(murmur3(value)) % n}, with the absolute value
 * taken in 64 bits, so that Spark can cluster rows by a bucket partition field without sending
 * them through Python. The caller passes values already converted to the bytes' Java type
 * (strings cast to binary, dates as days, timestamps as microseconds).
 */
public final class Bucket implements UDF2<Integer, Object, Integer> {
  private static final long serialVersionUID = 1L;

  @Override
  public Integer call(Integer n, Object value) {
    return value == null ? null : of(n, Murmur3.of(value));
  }

  static int of(int n, int hash) {
    return (int) (Math.abs((long) hash) % n);
  }
}
