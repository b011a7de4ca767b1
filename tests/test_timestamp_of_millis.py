"""``Timestamp.of_millis`` (the stats decoder's column of timestamps) makes what the constructor makes."""

import pickle

import pytest

from indexcore.types import Timestamp


def test_of_millis_equals_the_constructor():
    millis = [0, 5, -1, 1_700_000_000_123, -62_135_596_800_000, 253_402_300_799_999, 2**62]
    made = Timestamp.of_millis(millis)
    built = [Timestamp(m, 0) for m in millis]
    assert made == built
    assert [hash(t) for t in made] == [hash(t) for t in built]
    assert [(type(t), str(t), repr(t), t.millis, t.nanos) for t in made] == \
        [(type(t), str(t), repr(t), t.millis, t.nanos) for t in built]
    assert sorted(made) == sorted(built) and pickle.loads(pickle.dumps(made)) == built
    assert Timestamp.of_millis([]) == []


def test_of_millis_is_still_frozen():
    with pytest.raises(AttributeError):
        Timestamp.of_millis([1])[0].millis = 2


def test_a_timestamp_has_no_dict():
    """Slots: a file's min and max of a timestamp column are two Timestamps each (2,000,000 at
    1,000,000 files), with no ``__dict__`` each."""
    assert not hasattr(Timestamp(1), "__dict__") and not hasattr(Timestamp.of_millis([1])[0], "__dict__")
