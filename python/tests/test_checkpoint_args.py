"""ct.save / ct.load with torch.save / torch.load's arguments: map_location (a device or a
string), weights_only, file objects, a ".pt" name holding safetensors; PyTorch's pickle
checkpoints refused with how to convert them; what cannot round-trip (NUL in a key,
keys that are neither str nor int, two tensors under one dotted name) refused before anything
is written; corrupt or deeply nested "ctensor.tree" metadata named with the file and key."""

import io
import json
import sys

import numpy as np
import pytest

import ctensor as ct

from conftest import to_numpy


def _state():
    return {"w": ct.asarray([[1.0, 2.0], [3.0, 4.0]]), "b": ct.asarray([5.0, 6.0])}


def _same(a, b):
    assert list(a) == list(b) or sorted(a) == sorted(b)
    for k in a:
        np.testing.assert_array_equal(to_numpy(a[k]), to_numpy(b[k]))


def test_a_pt_file_holds_safetensors(tmp_path):
    path = tmp_path / "model.pt"
    ct.save(_state(), path)
    raw = path.read_bytes()
    header = int.from_bytes(raw[:8], "little")
    assert raw[8:9] == b"{" and set(json.loads(raw[8:8 + header])) >= {"w", "b"}
    _same(ct.load(path), _state())
    numpy_reader = pytest.importorskip("safetensors.numpy",
                                       reason="the safetensors package is not installed")
    np.testing.assert_array_equal(numpy_reader.load_file(str(path))["w"], [[1, 2], [3, 4]])


@pytest.mark.parametrize("where", ["cpu", "device", "callable", "keyword"])
def test_map_location(tmp_path, device, where):
    path = tmp_path / "m.pt"
    ct.save(_state(), path)
    if where == "cpu":
        loaded, expected = ct.load(path, map_location="cpu"), ct.device("cpu")
    elif where == "device":
        loaded, expected = ct.load(path, map_location=device), device
    elif where == "callable":
        loaded = ct.load(path, map_location=lambda storage, location: storage)
        expected = ct.device("cpu")
    else:
        loaded, expected = ct.load(path, device=str(device)), device
    assert all(t.device == expected for t in loaded.values())
    _same(loaded, _state())


def test_map_location_refusals(tmp_path):
    path = tmp_path / "m.pt"
    ct.save(_state(), path)
    with pytest.raises(TypeError, match="records no device"):
        ct.load(path, map_location={"cuda:1": "cuda:0"})
    with pytest.raises(TypeError, match="not both"):
        ct.load(path, map_location="cpu", device="cpu")
    with pytest.raises(TypeError, match="pickle_module"):
        ct.load(path, pickle_module=object())


@pytest.mark.parametrize("weights_only", [None, True, False])
def test_weights_only_is_accepted(tmp_path, weights_only):
    path = tmp_path / "m.pt"
    ct.save(_state(), path, pickle_protocol=4)
    _same(ct.load(path, weights_only=weights_only), _state())


def test_file_objects(tmp_path):
    buffer = io.BytesIO()
    ct.save(_state(), buffer)
    buffer.seek(0)
    _same(ct.load(buffer, map_location="cpu"), _state())
    optimiser_like = {"state": {0: {"step": 3, "exp_avg": ct.ones((2,))}},
                      "param_groups": [{"lr": 0.1, "betas": (0.9, 0.99), "params": [0]}]}
    buffer = io.BytesIO()
    ct.save(optimiser_like, buffer)
    buffer.seek(0)
    back = ct.load(buffer)
    assert back["param_groups"] == optimiser_like["param_groups"]
    assert back["state"][0]["step"] == 3


def test_a_pytorch_zip_checkpoint_says_how_to_convert(tmp_path):
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    path = tmp_path / "model.pt"
    torch.save({"w": torch.ones(2)}, path)
    with pytest.raises(ct.FormatError, match="zip.*save_file"):
        ct.load(path)


