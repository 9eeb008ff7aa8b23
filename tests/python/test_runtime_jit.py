"""torch.jit.script keeps working under the redirect (transfer_to_npu disables it)."""

from __future__ import annotations

import torch

from runtime_testlib import enabled


class Block(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.lin(x)) + torch.zeros(3) + torch.ones_like(x)


def test_script_function_and_module_under_redirect() -> None:
    torch.manual_seed(0)
    eager = Block()
    x = torch.randn(2, 3)
    with enabled("cpu"):

        @torch.jit.script
        def f(a: torch.Tensor) -> torch.Tensor:
            return a * 2 + torch.zeros(3) + torch.arange(3)

        scripted = torch.jit.script(eager.cuda())
        assert isinstance(scripted, torch.jit.ScriptModule)  # compiled, not an identity fallback
        assert isinstance(f, torch.jit.ScriptFunction)
        got = scripted(x.cuda())
        assert f(torch.ones(3)).tolist() == [2.0, 3.0, 4.0]
        assert "aten::zeros" in str(f.graph)
    assert torch.equal(got, eager(x))


def test_script_after_disable_still_works() -> None:
    with enabled("cpu"):
        pass

    @torch.jit.script
    def g(a: torch.Tensor) -> torch.Tensor:
        return torch.zeros(2) + a

    assert g(torch.ones(2)).tolist() == [1.0, 1.0]
