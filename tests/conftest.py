"Shared pytest fixtures and paths."
from pathlib import Path
import pytest

REPO = Path(__file__).resolve().parents[1]

@pytest.fixture
def repo() -> Path:
    return REPO
