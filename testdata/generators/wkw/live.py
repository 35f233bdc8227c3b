"""Live round trips with the reference `wkw` Python package (PyPI wkw==1.1.24), driven by
`cargo xtask conformance --live` (xtask/src/conformance/wkw.rs).

  python live.py write ROOT BLOCK_TYPE   reference writes data = (X + 3Y + 7Z) mod 256 into the
                                         box (3,5,7)+(40,30,20) (compressed: whole files 0..64)
  python live.py check ROOT              reference reads ROOT and checks the same box; exit 1 on
                                         mismatch
"""
import sys
import numpy as np
import wkw

OFF, SHAPE = (3, 5, 7), (40, 30, 20)


def formula(off, shape):
    x, y, z = np.meshgrid(*[np.arange(o, o + s, dtype=np.int64) for o, s in zip(off, shape)], indexing="ij")
    return ((x + 3 * y + 7 * z) % 256).astype(np.uint8)


def main():
    cmd, root = sys.argv[1], sys.argv[2]
    if cmd == "write":
        bt = int(sys.argv[3])
        ds = wkw.Dataset.create(root, wkw.Header(np.uint8, block_len=8, file_len=4, block_type=bt))
        if bt == wkw.Header.BLOCK_TYPE_RAW:
            ds.write(OFF, formula(OFF, SHAPE))
        else:
            # The reference only writes whole files into compressed datasets; zero outside the box.
            full = np.zeros((64, 64, 64), np.uint8)
            full[3:43, 5:35, 7:27] = formula(OFF, SHAPE)
            ds.write((0, 0, 0), full)
        ds.close()
    elif cmd == "check":
        ds = wkw.Dataset.open(root)
        got = ds.read(OFF, SHAPE)[0]
        around = ds.read((0, 0, 0), (64, 64, 64))[0]
        ds.close()
        if not np.array_equal(got, formula(OFF, SHAPE)):
            sys.exit("box content differs")
        around[3:43, 5:35, 7:27] = 0
        if around.any():
            sys.exit("voxels outside the written box are not zero")
    else:
        sys.exit(f"unknown command {cmd}")


main()
