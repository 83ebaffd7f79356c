"""Tabular classification and regression: a row of named columns -> a class or a value."""
