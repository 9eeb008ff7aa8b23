"""Pages a person reads in a browser: self-contained HTML, no network, no third-party script.

- `migration`: `torchport-report/index.html` of migrate / analyze -o (summary, file tree,
  findings table with filters, per-file side-by-side diffs loaded on demand);
- `accuracy`: the page of `compare --format html` (and of `verify`): per-layer deviation chart,
  loss curves and the flagged table, as inline SVG.
"""
