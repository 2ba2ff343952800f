package io.lancepartitioned.spark;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.api.java.UDF2;

/**
 * {@code multi_bucket(n, struct(values...))}: the spec's {@code abs(murmur3_multi(values)) % n}
 * (the hash of the non-null values' concatenated bytes; NULL when every value is NULL).
 */
public final class MultiBucket implements UDF2<Integer, Row, Integer> {
  private static final long serialVersionUID = 1L;

  @Override
  public Integer call(Integer n, Row values) {
    Object[] vs = new Object[values.length()];
    for (int i = 0; i < vs.length; i++) {
      vs[i] = values.get(i);
    }
    Integer hash = Murmur3.ofAll(vs);
    return hash == null ? null : Bucket.of(n, hash);
  }
}
