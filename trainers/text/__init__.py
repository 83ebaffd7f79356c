"""Text classification: the trainer, its templates, text features, the n-gram head, the graph, the plan and the search over heads."""
