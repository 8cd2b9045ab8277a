"""WrapLLM: find a small reward model that fits a task, calibrate it, gate it, register it.

Where models are found (offline, nothing is downloaded):

- every model in the local model registry (`rewardsmith.rm.registry`: each `rm train`
  output, and models added with `add_model`);
- every reward-model directory in the configured folders (`--model-dir`, and
  `$REWARDSMITH_MODEL_DIRS`, separated by the OS path separator), searched two levels deep;
- the Hugging Face cache (`huggingface_hub.scan_cache_dir`: `$HF_HUB_CACHE`, else
  `~/.cache/huggingface/hub`), every snapshot of every model.

A reward model is a Hugging Face directory with one output: `*ForSequenceClassification`
and `num_labels == 1`, or an RBS bi-encoder (`rbs_config.json` of kind `bi`), at most
`MAX_PARAMETERS`. With `online=True`, the Hub is searched too (`huggingface_hub.HfApi`,
text-classification models matching the task's words) and the best matches are downloaded
into the cache.

Candidates are ranked by how well their description (registry entry, model card, name)
fits the task description: cosine similarity of MiniLM embeddings (the router's embedder),
or word overlap when the embedder is not installed. The top `top_k` are tried in order: raw
scores on the fit examples' responses (each example's reference is a good response to its
prompt, another example's a bad one, labeled completions as labeled) fit a logistic
calibration to [0, 1] (Platt scaling), then the gate judges the calibrated tool on the
held-out examples. The first admitted is registered; when none is, the one with the best
held-out AUC is stored retired with its reasons. Each wrapped tool records the model's id
and revision (the snapshot's commit for the Hub cache, a content hash of the weights for a
local folder).
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rewardsmith.errors import ConfigError, InputError
from rewardsmith.files import is_regular, open_regular, read_json
from rewardsmith.library.store import Library
from rewardsmith.rm.registry import count_parameters, list_models
from rewardsmith.router.router import shared_embedder
from rewardsmith.synth.admission import SynthOutcome, evaluate, store, synth_spec
from rewardsmith.synth.cases import Case
from rewardsmith.synth.examples import Example, check_examples, split_examples
from rewardsmith.synth.gate import GateConfig, GateReport, response_cases
from rewardsmith.synth.tools import CALIBRATED_MODEL_FACTORY
from rewardsmith.tools.model import ModelTool
from rewardsmith.types import Sample, ToolSpec

log = logging.getLogger(__name__)

MODEL_DIRS_ENV = "REWARDSMITH_MODEL_DIRS"
# WrapLLM wraps *small* reward models (RLAR: at most 10B parameters).
MAX_PARAMETERS = 10_000_000_000
# A model folder's files, as read by the scan: configs are kilobytes; one weight file of a
# <= 10B model in float32 is at most 40 GB; bigger files are hashed by samples.
MAX_CONFIG_BYTES = 16 * 2**20
MAX_WEIGHT_FILE_BYTES = 48 * 2**30
FULL_HASH_BYTES = 2 * 2**30
SAMPLE_BYTES = 16 * 2**20
TOP_K = 3
HUB_RESULTS = 5
# Characters of a model card read to describe a model.
CARD_CHARS = 600
# L2 penalty on the calibration slope (on standardized scores): a handful of separable
# examples must not give an infinitely steep curve.
CALIBRATION_L2 = 0.1


@dataclass(frozen=True)
class ModelCandidate:
    """A local reward model WrapLLM can wrap."""

    model_id: str
    path: str
    revision: str
    source: str  # "registry", "folder", "hf-cache"
    description: str = ""
    parameters: int = 0

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


# -- finding models ------------------------------------------------------------------------


def is_reward_model_dir(path: Path) -> bool:
    """A directory with one-output sequence-classification weights, or an RBS bi-encoder.
    Its files are read as a folder from elsewhere may hold them: regular files only, of
    bounded size (`files.read_json`), so a FIFO or a device named config.json is skipped."""
    config_file = path / "config.json"
    if not is_regular(config_file):
        return False
    try:
        config = read_json(config_file, MAX_CONFIG_BYTES)
        rbs_file = path / "rbs_config.json"
        rbs = read_json(rbs_file, MAX_CONFIG_BYTES) if is_regular(rbs_file) else {}
    except InputError:
        return False
    if not isinstance(config, dict) or not isinstance(rbs, dict):
        return False
    if rbs.get("kind") == "bi":
        return True
    archs = config.get("architectures") or []
    id2label = config.get("id2label")
    labels = config.get("num_labels", len(id2label) if isinstance(id2label, dict) else 2)
    if not isinstance(archs, list):
        return False
    return any(str(a).endswith("ForSequenceClassification") for a in archs) and labels == 1


def content_revision(path: Path) -> str:
    """`sha256:` + 16 hex digits of the config and weight files' contents (regular files
    only). A file over `MAX_WEIGHT_FILE_BYTES` (no <= 10B model needs one: a crafted or
    sparse file) is an `InputError`; past `FULL_HASH_BYTES` a file is hashed by its size and
    its first and last `SAMPLE_BYTES`, so a scan never reads tens of gigabytes."""
    digest = hashlib.sha256()
    files = sorted(
        f
        for f in path.iterdir()
        if is_regular(f) and (f.name == "config.json" or f.suffix in (".safetensors", ".bin"))
    )
    for file in files:
        digest.update(file.name.encode())
        with open_regular(file, MAX_WEIGHT_FILE_BYTES) as fh:
            size = os.fstat(fh.fileno()).st_size
            if size <= FULL_HASH_BYTES:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    digest.update(block)
            else:
                digest.update(str(size).encode() + fh.read(SAMPLE_BYTES))
                fh.seek(size - SAMPLE_BYTES)
                digest.update(fh.read(SAMPLE_BYTES))
    return "sha256:" + digest.hexdigest()[:16]


def _card(path: Path) -> str:
    card = path / "README.md"
    if not is_regular(card):
        return ""
    try:
        with open_regular(card) as fh:
            text = fh.read(CARD_CHARS * 8).decode("utf-8", "replace")[: CARD_CHARS * 2]
    except InputError:
        return ""
    body = [ln for ln in text.splitlines() if ln.strip() and not ln.startswith(("---", "#"))]
    return " ".join(body)[:CARD_CHARS]


def _parameters(path: Path) -> int:
    try:
        return count_parameters(path)
    except (OSError, ValueError, KeyError, TypeError, RecursionError):  # InputError is one
        return 0


def _folder_candidate(
    path: Path, source: str, model_id: str, description: str = ""
) -> ModelCandidate | None:
    """The candidate for a model folder, or None when its files cannot be read safely."""
    try:
        revision = content_revision(path)
    except (InputError, OSError) as exc:
        log.warning("WrapLLM: skipping %s: %s", path, exc)
        return None
    return ModelCandidate(
        model_id=model_id,
        path=str(path.resolve()),
        revision=revision,
        source=source,
        description=" ".join(p for p in (description, _card(path)) if p),
        parameters=_parameters(path),
    )


def registry_models() -> list[ModelCandidate]:
    """The local model registry's entries that are still on disk."""
    out = []
    for entry in list_models():
        path = Path(entry.path)
        if is_reward_model_dir(path):
            text = f"{entry.description} {' '.join(entry.domains)} ({entry.source})"
            found = _folder_candidate(path, "registry", entry.name, text.strip())
            out += [found] if found is not None else []
    return out


