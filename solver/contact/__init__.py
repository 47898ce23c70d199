"""The contact layer: unilateral contacts with Coulomb friction between rod segments (capsules) and
colliders (``colliders``: plane, sphere, capsule, box, and a triangle mesh as a signed distance grid from
``sdf``) and between segments. :class:`Contacts` (``contacts``) is the constraint set a ``Simulator`` runs
in every step; it is assembled from candidate detection (``candidates``), the rows' geometry (``rows``),
the responses (``response``: Gauss–Seidel, through the tree's factorisation, or one sparse direct solve of
joints and contacts, ``contact_kkt``) and post-stabilisation (``post_stabilise``).
"""

from .colliders import Box, Capsule, Collider, Mesh, Plane, Sphere
from .contact_kkt import solve_joints_and_contacts
from .contacts import ContactReport, Contacts
from .sdf import SignedDistanceGrid, mesh_signed_distance_grid

__all__ = [
    "Contacts",
    "ContactReport",
    "Collider",
    "Plane",
    "Sphere",
    "Capsule",
    "Box",
    "Mesh",
    "SignedDistanceGrid",
    "mesh_signed_distance_grid",
    "solve_joints_and_contacts",
]
