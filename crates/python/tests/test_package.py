import scifmt
import scifmt._scifmt


def test_version_matches_extension():
    assert scifmt.__version__ == scifmt._scifmt.__version__
    assert scifmt.__version__.count(".") == 2
