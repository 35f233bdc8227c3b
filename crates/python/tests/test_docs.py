"""Every page of the repository's `docs/` runs as written: its ```sh and ```python blocks in
order, in one empty directory, and then all of them again in the same directory (a reader
pastes a page twice), with the installed wheel's `scifmt` on PATH. A block right after a line
`<!-- docs-test: skip (why) -->` is not run (installing, a reader's own bucket). The pages'
Rust blocks are built and run by `cargo xtask readme-examples`."""

import pathlib
import re
import subprocess

import pytest

DOCS = pathlib.Path(__file__).resolve().parents[3] / "docs"
PAGES = sorted(DOCS.glob("*.md"))
BLOCK = re.compile(r"^(<!-- docs-test: skip[^\n]*-->\n)?```(sh|python)\n(.*?)^```", re.M | re.S)


def blocks(page):
    """The page's runnable blocks in order: (language, code, line)."""
    text = page.read_text(encoding="utf-8")
    out = []
    for m in BLOCK.finditer(text):
        if m.group(1) is None:
            out.append((m.group(2), m.group(3), text.count("\n", 0, m.start(2)) + 1))
    return out


def test_there_are_pages_with_blocks():
    assert PAGES, DOCS
    for page in PAGES:
        assert any(lang == "python" for lang, _, _ in blocks(page)), page.name
        assert any(lang == "sh" for lang, _, _ in blocks(page)), page.name


@pytest.mark.parametrize("page", PAGES, ids=[p.stem for p in PAGES])
def test_page_runs_as_written_twice(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for run in (1, 2):
        for lang, code, line in blocks(page):
            where = f"{page.name}:{line} (run {run})"
            if lang == "sh":
                done = subprocess.run(["bash", "-euo", "pipefail", "-c", code], cwd=tmp_path,
                                      capture_output=True, text=True)  # fmt: skip
                assert done.returncode == 0, f"{where}\n{done.stdout}\n{done.stderr}"
            else:
                exec(compile(code, where, "exec"), {"__name__": "docs"})
