import pytest

import scifmt
import scifmt._scifmt


def test_version_matches_extension():
    assert scifmt.__version__ == scifmt._scifmt.__version__
    assert scifmt.__version__.count(".") == 2


@pytest.mark.parametrize("detach", [True, False])
def test_a_rust_panic_is_an_ordinary_exception(detach):
    # With the GIL released (I/O, decoding) and held (header and msgpack parsing) alike, a
    # panic is caught in Rust and raised as an Exception subclass, never as pyo3's
    # PanicException (a BaseException that `except Exception` lets through).
    try:
        scifmt._scifmt._panic_for_tests(detach)
    except Exception as e:  # noqa: BLE001 - the point of the test
        assert type(e).__name__ != "PanicException"
        assert "internal error" in str(e) and "deliberate panic" in str(e)
    else:
        raise AssertionError("no exception")