def folder_models(folders: Sequence[Path]) -> list[ModelCandidate]:
    """Reward-model directories in `folders`, the folders themselves and two levels below."""
    out = []
    for folder in folders:
        folder = Path(folder).expanduser()
        if not folder.is_dir():
            raise ConfigError(f"model folder {folder} does not exist")
        seen = [folder, *sorted(folder.glob("*")), *sorted(folder.glob("*/*"))]
        for path in seen:
            if path.is_dir() and is_reward_model_dir(path):
                found = _folder_candidate(path, "folder", path.name)
                out += [found] if found is not None else []
    return out


def cache_models(cache_dir: Path | None = None) -> list[ModelCandidate]:
    """Reward models in the Hugging Face cache (every snapshot), read without network.
    `cache_dir` defaults to `$HF_HUB_CACHE` (read now, not at import), else the hub's own."""
    try:
        from huggingface_hub import scan_cache_dir
        from huggingface_hub.errors import CacheNotFound
    except ImportError:
        return []
    where = cache_dir or os.environ.get("HF_HUB_CACHE") or os.environ.get("HUGGINGFACE_HUB_CACHE")
    try:
        info = scan_cache_dir(where)
    except (CacheNotFound, OSError, ValueError):
        return []
    out = []
    for repo in info.repos:
        if repo.repo_type != "model":
            continue
        for rev in repo.revisions:
            path = Path(rev.snapshot_path)
            if is_reward_model_dir(path):
                out.append(
                    ModelCandidate(
                        model_id=repo.repo_id,
                        path=str(path),
                        revision=rev.commit_hash,
                        source="hf-cache",
                        description=f"{repo.repo_id} {_card(path)}",
                        parameters=_parameters(path),
                    )
                )
    return out


