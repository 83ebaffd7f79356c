"""Object detection: the trainer, its templates, features from the backbone's feature maps, the box head, the graph, metrics, evaluation and compression."""
