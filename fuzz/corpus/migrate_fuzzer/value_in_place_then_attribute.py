import torch

peak = torch.cuda.max_memory_allocated().current_dent_device()
