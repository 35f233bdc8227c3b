"""scifmt.dwe against the reference-made files in testdata/dwe and their documented values."""

import ast
import re

import numpy as np
import pytest

import scifmt.dwe as dwe


def _sections(testdata):
    """EXPECTED.md split per dataset: name -> (T, V, K, text)."""
    text = (testdata / "dwe" / "EXPECTED.md").read_text()
    out = {}
    parts = re.split(r"^## `([a-z0-9_]+)`\s+\(T=(\d+), V=(\d+), K=(\d+)\)\s*$", text, flags=re.M)
    for i in range(1, len(parts) - 1, 5):
        name, t, v, k, body = parts[i : i + 5]
        body = body.split("\n## ")[0]
        out[name] = (int(t), int(v), int(k), body)
    return out


def _files(testdata, name):
    files = sorted((testdata / "dwe" / "stream").glob(f"{name}_j*.dwe"))
    files += sorted((testdata / "dwe" / "block").glob(f"{name}_c*.dwe"))
    assert len(files) == 2, name
    return files


def _bits(vals):
    return [f"{int(b):08x}" for b in np.asarray(vals, dtype=np.float32).view(np.uint32)]


def test_every_file_decodes_to_the_inputs(testdata):
    secs = _sections(testdata)
    assert len(secs) == 7
    for name, (t, v, k, _) in secs.items():
        values = np.fromfile(testdata / "dwe" / "inputs" / f"{name}.i16", dtype="<i2").reshape(t, v, k)
        diffs = np.fromfile(testdata / "dwe" / "inputs" / f"{name}.diffs.i16", dtype="<i2").reshape(t, v, k)
        for path in _files(testdata, name):
            f = dwe.open(path)
            assert f.shape == (t, v, k)
            assert f.layout == ("stream" if "/stream/" in str(path) else "block")
            np.testing.assert_array_equal(f.to_numpy(), values)
            np.testing.assert_array_equal(np.asarray(f), values)
            for ts in range(t):
                np.testing.assert_array_equal(f.timestep(ts), values[ts])
                np.testing.assert_array_equal(f.residuals(ts), diffs[ts])
            for w in range(v):
                np.testing.assert_array_equal(f.trajectory(w), values[:, w, :])
                np.testing.assert_array_equal(f.vector(w, t - 1), values[t - 1, w])
            f.verify()
            dwe.open(path, check_integrity=True).timestep(0)


def test_documented_header_and_values(testdata):
    secs = _sections(testdata)
    for name, (t, v, k, body) in secs.items():
        for path in _files(testdata, name):
            f = dwe.open(path)
            info = f.info()
            kind = "stream" if f.layout == "stream" else "block"
            line = next(line for line in body.splitlines() if line.strip().startswith(f"- {kind} file"))
            hdr = next(line for line in body.splitlines()[body.splitlines().index(line):]
                       if line.strip().startswith("- header:"))
            fields = dict(re.findall(r"(\w+) (0x[0-9a-f]+|\d+)", hdr))
            assert info["file_size_words"] == int(fields["file_size"])
            assert info["num_timesteps"] == t and info["vocab_size"] == v and info["embedding_dim"] == k
            if kind == "stream":
                assert info["jump_table_address"] == int(fields["jump_table_address"])
                assert info["jump_interval"] == int(fields["jump_interval"])
            else:
                assert info["meta_size"] == int(fields["meta_size"])
                assert info["chunk_size"] == int(fields["chunk_size"])
            assert "0x" + info["scale_factor_bits"] == fields["bits"]
            assert np.float32(f.scale_factor).view(np.uint32) == int(fields["bits"], 16)
            m = re.search(r"num_symbols per time step\): (\[[^\]]*\])", body)
            assert info["model_num_symbols"] == ast.literal_eval(m.group(1))
            # word 0, t=..., first N components: i16 [...]; ... f32 bits [...]
            for m in re.finditer(r"word 0, t=(\d+), first \d+ components: i16 (\[[^\]]*\]);.*f32 bits \[([^\]]*)\]", body):
                ts = int(m.group(1))
                want = ast.literal_eval(m.group(2))
                assert f.vector(0, ts)[: len(want)].tolist() == want
                scaled = f.vector(0, ts, scaled=True)
                assert scaled.dtype == np.float32
                assert _bits(scaled[: len(want)]) == [b.strip() for b in m.group(3).split(",")]


