"""Frozen pretrained backbones, rebuilt as ONNX graphs from weight packages.

>>> from modeldesk.trainers.backbones import get_backbone
>>> backbone = get_backbone("efficientnet-lite0")
>>> session = backbone.create_session(cache_dir, threads=2)  # doctest: +SKIP
"""

from modeldesk.deploy.preprocess import ImageSpec
from modeldesk.trainers.backbones import efficientnet_lite
from modeldesk.trainers.backbones.registry import Backbone, get_backbone, list_backbones, register_backbone

EFFICIENTNET_LITE0 = register_backbone(
    Backbone(
        name="efficientnet-lite0",
        version="57934424-bnfold-opset17-v1",
        description="EfficientNet-Lite0, ImageNet; 1280-d embedding and stride 8/16/32 feature maps",
        spec=ImageSpec(size=224, mean=127.0, std=128.0),
        outputs={
            "logits": efficientnet_lite.NUM_CLASSES,
            "embedding": efficientnet_lite.HEAD_CHANNELS,
            **efficientnet_lite.FEATURE_CHANNELS,
        },
        build=efficientnet_lite.build_model,
    )
)

__all__ = ["Backbone", "EFFICIENTNET_LITE0", "get_backbone", "list_backbones", "register_backbone"]
