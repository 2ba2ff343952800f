package io.lancepartitioned.spark;

import java.nio.charset.StandardCharsets;

/**
 * MurmurHash3 x86_32 with seed 0 over the bytes the Rust kernels hash: integers and floats as
 * their little-endian bytes at their own width, strings as UTF-8, binary as is. Several values
 * hash as the concatenation of their bytes (murmur3_multi), NULLs skipped.
 */
final class Murmur3 {
  private static final int C1 = 0xcc9e2d51;
  private static final int C2 = 0x1b873593;

  /** The running state of one hash: the mixed blocks, a partial block and the byte count. */
  private int h;
  private int tail;
  private int tailBytes;
  private int length;

  private Murmur3() {}

  private static int mixK1(int k) {
    return Integer.rotateLeft(k * C1, 15) * C2;
  }

  private static int mixH1(int h, int k) {
    return Integer.rotateLeft(h ^ mixK1(k), 13) * 5 + 0xe6546b64;
  }

  private static int fmix(int h, int length) {
    h ^= length;
    h ^= h >>> 16;
    h *= 0x85ebca6b;
    h ^= h >>> 13;
    h *= 0xc2b2ae35;
    return h ^ (h >>> 16);
  }

  /** The hash of one 4-byte value (int32, float32, date32). */
  static int ofInt(int v) {
    return fmix(mixH1(0, v), 4);
  }

  /** The hash of one 8-byte value (int64, float64, timestamps). */
  static int ofLong(long v) {
    return fmix(mixH1(mixH1(0, (int) v), (int) (v >>> 32)), 8);
  }

  /** The hash of the bytes {@code b}. */
  static int ofBytes(byte[] b) {
    Murmur3 m = new Murmur3();
    m.feedBytes(b);
    return m.finish();
  }

  /** The hash of one non-null value of a supported Java type. */
  static int of(Object v) {
    if (v instanceof byte[]) {
      return ofBytes((byte[]) v);
    } else if (v instanceof Long) {
      return ofLong((Long) v);
    } else if (v instanceof Integer) {
      return ofInt((Integer) v);
    }
    Murmur3 m = new Murmur3();
    m.feed(v);
    return m.finish();
  }

  /**
   * The hash of the concatenated bytes of the non-null {@code values}, or null when all are
   * null.
   */
  static Integer ofAll(Object[] values) {
    Murmur3 m = new Murmur3();
    boolean any = false;
    for (Object v : values) {
      if (v != null) {
        m.feed(v);
        any = true;
      }
    }
    return any ? m.finish() : null;
  }

  private void feed(Object v) {
    if (v instanceof byte[]) {
      feedBytes((byte[]) v);
    } else if (v instanceof Long) {
      feedLong((Long) v);
    } else if (v instanceof Integer) {
      feedInt((Integer) v);
    } else if (v instanceof Short) {
      feedByte((Short) v);
      feedByte((Short) v >>> 8);
    } else if (v instanceof Byte) {
      feedByte((Byte) v);
    } else if (v instanceof Double) {
      feedLong(Double.doubleToRawLongBits((Double) v));
    } else if (v instanceof Float) {
      feedInt(Float.floatToRawIntBits((Float) v));
    } else if (v instanceof String) {
      feedBytes(((String) v).getBytes(StandardCharsets.UTF_8));
    } else {
      throw new IllegalArgumentException(
          "lance-partitioned bucket key: cannot hash a " + v.getClass().getName());
    }
  }

  private void feedInt(int v) {
    if (tailBytes == 0) {
      h = mixH1(h, v);
      length += 4;
    } else {
      for (int i = 0; i < 4; i++) {
        feedByte(v >>> (8 * i));
      }
    }
  }

  private void feedLong(long v) {
    feedInt((int) v);
    feedInt((int) (v >>> 32));
  }

  private void feedByte(int b) {
    tail |= (b & 0xff) << (8 * tailBytes);
    length += 1;
    if (++tailBytes == 4) {
      h = mixH1(h, tail);
      tail = 0;
      tailBytes = 0;
    }
  }

  private void feedBytes(byte[] b) {
    int i = 0;
    while (tailBytes != 0 && i < b.length) {
      feedByte(b[i++]);
    }
    int blocksEnd = i + ((b.length - i) & ~3);
    length += blocksEnd - i;
    for (; i < blocksEnd; i += 4) {
      int k = (b[i] & 0xff) | (b[i + 1] & 0xff) << 8 | (b[i + 2] & 0xff) << 16 | b[i + 3] << 24;
      h = mixH1(h, k);
    }
    for (; i < b.length; i++) {
      feedByte(b[i]);
    }
  }

  private int finish() {
    int k = tail;
    int hh = h;
    if (tailBytes != 0) {
      hh ^= mixK1(k);
    }
    return fmix(hh, length);
  }
}
