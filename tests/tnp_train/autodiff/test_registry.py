"""The registry is complete: every tnp function has a VJP or a declaration, and so does every
name the operators, methods and indexing report to the tape."""
import pytest

import tnp
from tnp._core import ndarray as nd, operators as ops
from tnp_train.autodiff import registry


def test_every_registered_tnp_function_has_a_rule_or_a_declaration():
    assert registry.missing() == []


OPERATOR_AND_METHOD_NAMES = sorted(
    set(ops._BINARY_NAMES.values())
    | {f.__name__ for f in ops._COMPARE.values()}
    | {reg for reg, _ in ops._UNARY.values()}
    | {"getitem", "transpose", "matrix_transpose", "real", "imag", "reshape", "astype", "copy",
       "view"})


@pytest.mark.parametrize("name", OPERATOR_AND_METHOD_NAMES)
def test_operator_and_method_names_are_covered(name):
    assert name in registry.VJPS or registry.is_nondifferentiable(name)


def test_rules_are_grouped_by_the_sections_of_tnp():
    wrong = {n: (r.section, tnp.REGISTRY[n].section) for n, r in registry.VJPS.items()
             if n in tnp.REGISTRY and r.section != tnp.REGISTRY[n].section}
    assert wrong == {}


def test_declarations_are_disjoint_from_rules():
    both = (set(registry.NONDIFF) | set(registry.NO_ARRAY_OUTPUT)) & set(registry.VJPS)
    assert both == set()
