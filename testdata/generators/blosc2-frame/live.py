"""Live cross-checks of the blosc2-frame crate against python-blosc2 (pinned: blosc2==4.14.1).

Used by `cargo xtask conformance --live` (section `blosc2-frame`):

    python live.py write DIR      # python-blosc2 writes reference frames into DIR
    python live.py describe PATH  # prints a JSON description of any frame/b2nd/sparse dir
    python live.py append PATH    # python-blosc2 appends to (and edits) a frame we wrote

The description is what the Rust side computes for the same file and compares:
nchunks, nbytes, sha256 of the decompressed super-chunk (schunk[:]), metalayers (except b2nd)
re-packed with msgpack, vlmetalayers re-packed with msgpack, and for b2nd arrays shape, chunks,
blocks, dtype and the sha256 of the C-order array.
"""

import hashlib
import json
import os
import sys

import blosc2
import msgpack
import numpy as np

CP = dict(nthreads=1)


def write(d):
    os.makedirs(d, exist_ok=True)
    # Contiguous frame: metalayers, edits, vlmetalayers.
    for contiguous, name in [(True, "edited.b2frame"), (False, "edited_sparse.b2frame")]:
        path = os.path.join(d, name)
        sc = blosc2.SChunk(
            chunksize=40000,
            cparams=blosc2.CParams(codec=blosc2.Codec.ZSTD, clevel=5, typesize=4, nthreads=1,
                                   filters=[blosc2.Filter.BITSHUFFLE]),
            urlpath=path, contiguous=contiguous, mode="w", meta={"m": [1, 2], "s": "x"},
        )
        for k in range(4):
            sc.append_data((np.arange(10000, dtype="<i4") * (k + 1)).tobytes())
        sc.insert_data(1, np.full(10000, 5, dtype="<i4").tobytes(), copy=True)
        sc.update_data(3, np.arange(10000, 20000, dtype="<i4").tobytes(), copy=True)
        sc.delete_chunk(0)
        sc.append_data(np.zeros(10000, dtype="<i4").tobytes())
        sc.vlmeta["info"] = {"a": [1, 2, 3]}
        sc.vlmeta["gone"] = 1
        del sc.vlmeta["gone"]
        del sc
    # b2nd with edge chunks.
    a = (np.arange(11 * 13 * 7) % 977).astype("<i2").reshape(11, 13, 7)
    arr = blosc2.asarray(a, urlpath=os.path.join(d, "edges.b2nd"), mode="w", chunks=(4, 5, 3),
                         blocks=(2, 3, 2), cparams=blosc2.CParams(codec=blosc2.Codec.LZ4, **CP))
    del arr
    z = blosc2.zeros((30, 20), dtype="<f4", urlpath=os.path.join(d, "zeros.b2nd"), mode="w",
                     chunks=(10, 10), blocks=(5, 5), cparams=blosc2.CParams(**CP))
    z[3:12, 4:15] = 2.5
    del z


def append(path):
    sc = blosc2.open(path, mode="a")
    n = sc.chunksize // sc.typesize
    sc.append_data(np.arange(n, dtype=f"<i{sc.typesize}").tobytes())
    sc.insert_data(0, np.full(n, 3, dtype=f"<i{sc.typesize}").tobytes(), copy=True)
    sc.vlmeta["added"] = [1, "two"]
    del sc


def describe(path):
    obj = blosc2.open(path)
    out = {}
    if isinstance(obj, blosc2.NDArray):
        sc = obj.schunk
        arr = obj[...]
        out["b2nd"] = {
            "shape": list(obj.shape),
            "chunks": list(obj.chunks),
            "blocks": list(obj.blocks),
            "dtype": obj.dtype.str,
            "sha256_c": hashlib.sha256(np.ascontiguousarray(arr).tobytes()).hexdigest(),
        }
    else:
        sc = obj
    out["nchunks"] = sc.nchunks
    out["nbytes"] = sc.nbytes
    out["sha256"] = hashlib.sha256(bytes(sc[:])).hexdigest()
    out["meta"] = {k: msgpack.packb(sc.meta[k]).hex() for k in sc.meta.keys() if k != "b2nd"}
    out["vlmeta"] = {k: msgpack.packb(sc.vlmeta[k]).hex() for k in sc.vlmeta.getall().keys()}
    print(json.dumps(out, sort_keys=True))


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "write":
        write(sys.argv[2])
    elif cmd == "describe":
        describe(sys.argv[2])
    elif cmd == "append":
        append(sys.argv[2])
    else:
        sys.exit(f"unknown command {cmd}")