def local_models(model_dirs: Sequence[Path] = ()) -> list[ModelCandidate]:
    """Every local reward model (module docstring), each path once, small enough to wrap."""
    env = [Path(p) for p in os.environ.get(MODEL_DIRS_ENV, "").split(os.pathsep) if p]
    found = registry_models() + folder_models([*model_dirs, *env]) + cache_models()
    out: dict[str, ModelCandidate] = {}
    for m in found:
        if m.parameters <= MAX_PARAMETERS:
            out.setdefault(m.path, m)
    return list(out.values())


def hub_models(task: str, limit: int = HUB_RESULTS) -> list[ModelCandidate]:
    """Search the Hub for text-classification reward models matching the task and download
    the best `limit` into the cache (network)."""
    try:
        from huggingface_hub import HfApi, constants, snapshot_download
    except ImportError as exc:
        raise ConfigError("--online needs huggingface_hub: pip install huggingface_hub") from exc
    if constants.HF_HUB_OFFLINE:
        raise ConfigError(
            "--online: huggingface_hub is in offline mode in this process (HF_HUB_OFFLINE=1, "
            "which rewardsmith also sets once it has loaded a local model); run the search "
            "in a fresh process without HF_HUB_OFFLINE"
        )
    api = HfApi()
    words = [w for w in task.lower().split() if len(w) > 3][:3]
    found = list(
        api.list_models(
            search="reward", pipeline_tag="text-classification", sort="downloads", limit=50
        )
    )
    ranked = sorted(found, key=lambda m: -sum(w in (m.id or "").lower() for w in words))[:limit]
    out = []
    for m in ranked:
        path = Path(
            snapshot_download(
                m.id, allow_patterns=["*.json", "*.safetensors", "*.txt", "*.model", "README.md"]
            )
        )
        if is_reward_model_dir(path):
            out.append(
                ModelCandidate(
                    m.id, str(path), path.name, "hub", f"{m.id} {_card(path)}", _parameters(path)
                )
            )
    return out


# -- ranking -------------------------------------------------------------------------------


def _words(text: str) -> set[str]:
    return {
        w for w in "".join(c.lower() if c.isalnum() else " " for c in text).split() if len(w) > 2
    }


def rank_models(
    task: str, candidates: Sequence[ModelCandidate]
) -> list[tuple[float, ModelCandidate]]:
    """(fit, model), best first: cosine similarity of MiniLM embeddings of the task and each
    model's description, or word overlap without the embedder; smaller models win ties."""
    if not candidates:
        return []
    texts = [f"{m.model_id.replace('_', ' ')} {m.description}" for m in candidates]
    scores: list[float]
    try:
        emb = shared_embedder()
        vectors = emb.encode([task, *texts])
        scores = [float(vectors[0] @ v) for v in vectors[1:]]
    except Exception as exc:  # no embedder installed: fall back to the words
        log.info("WrapLLM ranks by word overlap (%s)", exc)
        want = _words(task)
        scores = [len(want & _words(t)) / max(len(want), 1) for t in texts]
    order = sorted(zip(scores, candidates, strict=True), key=lambda sm: (-sm[0], sm[1].parameters))
    return [(round(s, 4), m) for s, m in order]


# -- calibration ---------------------------------------------------------------------------


def fit_calibration(scores: Sequence[float], labels: Sequence[int]) -> dict[str, float]:
    """Logistic calibration `p = 1 / (1 + exp(-(a*s + b)))` fitted by Newton's method on
    standardized scores with an L2 penalty on the slope (Platt 1999); {"a", "b"}."""
    if not scores:
        raise ConfigError("calibration needs scored examples")
    n = len(scores)
    mean = sum(scores) / n
    std = math.sqrt(sum((s - mean) ** 2 for s in scores) / n) or 1.0
    z = [(s - mean) / std for s in scores]
    a, b = 1.0, 0.0
    for _ in range(50):
        ga, gb = CALIBRATION_L2 * a, 0.0
        haa, hab, hbb = CALIBRATION_L2, 0.0, 0.0
        for x, y in zip(z, labels, strict=True):
            p = 1.0 / (1.0 + math.exp(-max(min(a * x + b, 30.0), -30.0)))
            w = p * (1.0 - p)
            ga += (p - y) * x
            gb += p - y
            haa += w * x * x
            hab += w * x
            hbb += w
        det = haa * hbb - hab * hab
        if det <= 1e-12:
            break
        da = (hbb * ga - hab * gb) / det
        db = (haa * gb - hab * ga) / det
        a, b = a - da, b - db
        if abs(da) + abs(db) < 1e-9:
            break
    return {"a": a / std, "b": b - a * mean / std, "fit_examples": float(n)}


