"""Live check of scifmt's WKW <-> Zarr3 conversion against the reference implementations
(run by `cargo xtask conformance --live --only wkw-zarr`).

usage: python live.py SRC OURS BACK OUT.json
  SRC   a webKNOSSOS WKW dataset (the fixture)
  OURS  scifmt's Zarr3 conversion of SRC (zstd or blosc inner chunks)
  BACK  scifmt's WKW conversion of OURS
Needs: webknossos==4.3.3 (wkw 1.1.24, tensorstore), zarr==3.1.6.

Checks, each layer and mag over the layer's bounding box:
  * webknossos-libs opens OURS and reads it equal to SRC;
  * webknossos-libs opens BACK and reads it equal to SRC;
  * wkw 1.1.24 reads every mag of BACK equal to wkw 1.1.24 reading SRC;
  * zarr-python opens every array of OURS and reads the box equal to SRC;
  * zarr-python names the inner compressor OURS's zarr.json declares (zstd, blosc or none)
    (reported with the check's name, so a blosc run shows it was read as blosc).
Writes a JSON list of {"check", "ok", "why"} to OUT.json.
"""
import json
import os
import sys

import numpy as np
import webknossos as wk
import wkw
import zarr


def main():
    src, ours, back, out = sys.argv[1:5]
    results = []

    def record(check, fn):
        try:
            why = fn()
            results.append({"check": check, "ok": why is None, "why": why})
        except Exception as e:  # a reader's failure is a failed check, reported
            results.append({"check": check, "ok": False, "why": f"{type(e).__name__}: {e}"})

    ref = wk.Dataset.open(src)
    ours_ds = wk.Dataset.open(ours)
    back_ds = wk.Dataset.open(back)
    for layer in ref.layers.values():
        bbox = layer.bounding_box
        for mag, view in layer.mags.items():
            want = view.read(absolute_bounding_box=bbox)
            name = f"{layer.name}/{mag.to_layer_name()}"

            def via_webknossos(ds, want=want, layer=layer, mag=mag, bbox=bbox):
                got = ds.get_layer(layer.name).get_mag(mag).read(absolute_bounding_box=bbox)
                if got.dtype != want.dtype or not np.array_equal(got, want):
                    return f"different voxels ({got.dtype}, {want.dtype})"
                if not want.any():
                    return "the source box is all zero"
                return None

            record(f"webknossos-libs reads ours {name}", lambda: via_webknossos(ours_ds))
            record(f"webknossos-libs reads back {name}", lambda: via_webknossos(back_ds))

            mb = bbox.in_mag(mag)
            off = tuple(int(v) for v in mb.topleft)
            shape = tuple(int(v) for v in mb.size)

            def via_wkw(name=name, off=off, shape=shape, layer=layer, mag=mag):
                rel = os.path.join(layer.name, mag.to_layer_name())
                with wkw.Dataset.open(os.path.join(src, rel)) as a, wkw.Dataset.open(
                    os.path.join(back, rel)
                ) as b:
                    x, y = a.read(off, shape), b.read(off, shape)
                return None if np.array_equal(x, y) else "different voxels"

            record(f"wkw 1.1.24 reads back {name}", via_wkw)

            def via_zarr(want=want, off=off, shape=shape, layer=layer, mag=mag):
                arr = zarr.open_array(os.path.join(ours, layer.name, mag.to_layer_name()), mode="r")
                got = arr[:, off[0]:off[0] + shape[0], off[1]:off[1] + shape[1],
                          off[2]:off[2] + shape[2]]
                return None if np.array_equal(got, want) else "different voxels"

            meta_path = os.path.join(ours, layer.name, mag.to_layer_name(), "zarr.json")
            with open(meta_path) as f:
                inner = json.load(f)["codecs"][0]["configuration"]["codecs"]
            compressor = inner[-1]["name"] if inner[-1]["name"] not in ("bytes",) else "none"

            def via_zarr_codec(off=off, layer=layer, mag=mag, compressor=compressor):
                arr = zarr.open_array(os.path.join(ours, layer.name, mag.to_layer_name()), mode="r")
                names = [type(c).__name__ for c in arr.metadata.codecs[0].codecs]
                want_name = {"blosc": "BloscCodec", "zstd": "ZstdCodec", "none": None}[compressor]
                if want_name is not None and want_name not in names:
                    return f"zarr-python sees inner codecs {names}, not {want_name}"
                return None

            record(f"zarr-python reads ours {name}", via_zarr)
            record(f"zarr-python sees the {compressor} codec in ours {name}", via_zarr_codec)
    with open(out, "w") as f:
        json.dump(results, f)


if __name__ == "__main__":
    main()
