"""The corpus suite: torchport over the real projects of ../shared/corpus (docs/fidelity.md)."""
