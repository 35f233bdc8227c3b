#!/usr/bin/env python3
"""Blosc1-format chunks written by C-Blosc 1.21 (python-blosc 1.11.4), for blosc-chunk's
`Format::Blosc1` writer tests.

Usage (in a virtualenv with `pip install blosc==1.11.4`):

    python testdata/generators/blosc/gen_blosc1_fixtures.py testdata/blosc/blosc1

Writes `<out>/<name>.cdata` (one chunk each), `<out>/manifest.json` and `<out>/SHA256SUMS`.
Every chunk is compressed with `blosc.set_nthreads(1)`; it is compressed again with two
threads and the manifest records whether the bytes were the same (`same_with_2_threads`).
All `BLOSC_*` environment variables are cleared first (C-Blosc 1 reads them on every call);
`BLOSC_SPLITMODE` is set only for the split-mode cells and reset to `FORWARD_COMPAT` after.

Inputs are not stored: they are generated from (`kind`, `len`) by the functions below, which
the Rust tests reimplement (`crates/blosc-chunk/tests/it/blosc1_fixtures.rs`); the manifest holds
the sha256 of every input so both sides can check they agree.
"""

import hashlib
import json
import os
import sys

import blosc

MASK64 = (1 << 64) - 1
SEED = 0x9E3779B97F4A7C15


def xorshift(n):
    """n successive xorshift64 (13, 7, 17) states from SEED."""
    x = SEED
    out = []
    for _ in range(n):
        x ^= (x << 13) & MASK64
        x ^= x >> 7
        x ^= (x << 17) & MASK64
        out.append(x)
    return out


def u32s(values, n):
    return b"".join((v & 0xFFFFFFFF).to_bytes(4, "little") for v in values)[:n]


