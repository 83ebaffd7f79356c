import pytest

from modeldesk.deploy import Predictor, compress_artifact, load_artifact, save_artifact
from modeldesk.deploy.compress import (
    SPEED_TIE,
    Candidate,
    default_candidates,
    explain_kept,
    one_view_candidates,
    parse_candidate,
    pick_kept,
    refit_candidates,
)
from modeldesk.deploy.resize import ResizeError, fixed_grid_pooling, resize_input

KEYS = {"path", "size_bytes", "candidates", "chosen", "accuracy_fp32", "accuracy_compressed", "speedup"}


@pytest.fixture(scope="module")
def compressed(standin_artifact, color_data, tmp_path_factory):
    out = tmp_path_factory.mktemp("compressed") / "model"
    calls = []
    result = compress_artifact(
        standin_artifact,
        out,
        calibration=[p for p, _ in color_data["train"]],
        validation=color_data["val"],
        candidates=["int8-qdq-pertensor", "int8-qop-perchannel", "fp32-160", "int8-qdq-pertensor-160"],
        latency_runs=2,
        progress=lambda done, total, name: calls.append((done, total, name)),
    )
    return result, calls


def test_result_has_the_export_keys_and_one_kept_candidate(compressed):
    result, calls = compressed
    assert KEYS <= set(result)
    names = [c["name"] for c in result["candidates"]]
    assert names == [
        "fp32",
        "int8-qdq-pertensor",
        "int8-qop-perchannel",
        "fp32-160",
        "int8-qdq-pertensor-160",
    ]
    assert [c["name"] for c in result["candidates"] if c["kept"]] == [result["chosen"]]
    for c in result["candidates"]:
        assert set(c["latency_ms_by_threads"]) == {"1", "2"}
        assert c["latency_ms"] == c["latency_ms_by_threads"]["2"] and c["latency_ms_1t"] > 0
        assert 0 <= c["accuracy"] <= 1 and c["size_bytes"] > 0 and c["reason"]
        # above one thread every runtime is timed, and the row keeps its fastest
        by_runtime = c["latency_ms_by_runtime"]
        assert set(by_runtime) == {"onnxruntime", "onnxruntime-split"} and set(
            by_runtime["onnxruntime-split"]
        ) == {"2"}
        assert c["latency_ms"] == min(r["2"] for r in by_runtime.values()) == by_runtime[c["runtime"]]["2"]
    assert [c[0] for c in calls] == [1, 2, 3, 4, 5]
    kept = load_artifact(result["path"]).card
    assert kept["runtime"]["name"] == result["runtime"] == kept["compression"]["runtime"]


def test_kept_candidate_is_the_fastest_within_one_point(compressed):
    result, _ = compressed
    rows = result["candidates"]
    fp32 = rows[0]
    ok = [r for r in rows if r["accuracy"] >= fp32["accuracy"] - 0.01]
    fastest = min(r["latency_ms"] for r in ok)
    as_fast = [r for r in ok if r["latency_ms"] <= fastest * (1 + SPEED_TIE)]
    assert result["chosen"] == max(as_fast, key=lambda r: (r["accuracy"], -r["latency_ms"]))["name"]
    assert result["accuracy_compressed"] >= result["accuracy_fp32"] - 0.01
    chosen = next(r for r in rows if r["kept"])
    assert result["speedup"] == pytest.approx(fp32["latency_ms"] / chosen["latency_ms"], rel=1e-2)
    assert result["speedup_by_threads"]["1"] == pytest.approx(
        fp32["latency_ms_1t"] / chosen["latency_ms_1t"], rel=1e-2
    )


def test_compressed_artifact_is_a_normal_artifact_with_its_own_preprocessing(compressed, color_data):
    result, _ = compressed
    artifact = load_artifact(result["path"])
    chosen = next(r for r in result["candidates"] if r["kept"])
    assert artifact.spec.size == chosen["input_size"]
    assert artifact.card["compression"]["chosen"] == result["chosen"]
    predictions = Predictor(artifact, device="cpu").predict([p for p, _ in color_data["val"]])
    accuracy = sum(p["label"] == label for p, (_, label) in zip(predictions, color_data["val"])) / len(
        predictions
    )
    assert accuracy == pytest.approx(result["accuracy_compressed"])


