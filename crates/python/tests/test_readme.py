"""Every Python example of the package README runs as written, each in an empty temporary
directory, twice there (a reader may paste an example again: the second run finds what the
first left). Examples on `s3://bucket/…` run against the S3 test server (the `server` fixture sets
the client environment), with the server's bucket in place of `bucket`."""

import pathlib
import re

import pytest

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"^```python\n(.*?)^```", README.read_text(encoding="utf-8"), re.M | re.S)


def test_the_readme_has_examples():
    assert len(BLOCKS) >= 6, len(BLOCKS)


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_example_runs(index, tmp_path, monkeypatch, request):
    code = BLOCKS[index]
    if "s3://" in code:
        server = request.getfixturevalue("server")
        code = code.replace("s3://bucket/", f"s3://{server.bucket}/readme-{index}/")
    monkeypatch.chdir(tmp_path)
    for run in (1, 2):
        where = f"{README.name}, Python example {index + 1} (run {run})"
        exec(compile(code, where, "exec"), {"__name__": "readme"})
