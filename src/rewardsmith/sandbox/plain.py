"""Plain data: a value a program returned, as JSON with type tags, and back.

A test's operands are computed inside the program's process but compared outside it (by the
caller, `rewardsmith.tools.code.verdict`, or a judge run, `judge.py`). What crosses between
them is this encoding, never an object:
only `None`, `bool`, `int`, `float`, `complex`, `str`, `bytes`, `bytearray`, `list`,
`tuple`, `dict`, `set` and `frozenset`, nested. Anything else (a class the program wrote, a
generator, a numpy array) is refused with `NotPlain`, naming its type.

Subclasses of those types (`collections.Counter`, `OrderedDict`, a `namedtuple`, an
`IntEnum`, or a class the program wrote) are read through the base type's own C slots
(`dict.copy`, `str.__str__`...), so what is compared is the data they hold: an `__eq__`,
`__iter__` or `__hash__` the program overrides plays no part in the verdict (the
"AlwaysEqual" hack has nothing to act on).

    encode([1, (2.5, "x")])    # [1, {"tuple": [2.5, "x"]}]
    decode(encode(value)) == value and type(decode(encode(value))) is type(value)

Encoding: JSON null, booleans, strings and arrays (lists) stand for themselves; an int is a
JSON number unless it is too long for one (`{"int": hex}`); a finite float is a JSON number
(Python's shortest repr, exact on the way back), others `{"float": "nan" | "inf" | "-inf"}`;
every other type is a one-key object naming it. `decode` accepts only this shape (a hostile
sender gets `ValueError`), so whoever decodes never builds anything but plain values, and
its cost stays linear in what it reads: at most `MAX_ITEMS` elements, `MAX_DEPTH` levels,
and no set, frozenset or dict whose members share a hash value more than `MAX_SAME_HASH`
times. Ints, floats and tuples hash alike in every process, so a sender can choose
thousands of distinct ones with one hash; building a set of them costs quadratic time (a
set of 150,000 such ints takes hours), which the reader, not the sender, would pay.
"""

from __future__ import annotations

import math
from typing import Any

# Containers nested deeper than this are refused: no real answer is, and both sides recurse.
MAX_DEPTH = 100
# Elements (all levels together) one value may hold; the run's channel_bytes bounds it too.
MAX_ITEMS = 2_000_000
# A set, frozenset or dict some of whose members share a hash value more often than this is
# refused before it is built (see the module docstring); real values never come close.
MAX_SAME_HASH = 64
# Ints with more bits than this travel as hex: JSON numbers that long are refused by Python's
# int-from-text guard (4300 digits).
MAX_JSON_INT_BITS = 12_000

# Bound at import: a program that shadows or patches a builtin (`list = ...`) does not
# change how its values are read. (Nothing here needs to be tamper-proof: it runs in the
# program's own process, so what it sends is the program's claim either way.)
_int, _float, _str, _bool, _complex = int, float, str, bool, complex
_bytes, _bytearray, _list, _tuple = bytes, bytearray, list, tuple
_dict, _set, _frozenset, _type, _id, _len = dict, set, frozenset, type, id, len
_issubclass, _isfinite, _repr, _hex = issubclass, math.isfinite, repr, hex
_int_copy = int.__int__
_float_copy = float.__float__
_str_copy = str.__str__
_bytes_hex = bytes.hex
_bytearray_hex = bytearray.hex
_list_copy = list.copy
_tuple_getitem = tuple.__getitem__
_dict_copy = dict.copy
_dict_items = dict.items
_set_copy = set.copy
_frozenset_copy = frozenset.copy
_complex_real = complex.real.__get__
_complex_imag = complex.imag.__get__
_ALL = slice(None)

PLAIN_TYPES = (
    "None, bool, int, float, complex, str, bytes, bytearray, list, tuple, dict, set, frozenset"
)


class NotPlain(Exception):
    """A value that is not plain data (or too deep, too large, or cyclic)."""


def encode(value: Any) -> Any:
    """`value` as JSON-ready data with type tags; raises `NotPlain` naming what is not plain.

    Runs inside the program's process: whatever it sends is, at most, a claim about what
    the program returned, which is all the program can ever influence."""
    budget = [MAX_ITEMS]
    return _encode(value, 0, budget, set())


