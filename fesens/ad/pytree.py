"""Nested containers of arrays and numbers: flatten to leaves and rebuild.

Supported nodes: dict (sorted keys), list, tuple; leaves: numpy arrays, Python and numpy
numbers (and boxes of them).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


def flatten(tree) -> tuple[list, Callable[[list], object]]:
    """Leaves of ``tree`` in a fixed order, and a function rebuilding a tree from leaves."""
    if isinstance(tree, dict):
        keys = sorted(tree)
        parts = [flatten(tree[k]) for k in keys]
        return _join(parts, lambda items: dict(zip(keys, items, strict=True)))
    if isinstance(tree, list | tuple):
        parts = [flatten(item) for item in tree]
        kind = type(tree)
        return _join(parts, lambda items: kind(items) if kind in (list, tuple) else kind(*items))
    return [tree], lambda leaves: leaves[0]


def _join(parts, build):
    leaves, counts, rebuilders = [], [], []
    for part_leaves, rebuild in parts:
        leaves.extend(part_leaves)
        counts.append(len(part_leaves))
        rebuilders.append(rebuild)

    def unflatten(new_leaves):
        items, start = [], 0
        for count, rebuild in zip(counts, rebuilders, strict=True):
            items.append(rebuild(new_leaves[start:start + count]))
            start += count
        return build(items)

    return leaves, unflatten


def as_leaf_value(leaf):
    """A numeric leaf as a float or float array (ints become floats), checked."""
    if type(leaf) is np.ndarray and leaf.dtype.kind == "f":
        return leaf
    if isinstance(leaf, bool) or not isinstance(leaf, int | float | complex | np.ndarray |
                                                np.number):
        raise TypeError(
            f"cannot differentiate with respect to a {type(leaf).__name__}; inputs must be "
            "arrays, numbers, or dicts/lists/tuples of them"
        )
    if isinstance(leaf, np.ndarray):
        return leaf.astype(float) if leaf.dtype.kind in "biu" else leaf
    return float(leaf)


def zeros_like_leaf(leaf):
    """Zero cotangent matching a leaf (float for numbers)."""
    return np.zeros_like(leaf, dtype=float) if isinstance(leaf, np.ndarray) else 0.0


def match_leaf(g, leaf):
    """Give a cotangent the type of its leaf: float for number leaves, array otherwise."""
    if isinstance(leaf, np.ndarray):
        if type(g) is np.ndarray and g.shape == leaf.shape and g.flags.writeable:
            return g
        g = g if np.shape(g) == leaf.shape else np.reshape(g, leaf.shape)
        return g.copy() if type(g) is np.ndarray and not g.flags.writeable else g
    return g if not isinstance(g, np.ndarray) else float(g)


def flatten_like(tree, like) -> list:
    """The leaves of ``tree`` taken in the structure of ``like``: one per leaf of
    ``like``, in :func:`flatten`'s order; a ``None`` in place of a subtree of ``like``
    stands for a ``None`` at each of its leaves (a cotangent tree whose untraced parts
    are left out)."""
    if tree is None:
        return [None] * len(flatten(like)[0])
    if isinstance(like, dict):
        return [leaf for k in sorted(like) for leaf in flatten_like(tree[k], like[k])]
    if isinstance(like, list | tuple):
        return [leaf for item, part in zip(tree, like, strict=True)
                for leaf in flatten_like(item, part)]
    return [tree]
