"""torchport check-ops: predict, on this CPU, which operators fall back to the CPU or fail on a target.

`check_ops(model, example_inputs, targets=[...])` traces one training step (forward, backward, optimizer
step) and classifies every operator per target against the databases in data/opdb.
"""

from __future__ import annotations

import sys
import types
from typing import Any, Callable, Iterable, Optional, Sequence

from torchport.check_ops.report import Report

__all__ = ["Report", "check_ops", "check_callable"]


def _installed_torch_version() -> str:
    import torch

    from torchport._versions import major_minor

    return major_minor(torch.__version__)


def check_callable(
    step: Callable[[], Any],
    targets: Sequence[str],
    *,
    steps: int = 1,
    torch_version: Optional[str] = None,
    advise_optimizers: bool = True,
) -> Report:
    """Trace `step()` `steps` times and classify what it ran for each target."""
    import torch

    from torchport.check_ops._trace import Trace, trace
    from torchport.check_ops.classify import Classifier
    from torchport.check_ops.opdb import load

    if not targets:
        raise ValueError("check_ops: give at least one target")
    version = torch_version or _installed_torch_version()
    dbs = [load(t, version) for t in targets]  # fail on a bad target before running anything

    def run() -> None:
        for _ in range(steps):
            step()

    tr: Trace = trace(run)
    if not advise_optimizers:
        tr.optimizers = []
    reports = [Classifier(db).run(tr) for db in dbs]
    notes: list[str] = []
    if tr.joined < len(tr.calls):
        missing = len(tr.calls) - tr.joined
        notes.append(
            f"{missing} of {len(tr.calls)} operator calls are missing from the profile (the code ran its "
            "own torch.profiler session, which ends ours): for those, composite operators are not credited "
            "and CPU time is not measured"
        )
    return Report(
        reports,
        len(tr.calls),
        steps,
        tr.wall_s,
        torch.__version__,
        notes,
        phases=dict(tr.phases),
        steps_wall_s=tr.steps_wall_s,
        steps_wall_est_s=tr.steps_wall_est_s,
    )


def _default_loss(out: Any) -> Any:
    import torch

    if isinstance(out, torch.Tensor):
        return out.float().sum() if out.is_floating_point() or out.is_complex() else None
    parts: Iterable[Any]
    if isinstance(out, dict):
        parts = out.values()
    elif isinstance(out, (tuple, list)):
        parts = out
    else:
        parts = getattr(out, "values", lambda: [])()
    total = None
    for p in parts:
        t = _default_loss(p)
        if t is not None:
            total = t if total is None else total + t
    return total


def check_ops(
    model: Any,
    example_inputs: Any,
    targets: Sequence[str] = ("npu",),
    loss_fn: Optional[Callable[[Any], Any]] = None,
    optimizer: Any = None,
    *,
    steps: int = 1,
    torch_version: Optional[str] = None,
) -> Report:
    """Trace forward, backward and an optimizer step of `model` on `example_inputs` (a tensor, a tuple
    of positional inputs or a dict of keyword inputs) and classify every operator for each target.

    loss_fn(output) -> scalar defaults to the sum of the floating-point outputs. Without an optimizer,
    an SGD step with lr=0 runs (the parameters keep their values; their .grad are restored afterwards).
    """
    import torch

    if isinstance(targets, str):
        targets = [targets]
    params = [p for p in model.parameters() if p.requires_grad] if hasattr(model, "parameters") else []
    own_opt = optimizer is None and bool(params)
    opt = torch.optim.SGD(params, lr=0.0) if own_opt else optimizer
    saved = [p.grad for p in params] if own_opt else []

    def step() -> None:
        if isinstance(example_inputs, dict):
            out = model(**example_inputs)
        elif isinstance(example_inputs, (tuple, list)):
            out = model(*example_inputs)
        else:
            out = model(example_inputs)
        loss = (loss_fn or _default_loss)(out)
        if loss is not None and getattr(loss, "requires_grad", False):
            loss.backward()
        if opt is not None:
            opt.step()
            opt.zero_grad(set_to_none=True)

    try:
        return check_callable(
            step, targets, steps=steps, torch_version=torch_version, advise_optimizers=not own_opt
        )
    finally:
        for p, g in zip(params, saved):
            p.grad = g


class _CallableModule(types.ModuleType):
    """Makes `torchport.check_ops(model, ...)` call check_ops() while keeping the package importable."""

    def __call__(
        self, model: Any, example_inputs: Any, targets: Sequence[str] = ("npu",), *args: Any, **kwargs: Any
    ) -> Report:
        return check_ops(model, example_inputs, targets, *args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
