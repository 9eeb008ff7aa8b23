"""A tiny image classifier used by the example training script."""

from model.net import SmallNet, make_model

__all__ = ["SmallNet", "make_model"]
