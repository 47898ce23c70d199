"""Material presets for trees: wood and leaves (SI: Pa, kg/m³; drag coefficients dimensionless).

Stiffness follows the branch radius by itself: a preset gives only the moduli E and G; every joint's
bending and twisting stiffness K = diag(E I1, E I2, G J) (Deul Eq. 5) takes I = π r⁴/4, J = π r⁴/2 from
that joint's own radius (:func:`solver.core.model.cross_section_moments`), so EI ∝ r⁴: a 1 cm twig is
10⁴ times more flexible in bending than a 10 cm bough of the same wood, and thin twigs whip while the
trunk barely sways, with one material for the whole tree.

Presets:

* ``wood`` and ``leaf``: Deul et al. 2018, §5 (their Sapling birch, willow and pine): wood E 12.5 GPa,
  G 6.5 GPa; leaves E 1.2 GPa, G 0.6 GPa; density 1000 kg/m³ for both.
* ``birch``, ``willow``, ``pine``: green (living) wood of paper birch (*Betula papyrifera*), black
  willow (*Salix nigra*) and eastern white pine (*Pinus strobus*). E: modulus of elasticity of green
  clear wood, USDA Forest Products Laboratory, *Wood Handbook* (FPL-GTR-190, 2010), Table 5-3a
  (birch 8.1 GPa, willow 5.4 GPa, pine 6.8 GPa). G: the handbook's along-the-grain shear moduli are
  G_LR ≈ G_LT ≈ 0.05–0.1 E_L (Table 5-1); we take G = 0.07 E. Density: green specific gravity
  (Table 5-3a: 0.48, 0.36, 0.34) × (1 + green moisture content), with the sapwood moisture contents of
  the handbook's ch. 4 (birch 72 %, pine 148 %) and 130 % for willow (a wet-site wood; no tabulated
  value): 830, 830 and 840 kg/m³.
* ``steel`` and ``rubber``: the add-on's rods and cables. Steel E 209 GPa, G 79 GPa, 7800 kg/m³ (the
  authors' Wilberforce spring); rubber E 0.05 GPa, G 0.017 GPa, 1100 kg/m³ (a soft cable).

The add-on's Material menu (addon/spec.py) offers ``wood``, ``leaf``, ``steel`` and ``rubber`` from this table.

Stretch and shear: trees keep the near-inextensible joints (``stretch="inextensible"``, the default of
:func:`solver.rod_from_polyline`); ropes, cables and cords take their physical stretch and shear from the same
moduli with ``stretch="physical"``: E·A/l along the rod and κ·G·A/l across it, κ the shear coefficient
(:data:`solver.DEFAULT_SHEAR_COEFFICIENT` 0.9; 0.9–1.0 for round sections, Cowper's 6(1 + ν)/(7 + 6ν)).

Drag coefficients (see :mod:`solver.air.drag`): branches 1.2 (cylinder in subcritical cross-flow), leaves
1.17 normal to the plate and 0.05 along it.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..air.drag import CD_BRANCH, CD_LEAF_NORMAL, CD_LEAF_TANGENTIAL

G_OVER_E_WOOD = 0.07  # G_LR/E_L, G_LT/E_L ≈ 0.05–0.1 for most species (Wood Handbook Table 5-1)


@dataclass(frozen=True)
class Material:
    """A rod material: ``youngs_modulus`` and ``torsion_modulus`` [Pa], ``density`` [kg/m³],
    ``drag_coefficient`` (cylinder cross-flow C_d, or a leaf plate's normal C_n),
    ``tangential_drag_coefficient`` (leaf plates, along the plate), ``source`` (where the numbers come from)."""

    name: str
    youngs_modulus: float
    torsion_modulus: float
    density: float
    drag_coefficient: float
    tangential_drag_coefficient: float = 0.0
    source: str = ""

    def rod_kwargs(self) -> dict:
        """Keyword arguments for :func:`solver.rod_from_polyline` / :func:`solver.tree_from_branches`."""
        return dict(youngs_modulus=self.youngs_modulus, torsion_modulus=self.torsion_modulus, density=self.density)


def _green_wood(name, e_gpa, specific_gravity, moisture, source):
    return Material(
        name,
        e_gpa * 1e9,
        G_OVER_E_WOOD * e_gpa * 1e9,
        round(1000.0 * specific_gravity * (1.0 + moisture), -1),
        CD_BRANCH,
        source=source,
    )


PRESETS = {
    "wood": Material("wood", 12.5e9, 6.5e9, 1000.0, CD_BRANCH, source="Deul et al. 2018, §5 (trunk and branches)"),
    "leaf": Material(
        "leaf", 1.2e9, 0.6e9, 1000.0, CD_LEAF_NORMAL, CD_LEAF_TANGENTIAL, source="Deul et al. 2018, §5 (leaves)"
    ),
    "birch": _green_wood(
        "birch", 8.1, 0.48, 0.72, "paper birch, green: Wood Handbook FPL-GTR-190 (2010) Tables 5-3a, 5-1; ch. 4"
    ),
    "willow": _green_wood(
        "willow", 5.4, 0.36, 1.30, "black willow, green: Wood Handbook FPL-GTR-190 (2010) Tables 5-3a, 5-1"
    ),
    "pine": _green_wood(
        "pine", 6.8, 0.34, 1.48, "eastern white pine, green: Wood Handbook FPL-GTR-190 (2010) Tables 5-3a, 5-1; ch. 4"
    ),
    "steel": Material("steel", 209e9, 79e9, 7800.0, CD_BRANCH, source="spring steel: Deul et al.'s Wilberforce spring"),
    "rubber": Material("rubber", 0.05e9, 0.017e9, 1100.0, CD_BRANCH, source="rubber: a soft cable"),
}


def material(name: str) -> Material:
    """The preset called ``name`` (one of :data:`PRESETS`); ValueError naming the known ones otherwise."""
    try:
        return PRESETS[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown material {name!r}; presets: {', '.join(PRESETS)}") from None
