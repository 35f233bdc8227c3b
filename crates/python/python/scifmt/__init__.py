"""Scientific formats from Rust (see the package README).

``scifmt.convert`` converts webKNOSSOS WKW datasets and sharded Zarr v3 into each other, in
this process or over a Dask cluster; ``scifmt.virtualize`` writes WKW data and b2nd arrays as
virtual Zarr v3 references (kerchunk) and ``scifmt.virtual.WKWParser`` / ``B2ndParser`` hand
them to VirtualiZarr. Submodules: ``scifmt.wkw`` (a drop-in for the ``wkw``
package), ``scifmt.wkw.dask`` (Dask helpers), ``scifmt.blosc`` (Blosc chunks), ``scifmt.b2nd``
(b2nd arrays), ``scifmt.dwe`` (``.dwe`` embeddings), ``scifmt.zarr`` (Zarr's ``blosc`` codec
for zarr-python and numcodecs) and ``scifmt.codecs`` (the ``lz4-block`` codec: raw LZ4 blocks
such as WKW's, read in place by zarr-python and numcodecs).
"""

from scifmt._convert import ConvertError, ConvertSummary, convert
from scifmt._scifmt import __version__
from scifmt._virtualize import VirtualizeError, virtualize

__all__ = ["ConvertError", "ConvertSummary", "VirtualizeError", "__version__", "convert",
           "virtualize"]  # fmt: skip