def test_falls_back_to_fp32_when_nothing_keeps_accuracy(standin_artifact, color_data, tmp_path):
    result = compress_artifact(
        standin_artifact,
        tmp_path / "m",
        calibration=[p for p, _ in color_data["train"]],
        validation=color_data["val"],
        candidates=["int8-qdq-pertensor"],
        threads=(1,),
        max_loss=-0.5,
        latency_runs=2,
    )
    assert result["chosen"] == "fp32" and result["speedup"] == 1.0
    assert "no compressed candidate" in result["candidates"][0]["reason"]
    assert result["candidates"][1]["reason"].startswith("rejected")
    assert load_artifact(result["path"]).card["compression"]["chosen"] == "fp32"


def test_fixed_grid_pooling_skips_resize_candidates_with_the_reason(deploy_helpers, color_data, tmp_path):
    model = deploy_helpers.build_fixed_pool_model()
    assert fixed_grid_pooling(model)
    with pytest.raises(ResizeError, match="fixed spatial grid"):
        resize_input(model, 160)
    path = save_artifact(tmp_path / "fixed", model, deploy_helpers.standin_card())
    result = compress_artifact(
        path,
        tmp_path / "out",
        calibration=[p for p, _ in color_data["train"]],
        validation=color_data["val"],
        candidates=["fp32-160", "int8-qdq-pertensor-192"],
        threads=(1,),
        latency_runs=2,
    )
    skipped = result["candidates"][1:]
    assert all(r["reason"].startswith("skipped") and "fixed spatial grid" in r["reason"] for r in skipped)
    assert result["chosen"] == "fp32"


def test_resize_keeps_a_globally_pooled_graph_working(deploy_helpers):
    model = resize_input(deploy_helpers.build_standin_model(), 160)
    dims = model.graph.input[0].type.tensor_type.shape.dim
    assert [dims[2].dim_value, dims[3].dim_value] == [160, 160]


def test_candidate_names_round_trip():
    for candidate in default_candidates(224) + refit_candidates(224) + one_view_candidates(224, refit=True):
        assert parse_candidate(candidate.name) == candidate
    assert len(default_candidates(224)) == 21
    assert parse_candidate("int8-qdq-perchannel-176-1view-refit") == Candidate(
        176, "qdq", True, refit=True, one_view=True
    )
    assert parse_candidate("int8-qop-perchannel-keepfirst-160") == Candidate(160, "qop", True, True)
    assert Candidate(size=160, quant="qop", per_channel=True).name == "int8-qop-perchannel-160"
    with pytest.raises(ValueError):
        parse_candidate("int4-magic")


def test_grid_pooling_by_reshape_and_matmul_is_detected(deploy_helpers):
    model = deploy_helpers.build_matmul_grid_model()
    assert fixed_grid_pooling(model) == ["grid/reshape"]
    with pytest.raises(ResizeError, match="fixed spatial grid"):
        resize_input(model, 192)
    assert fixed_grid_pooling(deploy_helpers.build_standin_model()) == []


def test_quantization_keeps_the_head_in_float_and_pruning_drops_dead_branches(deploy_helpers, color_data):
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper

    from modeldesk.deploy.compress import prune_unused
    from modeldesk.deploy.preprocess import ImageSpec, preprocess_batch
    from modeldesk.deploy.quantize import Quantizer

    model = deploy_helpers.build_standin_model()
    model.graph.initializer.append(numpy_helper.from_array(np.ones((16, 1000), np.float32), "dead_w"))
    model.graph.node.append(helper.make_node("MatMul", ["feat", "dead_w"], ["dead_logits"], name="dead"))
    pruned = prune_unused(model)
    assert "dead" not in {n.name for n in pruned.graph.node} and "dead_w" not in {
        t.name for t in pruned.graph.initializer
    }
    assert len(pruned.graph.node) == len(model.graph.node) - 1
    calibration = preprocess_batch([p for p, _ in color_data["train"]], ImageSpec())
    with Quantizer(pruned, calibration, input_name="image") as quantizer:
        quantized = onnx.load_from_string(quantizer.quantize("qop", per_channel=False))
    ops = {n.op_type for n in quantized.graph.node}
    assert "QLinearConv" in ops and "Gemm" in ops and "QGemm" not in ops


