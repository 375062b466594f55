"""Models (``tt.models``): ``Sequential`` so far."""
from .sequential import Sequential

__all__ = ["Sequential"]
