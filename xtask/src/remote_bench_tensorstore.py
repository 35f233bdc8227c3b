"""tensorstore peer of `cargo xtask remote-bench` (written to target/remote-bench by the xtask).

prepare --data DIR : DIR/volume.u8 (512^3 uint8, x fastest) -> DIR/data/zarr, a Zarr v3 array
                     written by tensorstore's zarr3 driver on a local file kvstore:
                     shape [512, 512, 512] in (z, y, x) order, shards 128^3 (the wkw file),
                     inner chunks 32^3 (the wkw block) through the sharding_indexed codec, each
                     inner chunk bytes + blosc(lz4, clevel 5, noshuffle, typesize 1); the shard
                     index (bytes + crc32c) at the end of each shard.
run --data DIR --reps N : reads the benchmark boxes from the S3 test server (environment:
                     AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION,
                     S3_TESTSERVER_BUCKET, S3_TESTSERVER_CONTROL) with a fresh tensorstore
                     Context (no cache) per repetition; prints RESULT lines like the Rust benchmark examples.
"""

import hashlib
import os
import struct
import sys
import time
import urllib.request

import numpy as np
import tensorstore as ts

SIDE = 512
SHARD = 128
INNER = 32
# (name, offset (x, y, z), shape (x, y, z)): the same boxes as crates/wkw/examples/wkw_remote_bench.rs.
BOXES = [
    ("wkw-256-aligned", (128, 128, 128), (256, 256, 256)),
    ("wkw-256-unaligned", (100, 60, 200), (256, 256, 256)),
]
STAMP = "zarr v1"


def volume(data_dir):
    raw = np.fromfile(os.path.join(data_dir, "volume.u8"), dtype=np.uint8)
    return raw.reshape(SIDE, SIDE, SIDE)  # [z, y, x]


def metadata():
    return {
        "shape": [SIDE, SIDE, SIDE],
        "data_type": "uint8",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [SHARD] * 3}},
        "codecs": [
            {
                "name": "sharding_indexed",
                "configuration": {
                    "chunk_shape": [INNER] * 3,
                    "codecs": [
                        {"name": "bytes"},
                        {
                            "name": "blosc",
                            "configuration": {
                                "cname": "lz4",
                                "clevel": 5,
                                "shuffle": "noshuffle",
                                "typesize": 1,
                                "blocksize": 0,
                            },
                        },
                    ],
                    "index_codecs": [
                        {"name": "bytes", "configuration": {"endian": "little"}},
                        {"name": "crc32c"},
                    ],
                    "index_location": "end",
                },
            }
        ],
    }


def prepare(data_dir):
    stamp = os.path.join(data_dir, "ZARR_PREPARED")
    with open(os.path.join(data_dir, "PREPARED.wkw")) as f:
        want = f.read() + " / " + STAMP
    zarr_dir = os.path.join(data_dir, "data", "zarr")
    if os.path.exists(stamp) and open(stamp).read() == want and os.path.isdir(zarr_dir):
        print(f"tensorstore peer: {zarr_dir} is up to date", file=sys.stderr)
        return
    t = time.perf_counter()
    arr = ts.open(
        {
            "driver": "zarr3",
            "kvstore": {"driver": "file", "path": zarr_dir + "/"},
            "metadata": metadata(),
            "create": True,
            "delete_existing": True,
        }
    ).result()
    arr.write(volume(data_dir)).result()
    with open(stamp, "w") as f:
        f.write(want)
    print(f"tensorstore peer: wrote {zarr_dir} in {time.perf_counter() - t:.1f} s", file=sys.stderr)


