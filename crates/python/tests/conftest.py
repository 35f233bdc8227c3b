import os
import pathlib

import pytest

REPO = pathlib.Path(__file__).resolve().parents[3]
TESTDATA = REPO / "testdata"


@pytest.fixture
def testdata():
    return TESTDATA
