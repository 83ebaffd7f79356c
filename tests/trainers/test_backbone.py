"""The EfficientNet-Lite0 rebuild: real photos come out right, the graph is cached, loading is safe."""

from __future__ import annotations

import pickle

import numpy as np
import onnx
import pytest

from modeldesk.deploy.preprocess import ImageSpec, preprocess_batch
from modeldesk.trainers.backbones import Backbone, get_backbone, list_backbones
from modeldesk.trainers.backbones.efficientnet_lite import fold_batchnorm
from modeldesk.trainers.backbones.torch_pickle import load_legacy_state_dict

CAT_IDS = range(281, 286)  # tabby, tiger cat, Persian, Siamese, Egyptian cat
ESPRESSO = 967


@pytest.fixture(scope="module")
def session(backbone, graph_dir):
    return backbone.create_session(graph_dir, device="cpu", threads=2)


def test_photos_are_classified_as_imagenet_classes(session, photos_dir):
    batch = preprocess_batch([photos_dir / "chelsea.jpg", photos_dir / "coffee.jpg"], ImageSpec())
    logits = session.run(["logits"], {"image": batch})[0]
    cat, coffee = logits.argmax(axis=1)
    assert cat in CAT_IDS
    assert coffee == ESPRESSO


def test_outputs_and_shapes(session, backbone, photos_dir):
    batch = preprocess_batch([photos_dir / "chelsea.jpg"], backbone.spec)
    names = ["logits", "embedding", "stride8", "stride16", "stride32"]
    logits, embedding, s8, s16, s32 = session.run(names, {"image": batch})
    assert logits.shape == (1, 1000) and embedding.shape == (1, 1280)
    assert s8.shape == (1, 40, 28, 28) and s16.shape == (1, 112, 14, 14) and s32.shape == (1, 320, 7, 7)
    assert backbone.spec == ImageSpec()
    assert np.isfinite(embedding).all() and embedding.std() > 0


def test_registry():
    assert get_backbone("efficientnet-lite0") in list_backbones()
    with pytest.raises(ValueError, match="unknown backbone 'nope'.*efficientnet-lite0"):
        get_backbone("nope")


def test_graph_is_built_once_and_written_atomically(tmp_path, backbone):
    calls = []

    def build():
        calls.append(1)
        return backbone.build()

    counted = Backbone(
        name="counted",
        version="v1",
        description="",
        spec=backbone.spec,
        outputs=backbone.outputs,
        build=build,
    )
    first = counted.onnx_path(tmp_path)
    second = counted.onnx_path(tmp_path)
    assert first == second and len(calls) == 1
    assert [p.name for p in tmp_path.iterdir()] == [first.name]  # no temporary file left behind
    onnx.checker.check_model(onnx.load(str(first)))


def test_fold_batchnorm_matches_conv_then_bn():
    rng = np.random.default_rng(0)
    weight = rng.normal(size=(4, 3, 1, 1)).astype(np.float32)
    state = {
        "bn.weight": rng.normal(size=4),
        "bn.bias": rng.normal(size=4),
        "bn.running_mean": rng.normal(size=4),
        "bn.running_var": rng.uniform(0.5, 2, 4),
    }
    x = rng.normal(size=(10, 3)).astype(np.float32)
    conv = x @ weight[:, :, 0, 0].T
    expected = (conv - state["bn.running_mean"]) / np.sqrt(state["bn.running_var"] + 1e-3) * state[
        "bn.weight"
    ] + state["bn.bias"]
    folded_w, folded_b = fold_batchnorm(weight, state, "bn")
    np.testing.assert_allclose(x @ folded_w[:, :, 0, 0].T + folded_b, expected, rtol=1e-5, atol=1e-5)


def test_weight_loader_refuses_arbitrary_globals(tmp_path):
    class Evil:
        def __reduce__(self):
            import os

            return (os.system, ("echo pwned",))

    path = tmp_path / "evil.pth"
    with open(path, "wb") as file:
        for obj in (0x1950A86A20F9469CFC6C, 1001, {"little_endian": True}, Evil()):
            pickle.dump(obj, file, protocol=2)
    with pytest.raises(pickle.UnpicklingError, match="posix.system|os.system|not allowed"):
        load_legacy_state_dict(path)


def test_weight_loader_rejects_other_files(tmp_path):
    path = tmp_path / "zip.pth"
    path.write_bytes(b"PK\x03\x04 not a legacy file")
    with pytest.raises(ValueError, match="not a legacy torch weight file"):
        load_legacy_state_dict(path)


def test_matches_pytorch_reference(session, backbone, photos_dir):
    """Independent reference: torch.load + unfolded BatchNorm + explicit TF-SAME padding."""
    torch = pytest.importorskip("torch")
    import math

    import torch.nn.functional as F

    from modeldesk.trainers.backbones.efficientnet_lite import BLOCKS, weight_file

    state = torch.load(weight_file(), map_location="cpu", weights_only=True)

    def conv_bn(x, conv, bn, stride=1, groups=1, act=True):
        w = state[conv + ".weight"]
        k = w.shape[-1]
        pads = []
        for size in (x.shape[3], x.shape[2]):
            out = math.ceil(size / stride)
            total = max((out - 1) * stride + k - size, 0)
            pads += [total // 2, total - total // 2]
        x = F.conv2d(F.pad(x, pads), w, stride=stride, groups=groups)
        x = F.batch_norm(
            x,
            state[bn + ".running_mean"],
            state[bn + ".running_var"],
            state[bn + ".weight"],
            state[bn + ".bias"],
            training=False,
            eps=1e-3,
        )
        return F.relu6(x) if act else x

    batch = preprocess_batch([photos_dir / "chelsea.jpg", photos_dir / "coffee.jpg"], backbone.spec)
    with torch.no_grad():
        x = conv_bn(torch.from_numpy(batch), "_conv_stem", "_bn0", stride=2)
        cin = 32
        for i, (expand, cout, _k, stride) in enumerate(BLOCKS):
            p = f"_blocks.{i}"
            inp = x
            if expand:
                x = conv_bn(x, p + "._expand_conv", p + "._bn0")
            x = conv_bn(x, p + "._depthwise_conv", p + "._bn1", stride=stride, groups=expand or cin)
            x = conv_bn(x, p + "._project_conv", p + "._bn2", act=False)
            if stride == 1 and cin == cout:
                x = x + inp
            cin = cout
        x = conv_bn(x, "_conv_head", "_bn1").mean(dim=(2, 3))
        logits = F.linear(x, state["_fc.weight"], state["_fc.bias"])
    embedding, ours = session.run(["embedding", "logits"], {"image": batch})
    np.testing.assert_allclose(embedding, x.numpy(), atol=1e-4, rtol=1e-4)
    np.testing.assert_allclose(ours, logits.numpy(), atol=1e-4, rtol=1e-4)
    assert np.abs(ours - logits.numpy()).max() < 1e-4, np.abs(ours - logits.numpy()).max()
