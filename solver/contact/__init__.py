"""The contact layer: unilateral contacts with Coulomb friction between rod segments (capsules) and colliders
(``colliders``: plane, sphere, capsule, box, and a triangle mesh as a signed distance grid from ``sdf``) and between
segments. :class:`Contacts` (``contacts``) is the constraint set a ``Simulator`` runs in every step, composed of
detection (``detection``, ``topology``), the step's rows (``rows``, plain data) and their geometry (``geometry``),
one solver strategy (``solvers``: Gauss–Seidel, the active set, the schur method; experimental: the tree response
and semismooth Newton; the sparse direct solve of joints and contacts in ``contact_kkt``) and post-stabilisation
(``post_stabilise``).
"""

from .colliders import Box, Capsule, Collider, Mesh, Plane, Sphere
from .contact_kkt import solve_joints_and_contacts
from .contacts import Contacts
from .detection import DetectionOptions
from .post_stabilise import PostOptions
from .report import ContactReport
from .sdf import SignedDistanceGrid, mesh_signed_distance_grid
from .solvers import ActiveSetOptions, GaussSeidelOptions, SchurOptions, SemismoothOptions, TreeResponseOptions

__all__ = [
    "Contacts",
    "ContactReport",
    "DetectionOptions",
    "PostOptions",
    "GaussSeidelOptions",
    "ActiveSetOptions",
    "SchurOptions",
    "SemismoothOptions",
    "TreeResponseOptions",
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