def test_keep_first_layers_float_leaves_the_stem_in_float(deploy_helpers, color_data):
    import onnx

    from modeldesk.deploy.preprocess import ImageSpec, preprocess_batch
    from modeldesk.deploy.quantize import Quantizer

    calibration = preprocess_batch([p for p, _ in color_data["train"]], ImageSpec())
    with Quantizer(deploy_helpers.build_standin_model(), calibration, input_name="image") as quantizer:
        full = onnx.load_from_string(quantizer.quantize("qop", True))
        mixed = onnx.load_from_string(quantizer.quantize("qop", True, keep_first=True))

    def count(m, op):
        return sum(n.op_type == op for n in m.graph.node)

    assert count(full, "QLinearConv") == 2 and count(full, "Conv") == 0
    assert count(mixed, "QLinearConv") == 1 and count(mixed, "Conv") == 1


@pytest.mark.parametrize("saturates", [False, True])
def test_per_channel_weights_get_seven_bits_where_eight_would_saturate(
    deploy_helpers, color_data, monkeypatch, saturates
):
    import numpy as np
    import onnx
    from onnx import numpy_helper

    from modeldesk.deploy import quantize
    from modeldesk.deploy.preprocess import ImageSpec, preprocess_batch

    monkeypatch.setattr(quantize, "int8_products_may_saturate", lambda: saturates)
    calibration = preprocess_batch([p for p, _ in color_data["train"]], ImageSpec())

    def widest_weight(per_channel: bool) -> int:
        with quantize.Quantizer(deploy_helpers.build_standin_model(), calibration, input_name="image") as q:
            model = onnx.load_from_string(q.quantize("qop", per_channel))
        weights = [
            numpy_helper.to_array(i) for i in model.graph.initializer if i.data_type == onnx.TensorProto.INT8
        ]
        return max(int(np.abs(w.astype(int)).max()) for w in weights)

    assert widest_weight(per_channel=True) == (64 if saturates else 127)
    assert widest_weight(per_channel=False) == 127  # per tensor keeps its 8 bits


def test_calibrating_a_few_images_at_a_time_gives_the_same_int8_graph(deploy_helpers, color_data):
    """Large models calibrate in small batches to bound memory; the ranges are the same."""
    from modeldesk.deploy.preprocess import ImageSpec, preprocess_batch
    from modeldesk.deploy.quantize import Quantizer

    calibration = preprocess_batch([p for p, _ in color_data["train"]], ImageSpec())
    graphs = []
    for batch in (1, 8):
        with Quantizer(
            deploy_helpers.build_standin_model(), calibration, input_name="image", batch_size=batch
        ) as quantizer:
            graphs.append(quantizer.quantize("qdq", True))
    assert len(calibration) > 8 and graphs[0] == graphs[1]


def test_a_large_model_is_timed_in_its_own_batches_on_the_same_items():
    import numpy as np

    from modeldesk.deploy.compress import _InBatches

    class Recording:
        def __init__(self):
            self.sizes = []

        def run(self, names, feeds):
            self.sizes.append(len(feeds["image"]))

    session = Recording()
    _InBatches(session, 3).run(["out"], {"image": np.zeros((8, 3, 4, 4), np.float32)})
    assert session.sizes == [3, 3, 2]