def needed_bytes(data_dir, offset, shape):
    """Stored bytes of the inner chunks the box touches plus the touched shards' indexes."""
    zarr_dir = os.path.join(data_dir, "data", "zarr")
    lo = [offset[2], offset[1], offset[0]]  # z, y, x
    hi = [lo[0] + shape[2], lo[1] + shape[1], lo[2] + shape[0]]
    per = SHARD // INNER
    index_len = per**3 * 16 + 4
    total = 0
    shard_ranges = [range(lo[d] // SHARD, (hi[d] - 1) // SHARD + 1) for d in range(3)]
    for s0 in shard_ranges[0]:
        for s1 in shard_ranges[1]:
            for s2 in shard_ranges[2]:
                path = os.path.join(zarr_dir, "c", str(s0), str(s1), str(s2))
                with open(path, "rb") as f:
                    f.seek(-index_len, os.SEEK_END)
                    index = f.read(index_len)
                total += index_len
                for i0 in range(per):
                    for i1 in range(per):
                        for i2 in range(per):
                            cl = [
                                s0 * SHARD + i0 * INNER,
                                s1 * SHARD + i1 * INNER,
                                s2 * SHARD + i2 * INNER,
                            ]
                            if all(cl[d] < hi[d] and cl[d] + INNER > lo[d] for d in range(3)):
                                k = (i0 * per + i1) * per + i2
                                off, n = struct.unpack_from("<QQ", index, 16 * k)
                                if off != 2**64 - 1:
                                    total += n
    return total


def control(path):
    with urllib.request.urlopen(os.environ["S3_TESTSERVER_CONTROL"] + path, timeout=30) as r:
        return r.read().decode()


def stats():
    import json

    return json.loads(control("/stats"))


def run(data_dir, reps):
    vol = volume(data_dir)
    kvstore = {
        "driver": "s3",
        "bucket": os.environ["S3_TESTSERVER_BUCKET"],
        "endpoint": os.environ["AWS_ENDPOINT_URL"],
        "aws_region": os.environ["AWS_REGION"],
        "aws_credentials": {"type": "environment"},
        "path": "zarr/",
    }
    expected = {}
    for name, offset, shape in BOXES:
        ox, oy, oz = offset
        sx, sy, sz = shape
        want = vol[oz : oz + sz, oy : oy + sy, ox : ox + sx]
        expected[name] = (want, needed_bytes(data_dir, offset, shape))
    # Repetition 0 is a warm-up (dropped from the table).
    for rep in range(reps + 1):
        for name, offset, shape in BOXES:
            ox, oy, oz = offset
            sx, sy, sz = shape
            want, needed = expected[name]
            context = ts.Context({"cache_pool": {"total_bytes_limit": 0}})
            control("/reset")
            t0 = time.perf_counter()
            arr = ts.open({"driver": "zarr3", "kvstore": kvstore}, context=context).result()
            t1 = time.perf_counter()
            open_stats = stats()
            control("/reset")
            t2 = time.perf_counter()
            got = arr[oz : oz + sz, oy : oy + sy, ox : ox + sx].read().result()
            t3 = time.perf_counter()
            read_stats = stats()
            if not np.array_equal(got, want):
                raise SystemExit(f"tensorstore peer: {name}: different voxels")
            digest = hashlib.sha256(np.ascontiguousarray(got).tobytes()).hexdigest()
            print(
                f"RESULT scenario={name} peer=tensorstore rep={rep} open_s={t1 - t0:.6f} "
                f"read_s={t3 - t2:.6f} open_requests={open_stats['requests']} "
                f"open_rt={open_stats['critical_path']} open_bytes={open_stats['bytes_sent']} "
                f"read_requests={read_stats['requests']} read_rt={read_stats['critical_path']} "
                f"read_bytes={read_stats['bytes_sent']} read_span_ms={read_stats['span_ms']:.3f} "
                f"errors={open_stats['errors'] + read_stats['errors']} needed={needed} "
                f"sha256={digest}",
                flush=True,
            )
            del arr, context


def main(argv):
    if len(argv) >= 3 and argv[0] == "prepare" and argv[1] == "--data":
        prepare(argv[2])
    elif len(argv) >= 3 and argv[0] == "run" and argv[1] == "--data":
        reps = int(argv[argv.index("--reps") + 1]) if "--reps" in argv else 3
        run(argv[2], reps)
    else:
        raise SystemExit("usage: remote_bench_tensorstore.py prepare|run --data DIR [--reps N]")


if __name__ == "__main__":
    main(sys.argv[1:])
