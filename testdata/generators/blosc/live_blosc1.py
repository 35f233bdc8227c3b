"""Live cross-check of the Blosc1 writer for `cargo xtask conformance --live` (blosc-chunk).

Usage: python live_blosc1.py <dir>
<dir>/cases.json lists cases {name, codec, clevel, typesize, shuffle, blocksize}; for each case
<dir>/<name>.raw holds the input and <dir>/<name>.ours the chunk blosc-chunk wrote with
`Format::Blosc1`. This script (python-blosc 1.11.4 = C-Blosc 1.21.7.dev, one thread, BLOSC_*
env cleared):
  1. decompresses <name>.ours with blosc.decompress and compares with <name>.raw;
  2. compresses <name>.raw with blosc.compress and the same parameters into <name>.py.
Writes <dir>/results.json: {name: "ok" | error text}.
"""
import json
import os
import sys

for k in list(os.environ):
    if k.startswith("BLOSC_"):
        del os.environ[k]

import blosc  # noqa: E402

d = sys.argv[1]
cases = json.load(open(os.path.join(d, "cases.json")))
blosc.set_nthreads(1)
results = {}
for c in cases:
    name = c["name"]
    raw = open(os.path.join(d, name + ".raw"), "rb").read()
    ours = open(os.path.join(d, name + ".ours"), "rb").read()
    try:
        back = blosc.decompress(ours)
        results[name] = "ok" if back == raw else "C-Blosc 1 decoded different bytes"
    except Exception as e:  # noqa: BLE001
        results[name] = f"C-Blosc 1 failed to decode: {e}"
    blosc.set_blocksize(c["blocksize"])
    py = blosc.compress(raw, typesize=c["typesize"], clevel=c["clevel"], shuffle=c["shuffle"],
                        cname=c["codec"])
    blosc.set_blocksize(0)
    open(os.path.join(d, name + ".py"), "wb").write(py)
json.dump(results, open(os.path.join(d, "results.json"), "w"), indent=0)
