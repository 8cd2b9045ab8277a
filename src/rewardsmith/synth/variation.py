"""Generating compositions of the shared primitives: every one, simplest first (CodeVerify's
search), and random ones, mutations and crossovers (the evolutionary generator of
reward-function search). Each result is a valid `Composition`."""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator, Sequence
from dataclasses import replace

from rewardsmith.synth.catalogue import COMPARATORS, EXTRACTORS, NORMALIZER_ORDER, NORMALIZERS
from rewardsmith.synth.primitives import Composition


def extractor_cascades(
    extractors: Sequence[str] = tuple(EXTRACTORS), max_extractors: int = 3
) -> list[tuple[str, ...]]:
    """Every cascade of up to `max_extractors` of `extractors`, each in catalogue order
    (specific markers before the last line and the whole text)."""
    order = {name: i for i, name in enumerate(EXTRACTORS)}
    ex = sorted(set(extractors), key=order.__getitem__)
    return [combo for k in range(1, max_extractors + 1) for combo in itertools.combinations(ex, k)]


def enumerate_compositions(
    extractors: Sequence[str] = tuple(EXTRACTORS),
    *,
    max_extractors: int = 3,
    cascades: Sequence[tuple[str, ...]] | None = None,
    normalizers: Sequence[str] = tuple(NORMALIZERS),
    max_normalizers: int = 2,
    comparators: Sequence[str] = tuple(COMPARATORS),
    reference_extractors: Sequence[str | None] = (None,),
    max_cost: int | None = None,
) -> Iterator[Composition]:
    """Every composition of the given primitives, simplest first (by `cost`, then by the
    catalogue order). `cascades` (default: `extractor_cascades(extractors,
    max_extractors)`) are the extractor sequences to combine."""
    if cascades is None:
        cascades = extractor_cascades(extractors, max_extractors)
    norm_sets = [
        combo
        for k in range(0, max_normalizers + 1)
        for combo in itertools.combinations([n for n in NORMALIZER_ORDER if n in normalizers], k)
    ]
    found = []
    for rank, (cascade, norms, comp, ref) in enumerate(
        itertools.product(cascades, norm_sets, comparators, reference_extractors)
    ):
        c = Composition(tuple(cascade), norms, comp, ref)
        if max_cost is None or c.cost <= max_cost:
            found.append((c.cost, rank, c))
    found.sort(key=lambda t: (t[0], t[1]))
    for _, _, c in found:
        yield c


def random_composition(rng: random.Random, *, sandboxed: bool = True) -> Composition:
    """A random composition (for seeding an evolutionary search); `sandboxed` leaves out
    host comparators."""
    comparators = [n for n, p in COMPARATORS.items() if not (sandboxed and p.host)]
    extractors = rng.sample(list(EXTRACTORS), rng.randint(1, 2))
    normalizers = rng.sample(list(NORMALIZERS), rng.randint(0, 2))
    return Composition(
        tuple(sorted(extractors, key=list(EXTRACTORS).index)),
        tuple(normalizers),
        rng.choice(comparators),
    )


def mutate(composition: Composition, rng: random.Random, *, sandboxed: bool = True) -> Composition:
    """One random edit: add, drop or swap an extractor or a normalizer, or change the
    comparator. The result is always a valid composition."""
    c = composition
    comparators = [n for n, p in COMPARATORS.items() if not (sandboxed and p.host)]
    moves = ["comparator", "add_norm", "add_extractor", "swap_extractor"]
    if c.normalizers:
        moves.append("drop_norm")
    if len(c.extractors) > 1:
        moves.append("drop_extractor")
    move = rng.choice(moves)
    if move == "comparator":
        return replace(c, comparator=rng.choice([n for n in comparators if n != c.comparator]))
    if move == "add_norm":
        free = [n for n in NORMALIZERS if n not in c.normalizers]
        return replace(c, normalizers=(*c.normalizers, rng.choice(free))) if free else c
    if move == "drop_norm":
        drop = rng.choice(c.normalizers)
        return replace(c, normalizers=tuple(n for n in c.normalizers if n != drop))
    free_ex = [e for e in EXTRACTORS if e not in c.extractors]
    if move == "add_extractor" and free_ex:
        return _with_extractors(c, (*c.extractors, rng.choice(free_ex)))
    if move == "drop_extractor":
        drop = rng.choice(c.extractors)
        return _with_extractors(c, tuple(e for e in c.extractors if e != drop))
    if free_ex:
        i = rng.randrange(len(c.extractors))
        swapped = list(c.extractors)
        swapped[i] = rng.choice(free_ex)
        return _with_extractors(c, tuple(swapped))
    return c


def crossover(a: Composition, b: Composition, rng: random.Random) -> Composition:
    """A child that takes each of the three parts (extractors, normalizers, comparator) from
    one parent or the other."""
    return Composition(
        extractors=rng.choice([a.extractors, b.extractors]),
        normalizers=rng.choice([a.normalizers, b.normalizers]),
        comparator=rng.choice([a.comparator, b.comparator]),
        reference_extractor=rng.choice([a.reference_extractor, b.reference_extractor]),
    )


def _with_extractors(c: Composition, extractors: tuple[str, ...]) -> Composition:
    order = list(EXTRACTORS)
    return replace(c, extractors=tuple(sorted(set(extractors), key=order.index)))