def test_documented_reference_queries(testdata):
    secs = _sections(testdata)
    checked = 0
    for name, (t, v, k, body) in secs.items():
        lines = body.splitlines()
        for path in _files(testdata, name):
            f = dwe.open(path)
            for i, line in enumerate(lines):
                m = re.search(r"reference `pairwise_trajectories\(words1=(\[[^\]]*\]), words2=(\[[^\]]*\])\)`", line)
                if m:
                    got = f.pairwise_trajectories(ast.literal_eval(m.group(1)), ast.literal_eval(m.group(2)))
                    assert got.shape == (len(ast.literal_eval(m.group(1))), t)
                    bits = re.search(r"\[([^\]]*)\]", lines[i + 1]).group(1)
                    assert _bits(got.reshape(-1)) == [b.strip() for b in bits.split(",")], name
                    checked += 1
                m = re.search(r"reference `most_related_to_at_t\(target_words=(\[[^\]]*\]), t=(\d+), amt=(\d+)\)`.*: (\[[^\]]*\])", line)
                if m:
                    words = ast.literal_eval(m.group(1))
                    got = f.most_related_to_at_t(words, int(m.group(2)), int(m.group(3)))
                    assert got.reshape(-1).tolist() == ast.literal_eval(m.group(4)), (name, line)
                    np.testing.assert_array_equal(f.related(words, int(m.group(2)), int(m.group(3))), got)
                    checked += 1
                m = re.search(r"reference `largest_changes_wrt\(target_word=(\d+), amt=(\d+), min_increasing=(\d+), min_decreasing=(\d+)\)`: (\[[^\]]*\])", line)
                if m:
                    a, b, c, d = (int(m.group(j)) for j in range(1, 5))
                    assert f.largest_changes_wrt(a, b, c, d) == ast.literal_eval(m.group(5)), name
                    checked += 1
    assert checked >= 40


def test_upstream_unit_test_expectations(testdata):
    f = dwe.open(testdata / "dwe" / "stream" / "random_6_100_16_j20.dwe")
    got = f.pairwise_trajectories([3, 50, 1], [70, 3, 12]).reshape(-1)
    want = [0.474921, -0.53468376, -1.49157, -1.5499694, -1.036873, 0.2576844, 0.57104135, 0.09180291,
            1.6076871, 1.7894751, 0.37198356, 1.1566257, 0.41561267, -0.10225572, 0.22655322, 0.67443323,
            0.4528792, -0.74646676]
    np.testing.assert_allclose(got, want, atol=1e-6)
    t0 = f.most_related_to_at_t([3, 34, 4], 0, 10).reshape(-1).tolist()
    assert t0 == [42, 64, 47, 32, 22, 79, 39, 24, 2, 85, 85, 5, 35, 72, 57, 36, 21, 44, 83, 65,
                  48, 6, 54, 67, 60, 21, 77, 90, 78, 46]


def test_write_round_trip(tmp_path, testdata):
    name, t, v, k = "random_6_100_16", 6, 100, 16
    values = np.fromfile(testdata / "dwe" / "inputs" / f"{name}.i16", dtype="<i2").reshape(t, v, k)
    out = tmp_path / "s.dwe"
    dwe.write(out, values, scale_factor=np.float32(0.015074313), jump_interval=20)
    assert out.read_bytes() == (testdata / "dwe" / "stream" / "random_6_100_16_j20.dwe").read_bytes()
    dwe.write(tmp_path / "b.dwe", values, scale_factor=np.float32(0.015074313), chunk_size=20)
    assert (tmp_path / "b.dwe").read_bytes() == (testdata / "dwe" / "block" / "random_6_100_16_c20.dwe").read_bytes()
    np.testing.assert_array_equal(dwe.open(tmp_path / "b.dwe").to_numpy(), values)
    # other integer dtypes are accepted when they fit
    dwe.write(tmp_path / "i.dwe", values.astype(np.int64), 0.5, jump_interval=7)
    np.testing.assert_array_equal(dwe.open(tmp_path / "i.dwe").to_numpy(), values)


