"""Reads Zarr v3 arrays written by offset-codec's `write_zarr` example (zarrs + our codec) with
zarr-python and the reference Python codec in this folder (`offset_codec.py`, the one that made
the fixtures), and checks every element against the fixture formula v[i0, i1] = (i0 << 8) | i1.

Usage: python read_back.py <dir written by write_zarr>
Prints one line per store: "<store> OK" or "<store> FAIL <reason>"; exits 1 on any failure.
Pinned environment (as for the fixtures): zarr==3.1.6 numcodecs==0.16.6 numpy==2.4.6.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy as np  # noqa: E402
import zarr  # noqa: E402

import offset_codec  # noqa: E402,F401  (registers "offset" and "pad")

STORES = [
    "tiff_u16_le.zarr",
    "gzip_custom_header.zarr",
    "zstd_zero_prefix.zarr",
    "pad_end_zero.zarr",
    "n5_via_offset_zstd.n5",
]


def expected(shape):
    i0, i1 = np.indices(shape, dtype=np.uint32)
    return ((i0 << 8) | i1).astype(np.uint16)


def main(root):
    failed = 0
    for name in STORES:
        try:
            a = zarr.open_array(os.path.join(root, name), mode="r")
            got = a[...]
            want = expected(a.shape)
            if got.dtype != np.uint16 or not np.array_equal(got, want):
                bad = int(np.count_nonzero(got != want))
                print(f"{name} FAIL {bad} of {want.size} elements differ")
                failed += 1
            else:
                print(f"{name} OK")
        except Exception as e:  # report, do not stop: every store gets its line
            print(f"{name} FAIL {type(e).__name__}: {e}")
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
