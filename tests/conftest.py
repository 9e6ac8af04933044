"""Fixtures shared by test modules."""

import mlx.core as mx
import pytest


@pytest.fixture
def on_the_cpu():
    """MLX computes on the CPU while a test runs: the runtime's logic on the cpu backend, so
    `backend="auto"` means the CPU's on a GPU machine too."""
    device = mx.default_device()
    mx.set_default_device(mx.cpu)
    yield
    mx.set_default_device(device)
