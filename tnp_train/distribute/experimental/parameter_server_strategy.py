"""``tt.distribute.experimental.ParameterServerStrategy`` (TF 2.4's); the implementation is in
``tnp_train.distribute.ps`` (see docs/distributed.md, "Parameter-server training")."""
from ..ps.strategy import ParameterServerStrategy, ParameterServerStrategyExtended

__all__ = ["ParameterServerStrategy", "ParameterServerStrategyExtended"]
