"""A document naming one role takes a shortcut that must agree with the full checks."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from glassrag.parsers.fields import explicit_roles


@given(st.text(alphabet=st.sampled_from("ab \t\u3000\xa0,"), max_size=6), st.booleans())
def test_one_role_as_the_full_checks_give_it(role: str, csv_roles: bool) -> None:
    if role.strip():
        assert explicit_roles([role], csv_roles) == (role.strip(),)
        assert explicit_roles([role, role], csv_roles) == (role.strip(),)  # the long way
    else:
        with pytest.raises(ValueError, match="entry 1 is blank"):
            explicit_roles([role], csv_roles)
