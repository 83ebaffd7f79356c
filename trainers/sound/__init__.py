"""Sound classification: the trainer, its templates and clip features (the backbone is in ``backbones/sound.py``)."""
