"""Make the source datasets of `cargo xtask convert-bench`: one webKNOSSOS WKW dataset with one
layer of SIZE³ voxels in one LZ4 WKW file (block_len 32, file_len SIZE / 32).

usage: python bench_source.py --size SIZE --dtype uint8|uint64 OUTDIR
  (in a venv with: pip install webknossos==4.3.3 wkw==1.1.24)

- `uint8`: a color layer, smooth structure (a sum of slow waves in x, y and z, 20..230) plus
  uniform noise 0..15: compressible like electron microscopy, neither constant nor pure noise.
- `uint64`: a segmentation layer of labels: jittered cells of about 40 voxels whose ids are
  spread over 40 bits, with a zero boundary (background) between cells.

webknossos-libs makes the dataset, layer and mag (its `datasource-properties.json` and
`header.wkw`); the voxels are written with wkw 1.1.24 directly in one file-aligned write (the wkw
library only writes whole files when they are compressed) after webknossos-libs' LZ4HC
`header.wkw` is replaced by an LZ4 one, so memory peaks at one copy of the
layer (SIZE³ × 8 bytes for uint64: 8 GiB at 1024). Data are deterministic: the same voxels on
every run.
"""
import argparse
import os

import numpy as np
import webknossos as wk
import wkw

BLOCK_LEN = 32


def color_slab(x0, x1, n):
    """uint8 voxels for x in [x0, x1), all y and z: (x1 - x0, n, n), C order (z fastest)."""
    x = np.arange(x0, x1, dtype=np.float32)[:, None, None]
    y = np.arange(n, dtype=np.float32)[None, :, None]
    z = np.arange(n, dtype=np.float32)[None, None, :]
    two_pi = np.float32(2 * np.pi)
    v = (
        125
        + 45 * np.sin(two_pi * x / 173) * np.cos(two_pi * y / 211)
        + 35 * np.sin(two_pi * (z + 0.5 * x) / 97)
        + 20 * np.cos(two_pi * (y - 0.3 * z) / 59)
    )
    rng = np.random.default_rng(x0)
    noise = rng.integers(0, 16, size=v.shape, dtype=np.uint8)
    return (np.clip(v, 0, 239).astype(np.uint8) + noise).astype(np.uint8)


def segmentation_slab(x0, x1, n):
    """uint64 labels for x in [x0, x1), all y and z."""
    x = np.arange(x0, x1, dtype=np.float32)[:, None, None]
    y = np.arange(n, dtype=np.float32)[None, :, None]
    z = np.arange(n, dtype=np.float32)[None, None, :]
    two_pi = np.float32(2 * np.pi)
    cell = np.float32(40)
    # Cell boundaries bent by slow waves, so cells are not boxes.
    px = (x + 6 * np.sin(two_pi * y / 61) + 4 * np.cos(two_pi * z / 83)) / cell
    py = (y + 6 * np.sin(two_pi * z / 67) + 4 * np.cos(two_pi * x / 79)) / cell
    pz = (z + 6 * np.sin(two_pi * x / 71) + 4 * np.cos(two_pi * y / 89)) / cell
    cx, cy, cz = (np.floor(p).astype(np.int64) + 4 for p in (px, py, pz))
    ids = (cx * 1_000_003 + cy * 7_919 + cz) * 2_654_435_761 % (1 << 40) + 1
    edge = 1.5 / cell
    boundary = np.zeros(ids.shape, dtype=bool)
    for p in (px, py, pz):
        frac = p - np.floor(p)
        boundary |= (frac < edge) | (frac > 1 - edge)
    ids[boundary] = 0
    return ids.astype(np.uint64)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, required=True)
    parser.add_argument("--dtype", choices=["uint8", "uint64"], required=True)
    parser.add_argument("out")
    args = parser.parse_args()
    n = args.size
    if n < BLOCK_LEN or n & (n - 1):
        raise SystemExit(f"--size {n}: need a power of two >= {BLOCK_LEN}")

    ds = wk.Dataset(args.out, voxel_size=(11.2, 11.2, 25.0))
    if args.dtype == "uint8":
        layer = ds.add_layer("color", wk.COLOR_CATEGORY, dtype="uint8", data_format="wkw")
        make = color_slab
    else:
        layer = ds.add_layer(
            "segmentation",
            wk.SEGMENTATION_CATEGORY,
            dtype="uint64",
            largest_segment_id=1 << 40,
            data_format="wkw",
        )
        make = segmentation_slab
    mag = layer.add_mag(1, chunk_shape=BLOCK_LEN, shard_shape=n, compress=True)

    data = np.empty((n, n, n), dtype=args.dtype)  # (x, y, z), C order
    step = BLOCK_LEN
    for x0 in range(0, n, step):
        data[x0 : x0 + step] = make(x0, x0 + step, n)
    # webknossos-libs makes compressed WKW mags LZ4HC; this benchmark's source is LZ4 (the
    # same block format for the reader, faster to write): its header.wkw is made again.
    path = os.fspath(mag.path)
    os.remove(os.path.join(path, "header.wkw"))
    header = wkw.Header(
        np.dtype(args.dtype).type,
        block_len=BLOCK_LEN,
        file_len=n // BLOCK_LEN,
        block_type=wkw.Header.BLOCK_TYPE_LZ4,
    )
    with wkw.Dataset.create(path, header) as target:
        target.write((0, 0, 0), data)
    del data
    layer.bounding_box = wk.BoundingBox((0, 0, 0), (n, n, n))


if __name__ == "__main__":
    main()
