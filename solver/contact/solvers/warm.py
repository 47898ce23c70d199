"""The Newton methods' warm friction bound: each row's normal impulse of the last step at the same material point
(``StepRows.keys``), scaled to this step's stage h (λ = F h²). It is the friction bound μλ_n of the step's first
Newton iterate, whose own λ is 0: the iterate starts at the prediction, and x − x̂ = M⁻¹Jᵀλ holds only with λ from 0
(impulses carried over without their motion let the rope sink into the cylinder by its compliance every step)."""

from __future__ import annotations

import numpy as np

from ..rows import StepRows


class WarmStart:
    """Fills ``StepRows.warm_normal`` of each step from the rows of the step before."""

    def __init__(self):
        self._h: float | None = None
        self._last: StepRows | None = None

    def begin_step(self, sim, rows: StepRows) -> None:
        h = sim.step_context.stage_dt
        last_h, self._h = self._h, h
        last, self._last = self._last, rows
        if last_h is None or last is None:
            return
        scale = (h / last_h) ** 2
        push = last.normal_impulse > 0.0
        keys = last.keys()
        warm = {keys[i]: scale * float(last.normal_impulse[i]) for i in np.flatnonzero(push)}
        if warm:
            for i, key in enumerate(rows.keys()):
                rows.warm_normal[i] = warm.get(key, 0.0)
