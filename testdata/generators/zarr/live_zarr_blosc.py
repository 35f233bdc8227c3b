"""Live check of blosc-chunk's zarrs `blosc` codec against zarr-python 3.1.6 + numcodecs 0.16.6.

Driven by `cargo xtask conformance --live` (xtask/src/conformance/zarr_live.rs):

    live_zarr_blosc.py write DIR   # DIR/cases.json + DIR/<name>.raw -> arrays DIR/py/<name>
    live_zarr_blosc.py read DIR    # arrays DIR/ours/<name> (written by zarrs) -> DIR/results.json

cases.json: [{"name", "zarr_format": 2|3, "sharded": bool, "cname", "clevel",
"shuffle": "noshuffle"|"shuffle"|"bitshuffle"|"auto", "dtype", "shape", "chunks",
"shards"}]. `.raw` files hold the array's C-order little-endian bytes.
"""

import json
import sys
from pathlib import Path

import numcodecs
import numpy as np
import zarr
from zarr.codecs import BloscCodec

NUMCODECS_SHUFFLE = {"noshuffle": 0, "shuffle": 1, "bitshuffle": 2, "auto": -1}


def data(d, c):
    raw = (d / f"{c['name']}.raw").read_bytes()
    return np.frombuffer(raw, dtype=np.dtype(c["dtype"]).newbyteorder("<")).reshape(c["shape"])


def write(d, cases):
    for c in cases:
        arr = data(d, c)
        path = d / "py" / c["name"]
        if c["zarr_format"] == 2:
            compressor = numcodecs.Blosc(
                cname=c["cname"], clevel=c["clevel"], shuffle=NUMCODECS_SHUFFLE[c["shuffle"]]
            )
            z = zarr.create_array(
                store=str(path), shape=arr.shape, chunks=c["chunks"], dtype=arr.dtype,
                compressors=compressor, filters=None, zarr_format=2, fill_value=0,
            )
        else:
            codec = BloscCodec(cname=c["cname"], clevel=c["clevel"], shuffle=c["shuffle"])
            z = zarr.create_array(
                store=str(path), shape=arr.shape, chunks=c["chunks"],
                shards=c["shards"] if c["sharded"] else None, dtype=arr.dtype,
                compressors=codec, zarr_format=3, fill_value=0,
            )
        z[...] = arr


def read(d, cases):
    results = {}
    for c in cases:
        try:
            z = zarr.open_array(str(d / "ours" / c["name"]), mode="r")
            got = z[...]
            want = data(d, c)
            if got.dtype != want.dtype or got.shape != want.shape:
                results[c["name"]] = f"dtype/shape {got.dtype}{got.shape} != {want.dtype}{want.shape}"
            elif not np.array_equal(got, want):
                results[c["name"]] = "different values"
            else:
                results[c["name"]] = "ok"
        except Exception as e:  # noqa: BLE001 - reported per case
            results[c["name"]] = f"{type(e).__name__}: {e}"
    (d / "results.json").write_text(json.dumps(results))


def main():
    step, d = sys.argv[1], Path(sys.argv[2])
    cases = json.loads((d / "cases.json").read_text())
    if step == "write":
        write(d, cases)
    else:
        read(d, cases)


if __name__ == "__main__":
    main()
