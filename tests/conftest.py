"""Shared test builders: Kubernetes objects as dicts, snapshots and sessions from them."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