def _raw_scores(path: str, cases: Sequence[Case]) -> list[float]:
    tool = ModelTool(ToolSpec(name="wrapllm_candidate", kind="model"), path=path)
    try:
        rewards = tool.score([Sample(c.completion, c.prompt, c.reference) for c in cases])
    finally:
        tool.close()
    return [r.score if r.score is not None else 0.0 for r in rewards]


# -- the whole path ------------------------------------------------------------------------


def wrapllm(
    task: str,
    examples: Sequence[Example],
    name: str,
    library: Library,
    *,
    model_dirs: Sequence[Path] = (),
    online: bool = False,
    gate_config: GateConfig | None = None,
    top_k: int = TOP_K,
    extra_details: dict[str, Any] | None = None,
) -> SynthOutcome:
    """Wrap the best-fitting local reward model for `task` (see module docstring).
    `extra_details` join the synthesis record kept in the tool's spec."""
    if not task.strip():
        raise ConfigError("WrapLLM needs a task description (--task)")
    check_examples(examples)
    candidates = local_models(model_dirs)
    if online:
        known = {m.path for m in candidates}
        candidates += [m for m in hub_models(task) if m.path not in known]
    ranked = rank_models(task, candidates)
    fit, held = split_examples(examples)
    cases = response_cases(fit, examples)
    labels = [c.label for c in cases]
    tried: list[dict[str, Any]] = []
    best: tuple[float, ToolSpec, dict[str, Any], GateReport, dict[str, Any]] | None = None
    for fit_score, model in ranked[:top_k]:
        try:
            raw = _raw_scores(model.path, cases)
            calibration = fit_calibration(raw, labels)
        except Exception as exc:  # a model that will not load is a failed candidate
            tried.append({"model_id": model.model_id, "fit": fit_score, "result": f"failed: {exc}"})
            continue
        spec = synth_spec(
            name,
            "model",
            f"Reward model {model.model_id} ({model.source}, revision {model.revision[:19]}) "
            f"wrapped for: {task}. Scores calibrated to [0, 1] on {len(cases)} responses.",
            examples,
            needs_reference=False,
            cost="moderate",
        )
        config = {
            "factory": CALIBRATED_MODEL_FACTORY,
            "params": {
                "path": model.path,
                "model_id": model.model_id,
                "revision": model.revision,
                "calibration": {"a": calibration["a"], "b": calibration["b"]},
            },
        }
        report = evaluate(
            library,
            spec,
            config,
            held_out=held,
            all_examples=examples,
            method="wrapllm",
            gate_config=gate_config,
        )
        details = {
            "task": task,
            "model": model.to_dict(),
            "fit": fit_score,
            "calibration": calibration,
            "fit_examples": len(fit),
            "held_out_examples": len(held),
            **(extra_details or {}),
        }
        tried.append({"model_id": model.model_id, "fit": fit_score, "result": report.reason})
        key = report.auc if report.auc is not None else -1.0
        if report.admitted:
            best = (2.0, spec, config, report, details)
            break
        if best is None or key > best[0]:
            best = (key, spec, config, report, details)
    if best is None:
        looked = f"{len(candidates)} found" if candidates else "none found"
        reason = (
            f"no local reward model could be wrapped ({looked}; registry, --model-dir, "
            f"${MODEL_DIRS_ENV}, the Hugging Face cache{', the Hub' if online else ''})"
        )
        report = GateReport(name, False, "runs", f"runs: {reason}", {"runs": {"built": False}})
        return SynthOutcome(name, False, "", "wrapllm", report, {"task": task, "tried": tried})
    _, spec, config, report, details = best
    return store(
        library, spec, config, report, method="wrapllm", details={**details, "tried": tried}
    )
