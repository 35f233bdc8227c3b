"""Peer timings for the blosc2-frame criterion bench (python-blosc2 4.14.1, one thread).

    python bench.py decode PATH ITERS          # total seconds for ITERS x schunk[:]
    python bench.py onechunk PATH INDEX ITERS  # total seconds for ITERS x (open + decompress_chunk)

Only the measured operations are inside the timer (interpreter start-up and imports are not),
so criterion's `iter_custom` can use the printed duration directly.
"""

import sys
import time

import blosc2

blosc2.set_nthreads(1)


def open_(path):
    return blosc2.open(path, mode="r", dparams=blosc2.DParams(nthreads=1))


def main():
    cmd, path = sys.argv[1], sys.argv[2]
    if cmd == "decode":
        iters = int(sys.argv[3])
        sc = open_(path)
        sc[:]  # warm the page cache and allocator
        t = time.perf_counter()
        for _ in range(iters):
            sc[:]
        print(time.perf_counter() - t)
    elif cmd == "onechunk":
        index, iters = int(sys.argv[3]), int(sys.argv[4])
        t = time.perf_counter()
        for _ in range(iters):
            sc = open_(path)
            sc.decompress_chunk(index)
        print(time.perf_counter() - t)
    else:
        sys.exit(f"unknown command {cmd}")


if __name__ == "__main__":
    main()
