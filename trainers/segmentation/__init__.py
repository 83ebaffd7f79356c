"""Semantic segmentation: a class for every pixel, from the frozen backbone's stride maps."""
