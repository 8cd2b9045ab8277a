"""What `Router.fit` learns from labeled samples: new logit weights, a new calibration and new
exemplars, as a new `RouterState` (the router stores it and rebuilds its backend).

The weights are fitted first, on similarities to the exemplars the router has now (a sample
added as an exemplar would look perfectly similar to itself); the calibration is refitted on
out-of-fold predictions, the folds chosen by sample content so the result does not depend on
the order of the samples; then the samples the router got wrong join their label's exemplars.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Sequence

from rewardsmith.router.calibration import out_of_fold_calibration
from rewardsmith.router.embedded import RouterState
from rewardsmith.router.evidence import group_key
from rewardsmith.router.features import sample_features
from rewardsmith.router.logit import fit_weights
from rewardsmith.types import Sample

# Learned exemplars kept per label by `fit` (the newest win): the library stays small and
# routing cost stays flat.
MAX_LEARNED_EXEMPLARS = 200
# `fit` refits the calibration only from this many labeled samples on (fewer cannot
# estimate a frequency per confidence level); smaller sets keep the current calibration.
MIN_CALIBRATION_SAMPLES = 200
# Folds of the out-of-fold predictions the calibration is fitted on.
CALIBRATION_FOLDS = 5


def learned_state(
    current: RouterState,
    batch: Sequence[Sample],
    labels: Sequence[str],
    alternatives: Callable[[Sample], dict[str, list[float]]],
    correct: Sequence[bool],
    *,
    l2: float,
    learn_exemplars: bool = True,
) -> RouterState:
    """A copy of `current` fitted to `labels` (see the module docstring). `alternatives` gives
    a sample's feature rows per tool it may go to; `correct` says which samples the router
    routed right before the fit."""
    state = RouterState.from_dict(current.to_dict())
    rows, targets, folds, formats = [], [], [], []
    for sample, label in zip(batch, labels, strict=True):
        alts = alternatives(sample)
        names = list(alts)
        if label not in names:
            continue  # the label's tool cannot read this reference: nothing to learn
        rows.append([alts[n] for n in names])
        targets.append(names.index(label))
        folds.append(zlib.crc32(group_key(sample).encode()) % CALIBRATION_FOLDS)
        formats.append(sample_features(sample).ref_format)
    state.weights = fit_weights(rows, targets, init=state.weights, l2=l2)
    if len(rows) >= MIN_CALIBRATION_SAMPLES:
        state.calibration = out_of_fold_calibration(
            rows,
            targets,
            folds,
            formats,
            current.weights,
            l2,
            state.threshold,
            CALIBRATION_FOLDS,
        )
    if learn_exemplars:
        for sample, label, ok in zip(batch, labels, correct, strict=True):
            text = sample_features(sample).text
            bucket = state.exemplars.setdefault(label, [])
            if not ok and text not in bucket:
                bucket.append(text)
    state.exemplars = {k: v[-MAX_LEARNED_EXEMPLARS:] for k, v in state.exemplars.items() if v}
    return state
