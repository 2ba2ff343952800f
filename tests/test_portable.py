"""The portable (non-AVX2) loops give the same answers as the dispatched ones.

The SIMD level is chosen once per process, so the portable run happens in a subprocess with
LANCE_PARTITIONED_PORTABLE=1.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

SCRIPT = r"""
import json, sys
import pyarrow as pa
from lance_partitioned import kernels as k
vals = [((i * 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF) - 2**63 for i in range(5003)]
vals += [-2089875627, 2841062569, None]
i64 = pa.array(vals, pa.int64())
i32 = pa.array([None if v is None else (v & 0xFFFFFFFF) - (1 << 31) for v in vals], pa.int32())
out = {"level": k.simd_level()}
for name, arr in (("i64", i64), ("i32", i32), ("u64", i64.cast(pa.uint64(), safe=False))):
    out[name] = k.murmur3(arr).to_pylist()
    for n in (1, 16, 1000, 2**31 - 1):
        out[f"{name}-{n}"] = k.bucket(arr, n).to_pylist()
json.dump(out, sys.stdout)
"""


def run(portable: bool) -> dict[str, object]:
    env = dict(os.environ)
    env.pop("LANCE_PARTITIONED_PORTABLE", None)
    if portable:
        env["LANCE_PARTITIONED_PORTABLE"] = "1"
    res = subprocess.run(
        [sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, check=True
    )
    result: dict[str, object] = json.loads(res.stdout)
    return result


def cpu_has_avx2() -> bool:
    """AVX2 in the CPU flags the kernel reports (Linux), independently of our detection."""
    with open("/proc/cpuinfo") as f:
        return any(
            line.startswith("flags") and "avx2" in line.split(":", 1)[1].split() for line in f
        )


def test_portable_equals_dispatched() -> None:
    portable = run(True)
    dispatched = run(False)
    assert portable.pop("level") == "portable"
    # The comparison is only worth something when the dispatched run took the SIMD path.
    assert dispatched.pop("level") == ("avx2" if cpu_has_avx2() else "portable")
    assert portable.keys() == dispatched.keys()
    for key in portable:
        assert portable[key] == dispatched[key], key
