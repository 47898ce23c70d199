"""Experimental contact strategies, kept for comparison and out of the main path: the tree response
(:mod:`.tree`) and the semismooth Newton method (:mod:`.semismooth`); docs/notes/contacts.md says where each fails."""

from .semismooth import Semismooth, SemismoothOptions
from .tree import TreeResponse, TreeResponseOptions

__all__ = ["Semismooth", "SemismoothOptions", "TreeResponseOptions", "TreeResponse"]
