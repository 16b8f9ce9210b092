from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.wheels import build_wheel


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel of this checkout, as `pip wheel --no-deps .` builds it."""
    return build_wheel(tmp_path_factory.mktemp("wheel"))
