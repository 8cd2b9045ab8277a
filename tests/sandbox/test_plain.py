"""Plain data (`rewardsmith.sandbox.plain`): what crosses from the program's process to the
judge. Values come back with their exact types; what a subclass overrides does not travel;
anything else is refused with its type named; the judge refuses any shape `encode` does not
make."""

from __future__ import annotations

import json
from collections import Counter, OrderedDict, namedtuple
from enum import IntEnum
from typing import Any

import pytest

from rewardsmith.sandbox.plain import NotPlain, decode, encode

Point = namedtuple("Point", "x y")


class Level(IntEnum):
    HIGH = 3


class Liar(int):
    def __eq__(self, other: object) -> bool:
        return True

    __hash__ = int.__hash__


class Reversed(list):  # type: ignore[type-arg]
    def __iter__(self) -> Any:
        return iter([9, 9])


def _through_json(value: Any) -> Any:
    return decode(json.loads(json.dumps(encode(value))))


# (value, what the judge gets back)
ROUND_TRIPS = [
    (None, None),
    (True, True),
    (-5, -5),
    (2**20_000, 2**20_000),  # longer than JSON numbers may be: travels as hex
    (0.1 + 0.2, 0.30000000000000004),  # exact float
    ("x\udc80y", "x\udc80y"),  # a lone surrogate survives
    (b"\x00\xff", b"\x00\xff"),
    (bytearray(b"ab"), bytearray(b"ab")),
    (3 + 4j, 3 + 4j),
    ([1, (2, [3])], [1, (2, [3])]),
    ({(1, 2): {3}, "k": frozenset({4})}, {(1, 2): {3}, "k": frozenset({4})}),
    # library subclasses arrive as their base type, holding the same data
    (Counter("aab"), {"a": 2, "b": 1}),
    (OrderedDict(b=1, a=2), {"b": 1, "a": 2}),
    (Point(1, 2), (1, 2)),
    (Level.HIGH, 3),
    # overrides the program wrote do not travel: only the data
    (Liar(7), 7),
    (Reversed([1, 2]), [1, 2]),
]


@pytest.mark.parametrize(
    ("value", "expected"),
    ROUND_TRIPS,
    ids=[f"{i}-{type(value).__name__}" for i, (value, _) in enumerate(ROUND_TRIPS)],
)
def test_values_come_back_as_the_plain_data_they_hold(value: Any, expected: Any) -> None:
    back = _through_json(value)
    assert back == expected and type(back) is type(expected)


def test_non_finite_floats_come_back() -> None:
    nan, inf = _through_json([float("nan"), float("-inf")])
    assert nan != nan and inf == float("-inf")


@pytest.mark.parametrize(
    ("value", "words"),
    [
        (object(), "type object, which is not plain data"),
        (iter([1]), "type list_iterator"),
        ({"k": print}, "builtin_function_or_method"),
    ],
)
def test_anything_else_is_refused_with_its_type(value: Any, words: str) -> None:
    with pytest.raises(NotPlain, match=words):
        encode(value)


def test_a_value_that_contains_itself_is_refused() -> None:
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(NotPlain, match="contains itself"):
        encode(loop)


@pytest.mark.parametrize(
    "data",
    [
        {"object": []},  # an unknown tag
        {"tuple": [], "set": []},  # two tags
        {"dict": [[[1], 2]]},  # an unhashable key
        {"set": [[1]]},  # an unhashable element
        {"complex": [1, 2]},  # parts that are not floats
        {"float": "1e999"},  # only nan and infinities are tagged
        {"bytes": "zz"},  # not hex
    ],
)
def test_the_judge_refuses_shapes_encode_never_makes(data: Any) -> None:
    with pytest.raises(ValueError):
        decode(data)


# Distinct ints with one hash value (multiples of the modulus of int hashing): a set of them
# takes quadratic time to build, in whichever process builds it.
COLLIDING = [i * (2**61 - 1) for i in range(1, 20_001)]


@pytest.mark.parametrize(
    "data",
    [
        {"set": COLLIDING},
        {"frozenset": COLLIDING},
        {"dict": [[k, 0] for k in COLLIDING]},
        # tuples hash from their elements, so they collide too
        {"set": [{"tuple": [k, 1]} for k in COLLIDING]},
        # nested inside a container that is fine itself
        [1, {"set": COLLIDING}],
    ],
    ids=["set", "frozenset", "dict", "tuples", "nested"],
)
def test_a_set_built_to_hash_slowly_is_refused_before_it_is_built(data: Any) -> None:
    with pytest.raises(ValueError, match="one hash value"):
        decode(data)


def test_real_sets_with_an_occasional_shared_hash_still_decode() -> None:
    # -1 and -2 hash alike in CPython, and 2**61 - 1 like 0: a few shared hashes are normal.
    value = {-1, -2, 2**61 - 1, 0, 1.5, (1, 2), "a"}
    assert _through_json(value) == value


def test_a_value_with_too_many_elements_is_refused() -> None:
    with pytest.raises(ValueError, match="more than"):
        decode([[0] * 1000] * 2_001)
