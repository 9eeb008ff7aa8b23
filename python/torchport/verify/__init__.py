"""`torchport verify`: does the migrated project train like the original? (docs/verify.md)

Importing this package does not import torch; the runs it starts do.
"""