def test_grid_pooling_is_detected_behind_symbolic_input_dimensions(deploy_helpers):
    """Trained models declare (N, 3, H, W) with symbolic H and W; the size they were built for
    lets the check see the fixed grid anyway, so the reason is clear instead of an ORT error."""
    model = deploy_helpers.build_matmul_grid_model()
    dims = model.graph.input[0].type.tensor_type.shape.dim
    size = dims[2].dim_value
    for axis, name in ((2, "height"), (3, "width")):
        dims[axis].dim_param = name
    assert fixed_grid_pooling(model) == []
    assert fixed_grid_pooling(model, size) == ["grid/reshape"]
    with pytest.raises(ResizeError, match="fixed spatial grid"):
        resize_input(model, 192, original_size=size)


def test_interleaved_timing_leaves_out_the_cost_of_switching_sessions(monkeypatch):
    """A session's first run after another's is slow (that one's threads still spin, caches hold its
    weights); the timing must report what each costs when it runs on its own."""
    from modeldesk.deploy import compress

    clock = {"now": 0.0, "last": None}

    class FakeSession:
        def __init__(self, name, ms):
            self.name, self.ms = name, ms

        def run(self, outputs, feeds):
            switched = clock["last"] not in (None, self.name)
            clock["now"] += (self.ms + (40.0 if switched else 0.0)) / 1000.0
            clock["last"] = self.name

    monkeypatch.setattr(compress.time, "perf_counter", lambda: clock["now"])
    feeds = {"x": [0] * 8}
    ms = compress.time_interleaved(
        {"fp32": (FakeSession("fp32", 48.0), "y", feeds), "int8": (FakeSession("int8", 16.0), "y", feeds)},
        rounds=5,
    )
    assert ms == pytest.approx({"fp32": 6.0, "int8": 2.0})


def test_of_candidates_about_as_fast_the_most_accurate_is_kept():
    """Timing cannot rank copies a few percent apart; their accuracy on the validation images can."""
    fp32 = {"name": "fp32", "latency_ms": 6.0, "accuracy": 0.97}
    quick = {"name": "int8", "latency_ms": 2.31, "accuracy": 0.975}
    twin = {"name": "int8-refit", "latency_ms": 2.34, "accuracy": 0.984}
    slow = {"name": "int8-keepfirst", "latency_ms": 3.0, "accuracy": 0.99}
    rows = [fp32, quick, twin, slow]
    assert pick_kept(rows) is twin
    explain_kept(twin, rows, fp32)
    assert (twin["code"], quick["code"], slow["code"], fp32["code"]) == (
        "kept",
        "as_fast_less_accurate",
        "slower",
        "reference",
    )
    assert "most accurate" in twin["reason"] and "less accurate" in quick["reason"]
    # a clearly faster copy wins over a more accurate one, and fp32 is kept only when nothing is clearly faster
    assert pick_kept([fp32, quick, slow]) is quick
    assert pick_kept([fp32, {"name": "int8", "latency_ms": 5.9, "accuracy": 0.965}]) is fp32


def test_a_model_with_views_gives_its_rows_view_after_view_over_every_batch():
    """Rows for cross-fold heads: image i's view v is row v * N + i however many batches it took."""
    import numpy as np

    from modeldesk.deploy.compress import rows_view_after_view

    class TwoViews:  # each batch: its rows as they are, then mirrored (negated), as a views graph stacks
        def run(self, names, feeds):
            (x,) = feeds.values()
            return [np.concatenate([x, -x])]

    images = np.arange(70, dtype=np.float32).reshape(70, 1)
    rows = rows_view_after_view(TwoViews(), "features", "image", images, batch=32)
    np.testing.assert_array_equal(rows, np.concatenate([images, -images]))


def test_copies_are_judged_in_the_batches_the_predictor_would_use():
    """A 640 px detector that looks three times is judged a photo at a time, as it is served."""
    from modeldesk.deploy.compress import _TensorCache
    from modeldesk.deploy.preprocess import ImageSpec

    card = {"labels": ["a"], "preprocessing": ImageSpec(size=640).to_dict(), "test_views": ["a", "b", "c"]}
    data = _TensorCache(ImageSpec(size=640), [], [], card=card)
    assert data.batch(640) == 1
    assert data.batch(320) == 2
    plain = _TensorCache(ImageSpec(size=224), [], [])
    assert plain.batch(224) == 16
