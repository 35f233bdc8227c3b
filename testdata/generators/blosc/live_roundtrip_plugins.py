"""Live cross-check of the plugin filters and codecs for `cargo xtask conformance --live`.

Usage: python live_roundtrip_plugins.py <dir>
<dir>/cases.json lists cases {name, dtype, shape, blocks, codec, codec_meta, clevel, typesize,
filters, filters_meta, lossy}; <dir>/<name>.raw holds the array in C order (its blocks span
every dimension but the first, so this is also the single chunk's block-major content) and
<dir>/<name>.ours the chunk made by blosc-chunk. Plugins that need the block shape read it from
the b2nd metalayer in C-Blosc2, so everything goes through a single-chunk b2nd array
(chunks = shape). This script (python-blosc2 4.14.1, nthreads=1, BLOSC_* env cleared):
  1. compresses the array with the case's parameters: chunk 0 goes to <name>.py and what
     python-blosc2 decodes from it to <name>.pydec;
  2. puts <name>.ours into that array as chunk 0 (SChunk.update_chunk) and decompresses it:
     it must equal the input (lossless) or <name>.pydec (lossy: INT_TRUNC, NDMEAN, ZFP).
Writes <dir>/results.json: {name: "ok" | error text}.
"""
import json
import os
import sys

for k in list(os.environ):
    if k.startswith("BLOSC_"):
        del os.environ[k]

import blosc2  # noqa: E402
import numpy as np  # noqa: E402

d = sys.argv[1]
cases = json.load(open(os.path.join(d, "cases.json")))
results = {}
for c in cases:
    name = c["name"]
    raw = open(os.path.join(d, name + ".raw"), "rb").read()
    ours = open(os.path.join(d, name + ".ours"), "rb").read()
    a = np.frombuffer(raw, dtype=c["dtype"]).reshape(c["shape"])
    fm = [m - 256 if m > 127 else m for m in c["filters_meta"]]  # int8 metas (INT_TRUNC)
    cp = blosc2.CParams(codec=blosc2.Codec(c["codec"]), codec_meta=c["codec_meta"],
                        clevel=c["clevel"], typesize=c["typesize"], nthreads=1,
                        filters=[blosc2.Filter(f) for f in c["filters"]], filters_meta=fm)
    try:
        arr = blosc2.asarray(a, chunks=tuple(c["shape"]), blocks=tuple(c["blocks"]), cparams=cp,
                             dparams=blosc2.DParams(nthreads=1))
        py = arr.schunk.get_chunk(0)
        pydec = arr.schunk.decompress_chunk(0)
        open(os.path.join(d, name + ".py"), "wb").write(py)
        open(os.path.join(d, name + ".pydec"), "wb").write(pydec)
    except Exception as e:  # noqa: BLE001
        results[name] = f"python failed to compress: {e}"
        continue
    try:
        arr.schunk.update_chunk(0, ours)
        back = bytes(arr.schunk.decompress_chunk(0))
        want = pydec if c["lossy"] else raw
        results[name] = "ok" if back == want else "python decoded different bytes"
    except Exception as e:  # noqa: BLE001
        results[name] = f"python failed to decode: {e}"
json.dump(results, open(os.path.join(d, "results.json"), "w"))
