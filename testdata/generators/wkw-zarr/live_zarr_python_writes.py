"""Sharded Zarr v3 arrays as zarr-python writes them, for scifmt's Zarr3 -> WKW conversion
(run by `cargo xtask conformance --live --only wkw-zarr`).

usage: python live_zarr_python_writes.py DIR
Needs: zarr==3.1.6.

Writes into DIR one array per case, each with zarr-python's own defaults for what the case
does not set (no `transpose`: C-ordered inner chunks; `bytes` little endian; the default
compressor, or the one named), and next to it `<case>.raw`: the array's values in C order
(channel slowest), the bytes the conversion must give back. DIR/cases.json lists the cases:
{"name", "shape", "itemsize"}.
"""
import json
import os
import sys

import numpy as np
import zarr
from zarr.codecs import BloscCodec, GzipCodec


def values(shape, dtype):
    n = int(np.prod(shape))
    v = (np.arange(n, dtype=np.uint64) * 2654435761 % 65521).astype(dtype)
    v[(np.arange(n) % 997) < 60] = 0  # some all-zero chunks and runs of the fill value
    return v.reshape(shape)


CASES = [
    # name, shape, dtype, inner chunk, shard, compressors (None: zarr-python's default)
    ("default_u8_cxyz", (1, 64, 32, 48), "uint8", (1, 16, 16, 16), (1, 32, 32, 32), None),
    ("default_u16_xyz", (64, 32, 48), "uint16", (16, 16, 16), (32, 32, 32), None),
    ("blosc_lz4_u16_c3", (3, 32, 32, 32), "uint16", (3, 8, 8, 8), (3, 16, 16, 16),
     BloscCodec(cname="lz4", clevel=5)),
    ("blosc_zstd_u8", (2, 32, 32, 32), "uint8", (2, 8, 8, 8), (2, 32, 32, 32),
     BloscCodec(cname="zstd", clevel=3)),
    ("gzip_f32", (1, 32, 32, 32), "float32", (1, 16, 16, 16), (1, 32, 32, 32),
     GzipCodec(level=5)),
    ("split_channels_u16", (3, 32, 32, 32), "uint16", (1, 8, 8, 8), (3, 16, 16, 16), None),
]


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    listed = []
    for name, shape, dtype, chunks, shards, compressors in CASES:
        data = values(shape, dtype)
        kwargs = {} if compressors is None else {"compressors": compressors}
        arr = zarr.create_array(
            store=os.path.join(out, name), shape=shape, chunks=chunks, shards=shards,
            dtype=dtype, fill_value=0, zarr_format=3, overwrite=True, **kwargs)
        arr[...] = data
        with open(os.path.join(out, name + ".raw"), "wb") as f:
            f.write(np.ascontiguousarray(data).tobytes(order="C"))
        listed.append({"name": name, "shape": list(shape), "itemsize": data.dtype.itemsize})
    with open(os.path.join(out, "cases.json"), "w") as f:
        json.dump(listed, f)


if __name__ == "__main__":
    main()
