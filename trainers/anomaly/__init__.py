"""The anomaly detection task: learn what good parts look like, flag what is unlike them and show where.

``templates`` lists the presets, ``features`` turns the backbone's stride-8/16 maps into patch features,
``bank`` fits the model of "normal" (a coreset memory bank or a Gaussian), ``graph`` builds the one ONNX
graph from the photo to a score, a yes/no and a heatmap, ``scoring`` holds the metrics and threshold
rules, and ``trainer`` ties them into the task's trainer.
"""