def test_errors(tmp_path, testdata):
    path = testdata / "dwe" / "stream" / "walk_9_37_5_j7.dwe"
    f = dwe.open(path)
    for call in (lambda: f.vector(37, 0), lambda: f.vector(0, 9), lambda: f.vector(-1, 0),
                 lambda: f.timestep(9), lambda: f.timestep(-1), lambda: f.trajectory(2**40),
                 lambda: f.most_related_to_at_t([37], 0, 3), lambda: f.pairwise_trajectories([0], [99])):
        with pytest.raises(IndexError):
            call()
    with pytest.raises(ValueError):
        f.most_related_to_at_t([0], 0, 10**12)
    with pytest.raises(ValueError):
        f.most_related_to_at_t([0], 0, -1)
    with pytest.raises(TypeError):
        f.vector(1.5, 0)
    with pytest.raises(TypeError):
        f.most_related_to_at_t([0.5], 0, 3)
    # Unequal lists form no pairs: refused as the CLI refuses them (the reference: empty result).
    with pytest.raises(ValueError, match="words1 has 2 words, words2 has 1: they form pairs"):
        f.pairwise_trajectories([0, 1], [2])
    assert f.most_related_to_at_t([0], 0, 37)[0, -1] == -1  # V-1 other words: last rank unfilled
    with pytest.raises(FileNotFoundError, match="missing.dwe"):
        dwe.open(tmp_path / "missing.dwe")
    raw = path.read_bytes()
    for cut in (0, 10, 40, len(raw) // 2, len(raw) - 4):
        (tmp_path / "cut.dwe").write_bytes(raw[:cut])
        with pytest.raises(dwe.DweError, match="cut.dwe"):
            dwe.open(tmp_path / "cut.dwe").to_numpy()
    # corrupt compressed words: an error or values, never a crash
    rng = np.random.default_rng(1)
    for _ in range(200):
        b = bytearray(raw)
        for pos in rng.integers(40, len(b), 3):
            b[pos] ^= 1 << int(rng.integers(0, 8))
        (tmp_path / "bad.dwe").write_bytes(bytes(b))
        try:
            g = dwe.open(tmp_path / "bad.dwe")
            g.to_numpy()
            g.most_related_to_at_t([0, 1], 3, 5)
        except (dwe.DweError, IndexError):
            pass
    with pytest.raises(dwe.DweError, match="limit"):
        dwe.open(path, max_file_bytes=100)
    with pytest.raises(dwe.DweError):
        dwe.open(path, layout="block")
    with pytest.raises(dwe.DweError):
        dwe.open(path, layout="zip")
    with pytest.raises(dwe.DweError):
        dwe.write(tmp_path / "w.dwe", np.zeros((1, 4, 2), np.int16), 0.5, jump_interval=2)  # T < 2
    with pytest.raises(dwe.DweError):
        dwe.write(tmp_path / "w.dwe", np.zeros((3, 4, 2), np.int16), 0.5)
    with pytest.raises(dwe.DweError):
        dwe.write(tmp_path / "w.dwe", np.zeros((3, 4, 2), np.int16), 0.5, chunk_size=3)  # 3 ∤ 4
    with pytest.raises(TypeError):
        dwe.write(tmp_path / "w.dwe", np.full((3, 4, 2), 40000), 0.5, jump_interval=2)
    with pytest.raises(ValueError):
        dwe.write(tmp_path / "w.dwe", np.zeros((4, 2), np.int16), 0.5, jump_interval=2)


def test_pickle_reopens(testdata):
    import pickle

    f = dwe.open(testdata / "dwe" / "block" / "small_2_4_4_c4.dwe", check_integrity=True)
    g = pickle.loads(pickle.dumps(f))
    assert g.shape == f.shape and g.layout == "block"
    np.testing.assert_array_equal(g.to_numpy(), f.to_numpy())
