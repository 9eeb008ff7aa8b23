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


def test_script_naming_cuda_falls_back_to_eager_with_a_note() -> None:
    import warnings

    from torchport.runtime._session import TorchportWarning

    with enabled("cpu") as s:
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")

            @torch.jit.script
            def h(a: torch.Tensor) -> torch.Tensor:
                return a + torch.ones(2, device="cuda")

        assert not isinstance(h, torch.jit.ScriptFunction)  # eager: the redirect serves it
        assert h(torch.ones(2).cuda()).tolist() == [2.0, 2.0]
        assert any(
            issubclass(x.category, TorchportWarning) and "runs eagerly on cpu" in str(x.message) for x in w
        )
        lines = [site for site in s.log.sites.values() if site.api == "torch.jit.script"]
        assert lines and lines[0].cls == "modified"

        class M(torch.nn.Module):
            def forward(self, x: torch.Tensor) -> torch.Tensor:
                return x.to("cuda:0") * 2

        m = M()
        assert torch.jit.script(m) is m
        assert m(torch.ones(1)).tolist() == [2.0]


def test_trace_records_the_target_device() -> None:
    with enabled("cpu"):
        traced = torch.jit.trace(lambda a: a + torch.ones(2, device="cuda"), (torch.ones(2),))
        assert isinstance(traced, torch.jit.ScriptFunction)
        assert traced(torch.ones(2)).tolist() == [2.0, 2.0]
    assert traced(torch.ones(2)).device.type == "cpu"  # still runs after disable: cpu is baked in
