"""The model's public surface is the one its docstring lists, group by group."""

import re

from fesens.fem.model.base import Model
from fesens.fem.model.linear import LinearModel


def public_members(cls: type) -> set[str]:
    return {name for klass in cls.__mro__ if klass is not object
            for name in vars(klass) if not name.startswith("_")}


def documented(cls: type) -> dict[str, set[str]]:
    groups = re.findall(r"\*\*(.+?)\*\*(.*?)(?=\n\s*\n)", cls.__doc__, flags=re.S)
    return {title: set(re.findall(r"``(\w+)``", text)) for title, text in groups}


def test_every_public_member_of_a_linear_model_is_listed_once_in_its_docstring():
    groups = documented(LinearModel)
    assert list(groups) == ["A physics declares", "A user calls", "The layers above read"]
    listed = [name for names in groups.values() for name in names]
    assert len(listed) == len(set(listed)), "a member listed in two groups"
    # `config` is declared by each physics (the registry requires it), not by the base class
    assert set(listed) - {"config"} == public_members(LinearModel)


def test_the_common_model_knows_no_linear_operator():
    linear_only = {"cell_matrices", "stiffness_fields", "stiffness", "assembler", "operator",
                   "solve", "modes", "coefficients", "cell_bilinear"}
    assert not linear_only & public_members(Model)
    assert public_members(Model) < public_members(LinearModel)
