"""The ``lz4-block`` codec from Python: numcodecs and zarr-python find it by name (the wheel's
entry points), decode blocks the reference ``wkw`` package wrote, in place, to what ``wkw``
reads, re-encode LZ4HC blocks byte-identically, and refuse damaged blocks."""

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from scifmt import codecs


def _blocks(path):
    """(block type, block bytes, stored blocks) of a compressed WKW data file."""
    data = open(path, "rb").read()
    assert data[:3] == b"WKW"
    per_dim, block_type, voxel_size = data[4], data[5], data[7]
    block_len, file_len = 1 << (per_dim & 0x0F), 1 << (per_dim >> 4)
    offset = int.from_bytes(data[8:16], "little")
    n = file_len**3
    ends = [int.from_bytes(data[16 + 8 * i: 24 + 8 * i], "little") for i in range(n)]
    blocks, start = [], offset
    for end in ends:
        blocks.append(data[start:end])
        start = end
    return block_type, block_len**3 * voxel_size, blocks


def test_numcodecs_finds_the_codec_and_decodes_reference_blocks(testdata):
    numcodecs = pytest.importorskip("numcodecs")
    f = testdata / "wkw" / "f32_lz4hc_b16_f2" / "z1" / "y0" / "x1.wkw"
    block_type, size, blocks = _blocks(f)
    assert block_type == 3
    codec = numcodecs.get_codec({"id": "lz4-block", "mode": "hc", "level": 9, "size": size})
    assert isinstance(codec, codecs.LZ4Block)
    for stored in blocks:
        raw = codec.decode(stored)
        assert len(raw) == size
        # LZ4HC level 9 is what WKW writes: the reference's bytes exactly.
        assert codec.encode(raw) == stored
        out = bytearray(size)
        assert codec.decode(stored, out=out) is out and bytes(out) == raw
    assert codec.get_config() == {"id": "lz4-block", "mode": "hc", "level": 9, "size": size}
    assert numcodecs.get_codec(codec.get_config()) == codec
    # The size is needed, and must be right.
    with pytest.raises(codecs.LZ4BlockError, match="size"):
        codecs.LZ4Block().decode(blocks[0])
    with pytest.raises(ValueError):
        codecs.LZ4Block(size=size - 1).decode(blocks[0])
    with pytest.raises(ValueError):
        codecs.LZ4Block(size=size).decode(blocks[0][:-3])
    with pytest.raises(ValueError):
        codecs.LZ4Block(size=size).decode(b"\xff" * 64)
    for bad in ({"mode": "hc"}, {"mode": "frame"}, {"level": 13, "mode": "hc"},
                {"acceleration": 0}, {"prefix": True}):
        with pytest.raises(ValueError):
            codecs.LZ4Block.from_config(bad)


def _wkw_block_array(tmp_path, testdata):
    """A Zarr v3 array whose chunk files are the 8 blocks of a reference LZ4HC WKW file, copied
    byte for byte, laid out along z; and the (c, x, y, z) data the reference reads for them."""
    wkw = pytest.importorskip("wkw")
    src = testdata / "wkw" / "f32_lz4hc_b16_f2"
    _, _, blocks = _blocks(src / "z1" / "y0" / "x1.wkw")
    b = 16
    root = tmp_path / "blocks.zarr"
    meta = {
        "zarr_format": 3, "node_type": "array", "shape": [1, b, b, 8 * b],
        "data_type": "float32",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [1, b, b, b]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": 0.0, "dimension_names": ["c", "x", "y", "z"],
        "codecs": [
            {"name": "transpose", "configuration": {"order": [3, 2, 1, 0]}},
            {"name": "bytes", "configuration": {"endian": "little"}},
            {"name": "lz4-block", "configuration": {"mode": "hc", "level": 9}},
        ],
    }  # fmt: skip
    (root / "c" / "0" / "0" / "0").mkdir(parents=True)
    (root / "zarr.json").write_text(json.dumps(meta))
    for k, stored in enumerate(blocks):
        (root / "c" / "0" / "0" / "0" / str(k)).write_bytes(stored)
    # The file's blocks in Morton order (x lowest bit): block k at (k&1, k>>1&1, k>>2&1) of
    # the file at x1 (32 voxels from 32), y0, z1 (32 voxels from 32).
    ds = wkw.Dataset.open(str(src))
    want = np.zeros((1, b, b, 8 * b), dtype=np.float32)
    for k in range(8):
        x, y, z = 32 + (k & 1) * b, ((k >> 1) & 1) * b, 32 + ((k >> 2) & 1) * b
        want[:, :, :, k * b:(k + 1) * b] = ds.read((x, y, z), (b, b, b))
    ds.close()
    return root, want


def test_zarr_python_reads_wkw_blocks_in_place_like_wkw(tmp_path, testdata):
    zarr = pytest.importorskip("zarr")
    root, want = _wkw_block_array(tmp_path, testdata)
    got = zarr.open_array(str(root), mode="r")[...]
    np.testing.assert_array_equal(got, want)
    # zarr-python writes and reads its own chunks with the codec.
    a = zarr.open_array(str(root), mode="r+")
    data = np.arange(16**3, dtype=np.float32).reshape(1, 16, 16, 16)
    a[:, :, :, :16] = data
    np.testing.assert_array_equal(a[:, :, :, :16], data)
    # A damaged chunk raises; it is never read as other voxels.
    (root / "c" / "0" / "0" / "0" / "3").write_bytes(b"\xff" * 40)
    with pytest.raises(Exception, match="lz4|LZ4"):
        a[:, :, :, 48:64]


def test_the_entry_point_needs_no_import(tmp_path, testdata):
    """A fresh interpreter that never imports scifmt reads the array through zarr-python."""
    pytest.importorskip("zarr")
    root, want = _wkw_block_array(tmp_path, testdata)
    np.save(tmp_path / "want.npy", want)
    code = (
        "import sys, numpy as np, zarr\n"
        "a = zarr.open_array(sys.argv[1], mode='r')\n"
        "np.testing.assert_array_equal(a[...], np.load(sys.argv[2]))\n"
        "assert 'scifmt.codecs' in sys.modules\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONSTARTUP"}
    subprocess.run([sys.executable, "-c", code, str(root), str(tmp_path / "want.npy")],
                   check=True, env=env)  # fmt: skip
