"""The pages of the main window, one per step: data, label, train, evaluate, deploy."""