def test_a_pytorch_legacy_checkpoint_says_how_to_convert(tmp_path):
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    path = tmp_path / "model.pt"
    torch.save({"w": torch.ones(2)}, path, _use_new_zipfile_serialization=False)
    with pytest.raises(ct.FormatError, match="legacy pickle.*save_file"):
        ct.load(path)


def test_pickle_magic_without_pytorch(tmp_path):
    # The legacy format: protocol 2, then torch's magic number as a pickled long.
    legacy = tmp_path / "legacy.pt"
    legacy.write_bytes(b"\x80\x02\x8a\x0alF\x9c\xfc\xf9 \xa8P\x19.")
    with pytest.raises(ct.FormatError, match="legacy pickle"):
        ct.load(legacy)
    archive = tmp_path / "zipped.pt"
    import zipfile
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("archive/data.pkl", b"\x80\x02}q\x00.")
    with pytest.raises(ct.FormatError, match="zip"):
        ct.load(archive)


@pytest.mark.parametrize("bad, error, named", [
    ({"a\0b": 1, "a\0c": 2}, ValueError, "a\\\\x00b"),
    ({1: 1, (2, 3): 2}, TypeError, "\\(2, 3\\)"),
    ({"state": {0: 1, frozenset(): 2}}, TypeError, "frozenset"),
    ({"a.b": 1, "a": {"b": 2}}, ValueError, "'a.b'"),
    ({"a": {"b\0": 1}, "c": 2.0}, ValueError, "b\\\\x00"),
    ({"\udc80": 1}, ValueError, "surrogate"),
    ({"x": {"\udc80": 1}}, ValueError, "surrogate"),
])
def test_what_cannot_round_trip_is_refused_before_writing(tmp_path, bad, error, named):
    def tensors(obj):
        if isinstance(obj, dict):
            return {k: tensors(v) for k, v in obj.items()}
        return ct.full((1,), float(obj)) if isinstance(obj, int) else obj

    path = tmp_path / "x.safetensors"
    with pytest.raises(error, match=named):
        ct.save(tensors(bad), path)
    assert not path.exists()
    ct.save(_state(), path)
    before = path.read_bytes()
    with pytest.raises(error):
        ct.save(tensors(bad), path)
    assert path.read_bytes() == before


def test_int_keys_round_trip(tmp_path):
    path = tmp_path / "i.safetensors"
    ct.save({1: ct.ones((1,)), "x": {2: ct.zeros((1,))}}, path)
    back = ct.load(path)
    assert set(back) == {1, "x"} and set(back["x"]) == {2}


@pytest.mark.parametrize("tree, why", [
    ("{not json", "Expecting"),
    (json.dumps({"dict": [["a", {"tensor": "missing"}]]}), "missing"),
    (json.dumps({"dict": "no pairs"}), "pairs"),
    (json.dumps({"frob": 1}), "frob"),
    (json.dumps([1, 2]), "kind"),
    ("[" * 100000 + "]" * 100000, "nested|kind"),
    ('{"list": ' * 5000 + "[]" + "}" * 5000, "nested"),
])
def test_corrupt_tree_metadata_names_the_file_and_key(tmp_path, tree, why):
    path = tmp_path / "tree.safetensors"
    ct._ctensor._save({"a": ct.ones((2,))}, str(path), {"ctensor.tree": tree})
    with pytest.raises(ct.FormatError) as caught:
        ct.load(path)
    message = str(caught.value)
    assert str(path) in message and "ctensor.tree" in message
    assert __import__("re").search(why, message), message


def test_deep_nesting_on_save_is_a_value_error(tmp_path):
    deep = ct.ones((1,))
    for _ in range(sys.getrecursionlimit() + 10):
        deep = [deep]
    path = tmp_path / "deep.safetensors"
    with pytest.raises(ValueError, match="nested more deeply"):
        ct.save({"x": deep}, path)
    assert not path.exists()
