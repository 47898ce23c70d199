"""The air layer: wind fields u(x, t) [m/s] (``wind``: mean profile, gusts and turbulence, storms) and the
aerodynamic drag they put on branch and leaf segments (``drag``: quadratic drag on the relative air
velocity, leaves reconfiguring in strong wind), as external forces for a ``Simulator``.
"""

from .drag import AerodynamicDrag
from .wind import WindField, WindSum, storm

__all__ = ["WindField", "WindSum", "storm", "AerodynamicDrag"]
