"""Make the wkw-zarr fixtures with webknossos-libs: small WKW datasets and the Zarr3 datasets
`webknossos copy-dataset --data-format zarr3` makes of them.

usage: python generate.py OUTDIR
  (in a venv with: pip install webknossos==4.3.3; it brings wkw 1.1.24, tensorstore 0.1.86,
  numpy)

Writes OUTDIR/<name>/wkw (the source, a WKW dataset) and OUTDIR/<name>/zarr3 (copy-dataset's
output) for each dataset below, plus OUTDIR/SHA256SUMS. Data are deterministic functions of
the coordinates, so a rerun writes the same voxels (LZ4 bytes may differ with liblz4).
"""
import hashlib
import os
import shutil
import subprocess
import sys

import numpy as np
import webknossos as wk


def ramp(shape, dtype, channels=1, seed=0):
    """Smooth, non-zero, compressible values of the coordinates (c, x, y, z)."""
    c, x, y, z = np.meshgrid(
        np.arange(channels), np.arange(shape[0]), np.arange(shape[1]), np.arange(shape[2]),
        indexing="ij",
    )
    v = (x // 3 + 2 * (y // 5) + 3 * (z // 2) + 7 * c + seed) % 200 + 1
    if np.dtype(dtype).kind == "f":
        return (v.astype(dtype) / 8).astype(dtype)
    if np.dtype(dtype).kind == "i":
        return (v - 100).astype(dtype)
    return v.astype(dtype)


def make_multi(root):
    """Several layers: 3-channel uint8 LZ4 with an offset, mags 1 and 2-2-1; uint32
    segmentation raw (16³ blocks, 2³ per file) with a LZ4 mag 2-2-1; float32 LZ4."""
    ds = wk.Dataset(root, voxel_size=(11.2, 11.2, 25.0))
    color = ds.add_layer("color", wk.COLOR_CATEGORY, dtype="uint8", num_channels=3,
                         data_format="wkw")
    m1 = color.add_mag(1, chunk_shape=32, shard_shape=64, compress=True)
    m1.write(ramp((70, 50, 40), "uint8", 3), absolute_offset=(10, 20, 5), allow_resize=True)
    m2 = color.add_mag([2, 2, 1], chunk_shape=32, shard_shape=64, compress=True)
    m2.write(ramp((35, 25, 40), "uint8", 3, seed=5), absolute_offset=(10, 20, 5),
             allow_resize=True)

    seg = ds.add_layer("segmentation", wk.SEGMENTATION_CATEGORY, dtype="uint32",
                       largest_segment_id=100_000, data_format="wkw")
    s1 = seg.add_mag(1, chunk_shape=16, shard_shape=32, compress=False)
    s1.write(ramp((30, 28, 20), "uint32") * 500, absolute_offset=(0, 0, 0), allow_resize=True)
    s2 = seg.add_mag([2, 2, 1], chunk_shape=16, shard_shape=32, compress=True)
    s2.write(ramp((20, 15, 20), "uint32", seed=9) * 500, absolute_offset=(0, 0, 0),
             allow_resize=True)

    f = ds.add_layer("float", wk.COLOR_CATEGORY, dtype="float32", data_format="wkw")
    f1 = f.add_mag(1, chunk_shape=32, shard_shape=64, compress=True)
    f1.write(ramp((30, 20, 10), "float32"), absolute_offset=(40, 70, 3), allow_resize=True)


def make_types(root):
    """One small LZ4 layer per other voxel type webknossos-libs writes (16³ blocks, 2³ blocks per file)."""
    ds = wk.Dataset(root, voxel_size=(4.0, 4.0, 40.0))
    # webknossos-libs 4.3.3 refuses int64 and float64 layers (color and segmentation), so
    # those two WKW voxel types have no fixture here.
    for dtype in ["uint16", "uint64", "int8", "int16", "int32"]:
        kwargs = {}
        category = wk.COLOR_CATEGORY
        if dtype == "uint64":
            category = wk.SEGMENTATION_CATEGORY
            kwargs["largest_segment_id"] = 2**40
        layer = ds.add_layer(dtype, category, dtype=dtype, data_format="wkw", **kwargs)
        mag = layer.add_mag(1, chunk_shape=16, shard_shape=32, compress=True)
        data = ramp((20, 12, 9), dtype)
        if dtype == "uint64":
            data = data * np.uint64(2**33)
        mag.write(data, absolute_offset=(25, 3, 30), allow_resize=True)


def sha256sums(out):
    lines = []
    for dirpath, dirnames, filenames in os.walk(out):
        dirnames.sort()
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, out)
            if rel == "SHA256SUMS":
                continue
            with open(path, "rb") as f:
                lines.append(f"{hashlib.sha256(f.read()).hexdigest()}  {rel}")
    with open(os.path.join(out, "SHA256SUMS"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    out = sys.argv[1]
    for name, make in [("multi", make_multi), ("types", make_types)]:
        base = os.path.join(out, name)
        shutil.rmtree(base, ignore_errors=True)
        os.makedirs(base)
        make(os.path.join(base, "wkw"))
        subprocess.run(
            ["webknossos", "copy-dataset", os.path.join(base, "wkw"), os.path.join(base, "zarr3"),
             "--data-format", "zarr3", "--jobs", "1"],
            check=True,
        )
    sha256sums(out)