def make_input(kind, n):
    """The input bytes of a fixture (see the module docstring)."""
    k = (n + 3) // 4
    if kind == "ramp32":
        # u32 little-endian 3*k: compresses very well, better with shuffle.
        return u32s((3 * i for i in range(k)), n)
    if kind == "noisy32":
        # u32 little-endian 1000 + 7*k + (4 random bits): moderately compressible.
        return u32s((1000 + 7 * i + (r & 15) for i, r in enumerate(xorshift(k))), n)
    if kind == "random":
        # The low byte of every xorshift state: incompressible (memcpy chunks).
        return bytes(r & 0xFF for r in xorshift(n))
    if kind == "mixed":
        # First half noisy32, second half random: the budget runs out midway.
        h = n // 2
        return make_input("noisy32", h) + make_input("random", n - h)
    if kind == "text":
        # A repeated phrase with a slowly changing counter byte.
        phrase = b"the quick brown fox jumps over the lazy dog "
        return bytes(phrase[i % len(phrase)] if i % 50 else (i // 50) & 0xFF for i in range(n))
    raise ValueError(kind)


SHUFFLES = {"noshuffle": blosc.NOSHUFFLE, "shuffle": blosc.SHUFFLE, "bitshuffle": blosc.BITSHUFFLE}
CODECS = ["blosclz", "lz4", "lz4hc", "zlib", "zstd"]


def cells():
    """(group, codec, shuffle, clevel, typesize, blocksize, splitmode, kind, len)."""
    # 1. Every codec x shuffle x clevel x typesize, one small block (not a multiple of 4, 8, 3).
    for c in CODECS:
        for s in SHUFFLES:
            for cl in (0, 1, 5, 9):
                for ts in (1, 2, 4, 8, 3, 255):
                    yield ("cross", c, s, cl, ts, 0, None, "noisy32", 2001)
    # 2. Sizes: empty, below the memcpy threshold (128), around it, one block, several blocks.
    for c in CODECS:
        for s in SHUFFLES:
            for ts in (4, 8):
                for n in (0, 1, 7, 127, 128, 129, 1000, 33333):
                    yield ("size", c, s, 5, ts, 0, None, "text", n)
    # 3. Automatic block sizes above the minimum (inputs of 300 000 bytes).
    for c in CODECS:
        for s in SHUFFLES:
            kind = "text" if s == "noshuffle" else "ramp32"
            for cl in (1, 5, 9):
                yield ("auto", c, s, cl, 4, 0, None, kind, 300_000)
        for ts in (2, 8, 16, 32):
            yield ("auto", c, "shuffle", 5, ts, 0, None, "text", 300_000)
    # 4. Explicit block sizes (100 is raised to 128; split blocks are enlarged).
    for c in CODECS:
        for s in SHUFFLES:
            for ts in (2, 8):
                for bs in (100, 1000, 4096, 65536):
                    yield ("bsize", c, s, 5, ts, bs, None, "text", 10_007)
    # 5. Incompressible and half-incompressible inputs (memcpy fallbacks, budget hit late).
    for c in CODECS:
        for s in ("noshuffle", "shuffle"):
            for ts in (1, 4):
                yield ("memcpy", c, s, 5, ts, 0, None, "random", 5000)
        yield ("memcpy", c, "shuffle", 9, 4, 4096, None, "mixed", 20_000)
        yield ("memcpy", c, "noshuffle", 1, 1, 1000, None, "mixed", 20_000)
    # 6. Split modes other than the default.
    for c in ("blosclz", "lz4", "zstd"):
        for mode in ("AUTO", "NEVER", "ALWAYS"):
            for s in ("shuffle", "bitshuffle"):
                yield ("split", c, s, 5, 4, 0, mode, "ramp32", 40_000)


def name_of(group, c, s, cl, ts, bs, mode, kind, n):
    parts = [group, c, s, f"c{cl}", f"ts{ts}", f"n{n}", kind]
    if bs:
        parts.append(f"bs{bs}")
    if mode:
        parts.append(mode.lower())
    return "_".join(parts)


def compress(data, c, s, cl, ts, bs, nthreads):
    blosc.set_nthreads(nthreads)
    blosc.set_blocksize(bs)
    try:
        return blosc.compress(data, typesize=ts, clevel=cl, shuffle=SHUFFLES[s], cname=c)
    finally:
        blosc.set_blocksize(0)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for k in list(os.environ):
        if k.startswith("BLOSC_"):
            del os.environ[k]
    entries = []
    inputs = {}
    for cell in cells():
        group, c, s, cl, ts, bs, mode, kind, n = cell
        if (kind, n) not in inputs:
            inputs[(kind, n)] = make_input(kind, n)
        data = inputs[(kind, n)]
        if mode:
            os.environ["BLOSC_SPLITMODE"] = mode
        try:
            chunk = compress(data, c, s, cl, ts, bs, 1)
            chunk2 = compress(data, c, s, cl, ts, bs, 2)
        finally:
            if mode:
                os.environ["BLOSC_SPLITMODE"] = "FORWARD_COMPAT"
                blosc.compress(b"x" * 200, typesize=1)  # apply the reset
                del os.environ["BLOSC_SPLITMODE"]
        assert blosc.decompress(chunk) == data, cell
        name = name_of(*cell)
        with open(os.path.join(out, name + ".cdata"), "wb") as f:
            f.write(chunk)
        entries.append(
            {
                "file": name + ".cdata",
                "group": group,
                "codec": c,
                "shuffle": s,
                "clevel": cl,
                "typesize": ts,
                "blocksize": bs,
                "splitmode": (mode or "FORWARD_COMPAT").lower(),
                "input": {"kind": kind, "len": n},
                "input_sha256": hashlib.sha256(data).hexdigest(),
                "sha256": hashlib.sha256(chunk).hexdigest(),
                "header": {
                    "version": chunk[0],
                    "flags": chunk[2],
                    "typesize": chunk[3],
                    "nbytes": int.from_bytes(chunk[4:8], "little"),
                    "blocksize": int.from_bytes(chunk[8:12], "little"),
                    "cbytes": int.from_bytes(chunk[12:16], "little"),
                },
                "same_with_2_threads": chunk == chunk2,
            }
        )
    blosc.set_nthreads(1)
    manifest = {
        "generator": "testdata/generators/blosc/gen_blosc1_fixtures.py",
        "python_blosc": blosc.__version__,
        "c_blosc": blosc.blosclib_version,
        "codec_libraries": {c: list(blosc.clib_info(c)) for c in CODECS},
        "call": "blosc.set_nthreads(1); blosc.set_blocksize(blocksize); "
        "blosc.compress(input, typesize=typesize, clevel=clevel, shuffle=shuffle, cname=codec)",
        "inputs": "see make_input() in the generator; seed 0x9E3779B97F4A7C15",
        "entries": entries,
    }
    # One line per entry keeps the manifest small and diffable.
    head = json.dumps({k: v for k, v in manifest.items() if k != "entries"}, indent=1)
    lines = ",\n".join("  " + json.dumps(e, separators=(",", ":")) for e in entries)
    with open(os.path.join(out, "manifest.json"), "w") as f:
        f.write(head[:-2] + ',\n "entries": [\n' + lines + "\n ]\n}\n")
    files = sorted(e["file"] for e in entries) + ["manifest.json"]
    with open(os.path.join(out, "SHA256SUMS"), "w") as f:
        for name in files:
            with open(os.path.join(out, name), "rb") as g:
                f.write(f"{hashlib.sha256(g.read()).hexdigest()}  {name}\n")
    same = sum(e["same_with_2_threads"] for e in entries)
    total = sum(os.path.getsize(os.path.join(out, e["file"])) for e in entries)
    print(f"{len(entries)} chunks, {total} bytes; identical with 2 threads: {same}/{len(entries)}")


if __name__ == "__main__":
    main()
