"""Shared test builders: Kubernetes objects as dicts, snapshots and sessions from them."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from hypothesis import Phase, settings  # noqa: E402

# `pytest --hypothesis-profile=noshrink` reports a failing example at once instead of minimising it,
# which helps when one run of a property is slow.
settings.register_profile("noshrink", phases=[Phase.explicit, Phase.reuse, Phase.generate])
