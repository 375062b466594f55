"""VJPs of tnp's manipulation functions."""
from __future__ import annotations

import tnp

from ..registry import defvjp, nondifferentiable, no_array_output, section

section("manipulation")
