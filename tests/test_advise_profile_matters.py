"""A column's distinct values are counted only where the kinds advise tries hang on them
(``advise_profile.profile_matters``): for every set of ways a column is filtered and every column
type, a column the rule leaves uncounted gets the same candidates (kinds, options and why) for
any profile, and one it counts gets different ones for some profile."""

import itertools

import pytest

from indexcore.analysis.advise_profile import candidate_kinds, profile_matters
from indexcore.analysis.workload import EQUALITY, NULL_TEST, OTHER, PATTERN, PREFIX, RANGE
from indexcore.types import parse_type

WAYS = (EQUALITY, RANGE, NULL_TEST, OTHER, PREFIX, PATTERN)
PROFILES = [{"max_distinct": d, "max_rows": r} for d, r in ((0, 0), (1, 60), (3, 60), (40, 60), (999, 10_000),
                                                            (5_000, 10_000), (1 << 30, 1 << 30))]


@pytest.mark.parametrize("type_text", ["STRING", "INT", "BIGINT", "DOUBLE", "DATE", "BOOLEAN", "DECIMAL(10, 2)"])
def test_uncounted_columns_get_the_same_candidates_whatever_they_hold(type_text):
    dtype = parse_type(type_text)
    for n in range(len(WAYS) + 1):
        for ways in itertools.combinations(WAYS, n):
            answers = {repr(candidate_kinds(dtype, set(ways), p)) for p in PROFILES}
            if not profile_matters(set(ways)):
                assert len(answers) == 1, (type_text, ways)


def test_equality_on_a_string_is_counted_and_its_candidates_differ():
    dtype = parse_type("STRING")
    for ways in ({EQUALITY}, {EQUALITY, RANGE}, {NULL_TEST}, {OTHER, PREFIX}):
        assert profile_matters(ways)
        assert len({repr(candidate_kinds(dtype, ways, p)) for p in PROFILES}) > 1, ways
    assert not profile_matters({RANGE}) and not profile_matters({RANGE, PREFIX}) and not profile_matters({PATTERN})
