"""Live cross-check for `cargo xtask conformance --live` (blosc-chunk section).

Usage: python live_roundtrip.py <dir>
<dir>/cases.json lists cases {name, codec, clevel, typesize, filter, splitmode, use_dict}; for each case
<dir>/<name>.raw holds the input and <dir>/<name>.ours the chunk made by blosc-chunk.
This script (python-blosc2 4.14.1, nthreads=1, BLOSC_* env cleared):
  1. decompresses <name>.ours with blosc2.decompress and compares with <name>.raw;
  2. compresses <name>.raw with blosc2.compress2 and the same parameters into <name>.py.
Writes <dir>/results.json: {name: "ok" | error text}.
"""
import json
import os
import sys

for k in list(os.environ):
    if k.startswith("BLOSC_"):
        del os.environ[k]

import blosc2  # noqa: E402

d = sys.argv[1]
cases = json.load(open(os.path.join(d, "cases.json")))
results = {}
for c in cases:
    name = c["name"]
    raw = open(os.path.join(d, name + ".raw"), "rb").read()
    ours = open(os.path.join(d, name + ".ours"), "rb").read()
    try:
        back = blosc2.decompress(ours)
        results[name] = "ok" if bytes(back) == raw else "python decoded different bytes"
    except Exception as e:  # noqa: BLE001
        results[name] = f"python failed to decode: {e}"
    split = {"auto": blosc2.SplitMode.AUTO_SPLIT, "always": blosc2.SplitMode.ALWAYS_SPLIT,
             "never": blosc2.SplitMode.NEVER_SPLIT}[c["splitmode"]]
    py = blosc2.compress2(raw, codec=blosc2.Codec(c["codec"]), clevel=c["clevel"],
                          typesize=c["typesize"], nthreads=1, filters=[blosc2.Filter(c["filter"])],
                          splitmode=split, use_dict=c.get("use_dict", False))
    open(os.path.join(d, name + ".py"), "wb").write(py)
json.dump(results, open(os.path.join(d, "results.json"), "w"))
