"""The toy physics registered for one test, and a registry that no test leaves changed."""

import pytest
from reaction_diffusion import ReactionDiffusion

from fesens.physics import PHYSICS, register_physics


@pytest.fixture(autouse=True)
def registry_unchanged():
    """Every test leaves the physics registry as it found it."""
    names = PHYSICS.names()
    yield
    for name in set(PHYSICS.names()) - set(names):
        PHYSICS.unregister(name)
    assert PHYSICS.names() == names


@pytest.fixture
def toy_physics():
    """:class:`ReactionDiffusion`, registered for the test (the one line a physics adds)."""
    register_physics(ReactionDiffusion)
    yield ReactionDiffusion
    PHYSICS.unregister(ReactionDiffusion.name)
