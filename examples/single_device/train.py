"""A single-device regression trainer (README: `torchport migrate --distributed` makes it a DDP one)."""

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.tanh(self.fc1(x)))


def make_data() -> TensorDataset:
    g = torch.Generator().manual_seed(1)
    x = torch.randn(48, 8, generator=g)
    y = x.sum(dim=1, keepdim=True) * 0.5
    return TensorDataset(x, y)


def main() -> None:
    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    dataset = make_data()
    loader = DataLoader(dataset, batch_size=16, shuffle=False)
    model = Net().to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loss_fn = nn.MSELoss()
    step = 0
    for epoch in range(2):
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            optimizer.step()
            print(f"epoch {epoch} step {step} loss {loss.item():.6f}")
            step += 1
    torch.save(model.state_dict(), "model.pt")


if __name__ == "__main__":
    main()