def _encode(value: Any, depth: int, budget: list[int], path: set[int]) -> Any:
    budget[0] -= 1
    if budget[0] < 0:
        raise NotPlain(f"a value with more than {MAX_ITEMS} elements")
    if depth > MAX_DEPTH:
        raise NotPlain(f"a value nested deeper than {MAX_DEPTH} levels")
    cls = _type(value)
    if value is None or cls is _bool:
        return value
    if _issubclass(cls, _bool):  # bool cannot be subclassed; kept for completeness
        return _bool(value)
    if _issubclass(cls, _int):
        number = _int_copy(value)
        if number.bit_length() > MAX_JSON_INT_BITS:
            return {"int": _hex(number)}
        return number
    if _issubclass(cls, _float):
        real = _float_copy(value)
        return real if _isfinite(real) else {"float": _repr(real)}
    if _issubclass(cls, _str):
        return _str_copy(value)
    if _issubclass(cls, _complex):
        parts = (_complex_real(value), _complex_imag(value))
        return {"complex": [_encode(_float_copy(p), depth + 1, budget, path) for p in parts]}
    if _issubclass(cls, _bytes):
        return {"bytes": _bytes_hex(value)}
    if _issubclass(cls, _bytearray):
        return {"bytearray": _bytearray_hex(value)}
    key = _id(value)
    if key in path:
        raise NotPlain("a value that contains itself")
    path.add(key)
    try:
        if _issubclass(cls, _list):
            return [_encode(x, depth + 1, budget, path) for x in _list_copy(value)]
        if _issubclass(cls, _tuple):
            return {
                "tuple": [_encode(x, depth + 1, budget, path) for x in _tuple_getitem(value, _ALL)]
            }
        if _issubclass(cls, _dict):
            pairs = _dict_items(_dict_copy(value))
            return {
                "dict": [
                    [_encode(k, depth + 1, budget, path), _encode(v, depth + 1, budget, path)]
                    for k, v in pairs
                ]
            }
        if _issubclass(cls, _set):
            return {"set": [_encode(x, depth + 1, budget, path) for x in _set_copy(value)]}
        if _issubclass(cls, _frozenset):
            frozen = _frozenset_copy(value)
            return {"frozenset": [_encode(x, depth + 1, budget, path) for x in frozen]}
    finally:
        path.discard(key)
    raise NotPlain(f"a value of type {_type_name(cls)}, which is not plain data ({PLAIN_TYPES})")


def _type_name(cls: type) -> str:
    try:
        return _str_copy(type.__dict__["__qualname__"].__get__(cls))[:80]
    except Exception:
        return "?"


def decode(data: Any) -> Any:
    """The plain value `data` encodes; raises `ValueError` for anything `encode` does not
    produce (the sender is the program's process, so it may be anything), and for a value
    too large, too deep or built to make hashing it slow (see the module docstring)."""
    return _decode(data, 0, [MAX_ITEMS])


def _decode(data: Any, depth: int, budget: list[int]) -> Any:
    budget[0] -= 1
    if budget[0] < 0:
        raise ValueError(f"more than {MAX_ITEMS} elements")
    if depth > MAX_DEPTH + 1:
        raise ValueError("nested too deep")
    cls = type(data)
    if data is None or cls in (bool, int, float, str):
        return data
    if cls is list:
        return [_decode(x, depth + 1, budget) for x in data]
    if cls is not dict or len(data) != 1:
        raise ValueError(f"not an encoded value: {type(data).__name__}")
    ((tag, body),) = data.items()
    if tag == "tuple" and type(body) is list:
        return tuple(_decode(x, depth + 1, budget) for x in body)
    if tag == "dict" and type(body) is list:
        keys, values = [], []
        for pair in body:
            if type(pair) is not list or len(pair) != 2:
                raise ValueError("a dict entry that is not a [key, value] pair")
            keys.append(_decode(pair[0], depth + 1, budget))
            values.append(_decode(pair[1], depth + 1, budget))
        _check_hashes(keys, "dict key")
        return dict(zip(keys, values, strict=True))
    if tag in ("set", "frozenset") and type(body) is list:
        items = [_decode(x, depth + 1, budget) for x in body]
        _check_hashes(items, "set element")
        return set(items) if tag == "set" else frozenset(items)
    if tag == "int" and type(body) is str:
        return int(body, 16)
    if tag == "float" and body in ("nan", "inf", "-inf"):
        return float(body)
    if tag == "complex" and type(body) is list and len(body) == 2:
        real, imag = (_decode(x, depth + 1, budget) for x in body)
        if type(real) is not float or type(imag) is not float:
            raise ValueError("a complex number whose parts are not floats")
        return complex(real, imag)
    if tag in ("bytes", "bytearray") and type(body) is str:
        raw = bytes.fromhex(body)
        return raw if tag == "bytes" else bytearray(raw)
    raise ValueError(f"unknown tag {str(tag)[:20]!r}")


def _check_hashes(members: list[Any], what: str) -> None:
    """Refuse members that are unhashable, or that would make a set or dict of them slow to
    build: more than `MAX_SAME_HASH` sharing one hash value. Counting costs linear time: a
    hash value hashes to itself (CPython), so distinct values never collide here."""
    seen: dict[int, int] = {}
    for member in members:
        try:
            key = hash(member)
        except TypeError:
            raise ValueError(f"an unhashable {type(member).__name__} as a {what}") from None
        count = seen.get(key, 0) + 1
        if count > MAX_SAME_HASH:
            raise ValueError(
                f"more than {MAX_SAME_HASH} {what}s with one hash value (built to make "
                "reading it slow)"
            )
        seen[key] = count
