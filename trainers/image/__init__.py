"""Image tasks: classification (one label) and multi-label (tags): trainers, templates, the exported graph."""
