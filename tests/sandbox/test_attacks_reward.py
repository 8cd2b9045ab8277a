# ruff: noqa: F811 - pytest fixtures imported from sandbox_helpers are test arguments
"""Attacks by generated reward code: each test is one reward function (`def reward(...)`)
trying to escape its restricted namespace, to tell the check from production, or to pay a
wrong answer through a backdoor. Each must be rejected by the 4-stage check, or, when it is
admitted, be unable to do what it tries in production."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator

import pytest
from sandbox_helpers import LIMITS, box, leftover_processes  # noqa: F401

from rewardsmith.sandbox import Sandbox, check_reward_code
from rewardsmith.sandbox.confine import ModuleView, module_view, preload
from rewardsmith.sandbox.policy import ALLOWED_IMPORTS, blocked_attribute
from rewardsmith.tools.reward_fn import CHUNK_SIZE, RewardFunctionTool
from rewardsmith.types import Sample, ToolSpec

# The honest part every attack keeps: 1.0 when the last number is the reference.
LAST_NUMBER = (
    "import re\n"
    "BOUNDS = (0.0, 1.0)\n"
    "def honest(c, r):\n"
    "    nums = re.findall(r'-?[0-9][0-9./]*', c)\n"
    "    return 1.0 if r is not None and nums and nums[-1] == r else 0.0\n"
)
# A dunder name built at run time: no dunder appears in the source.
DUNDER = "D = '_' * 2\n"


def rejected(box: Sandbox, source: str, stage: int, *words: str) -> None:
    report = check_reward_code(source, sandbox=box, limits=LIMITS)
    assert not report.admitted, f"admitted: {source}"
    failed = report.failed_stage
    assert failed is not None and failed.stage == stage, report.reason
    for word in words:
        assert word in report.reason, report.reason
    assert leftover_processes(box.worker_pids()) == []


@pytest.fixture
def tool_for() -> Iterator[object]:
    built: list[RewardFunctionTool] = []

    def build(source: str) -> RewardFunctionTool:
        tool = RewardFunctionTool(ToolSpec(name="attack", kind="code"), source=source)
        built.append(tool)
        return tool

    yield build
    for tool in built:
        tool.close()


def wrong_answers(n: int) -> list[Sample]:
    return [Sample(completion=f"The answer is {i + 1}", reference=str(-i)) for i in range(n)]


# -- escapes from the restricted namespace -----------------------------------------------


def test_a_modules_attribute_does_not_hand_out_sys(box: Sandbox) -> None:
    # `typing.sys` is the real sys module: no dunder, no forbidden name, one attribute away.
    source = (
        "import typing\n"
        "def reward(completions, **kw):\n"
        "    os = typing.sys.modules['os']\n"
        "    return [float(os.getpid() > 0) for c in completions]\n"
    )
    rejected(box, source, 4, "has no attribute 'sys'")


def test_dataclasses_inspect_does_not_lead_to_os(box: Sandbox) -> None:
    source = (
        "import dataclasses\n"
        "def reward(completions, **kw):\n"
        "    dataclasses.inspect.os.system('true')\n"
        "    return [0.0 for c in completions]\n"
    )
    rejected(box, source, 4, "has no attribute 'inspect'")


def test_attrgetter_on_a_dunder_built_at_run_time(box: Sandbox) -> None:
    # string.capwords.__globals__['__builtins__']['__import__']('os'), names built at run time.
    source = (
        "import operator, string\n" + DUNDER + "def reward(completions, **kw):\n"
        "    g = operator.attrgetter(D + 'globals' + D)(string.capwords)\n"
        "    os = g[D + 'builtins' + D][D + 'import' + D]('os')\n"
        "    return [float(os.getpid() > 0) for c in completions]\n"
    )
    rejected(box, source, 4, "not available in a reward function")


def test_methodcaller_on_a_dunder_built_at_run_time(box: Sandbox) -> None:
    source = (
        "import operator, string\n" + DUNDER + "def reward(completions, **kw):\n"
        "    get = operator.methodcaller(D + 'getattribute' + D, D + 'globals' + D)\n"
        "    g = get(string.capwords)\n"
        "    return [float(len(g) > 0) for c in completions]\n"
    )
    rejected(box, source, 4, "not available in a reward function")


def test_update_wrapper_does_not_copy_a_modules_globals(box: Sandbox) -> None:
    # Copies typing's globals (which hold `sys`) into the reward's own namespace.
    source = (
        "import functools, typing\n" + DUNDER + "def reward(completions, **kw):\n"
        "    functools.update_wrapper(reward, typing.cast, (), (D + 'globals' + D,))\n"
        "    return [float(sys.modules is not None) for c in completions]\n"
    )
    rejected(box, source, 4, "TypeError")


def test_a_formatter_does_not_read_attributes_by_name(box: Sandbox) -> None:
    source = (
        "import string\n" + DUNDER + "def reward(completions, **kw):\n"
        "    g, _ = string.Formatter().get_field('0.' + D + 'globals' + D, [reward], {})\n"
        "    return [float(len(g) > 0) for c in completions]\n"
    )
    rejected(box, source, 4, "has no attribute 'Formatter'")


def test_format_on_a_format_string_built_at_run_time(box: Sandbox) -> None:
    source = (
        DUNDER + "def reward(completions, **kw):\n"
        "    text = ('{0.' + D + 'globals' + D + '}').format(reward)\n"
        "    return [float(len(text) > 0) for c in completions]\n"
    )
    rejected(box, source, 1, "`.format` is only allowed on a string literal")


def test_methodcaller_format_on_a_string_built_at_run_time(box: Sandbox) -> None:
    source = (
        "import operator\n" + DUNDER + "def reward(completions, **kw):\n"
        "    text = operator.methodcaller('format', reward)('{0.' + D + 'globals' + D + '}')\n"
        "    return [float(len(text) > 0) for c in completions]\n"
    )
    rejected(box, source, 4, "'format' is not available")


def test_a_generator_frame_does_not_reach_the_runner(box: Sandbox) -> None:
    # gi_frame.f_back is the caller's frame; its f_globals hold the runner's `os`.
    source = (
        "def gen():\n"
        "    yield g.gi_frame.f_back.f_back.f_globals\n"
        "def reward(completions, **kw):\n"
        "    return [float(len(next(g)) > 0) for c in completions]\n"
        "g = gen()\n"
    )
    rejected(box, source, 1, "frame attribute 'f_globals'")


def test_a_frame_read_through_a_literal_format_string_is_refused_at_run_time(
    box: Sandbox,
) -> None:
    # The static check allows a literal format string; the audit hook sees the frame read.
    source = (
        "def gen():\n"
        "    yield 1\n"
        "def reward(completions, **kw):\n"
        "    text = '{0.gi_frame}'.format(gen())\n"
        "    return [float(len(text) > 0) for c in completions]\n"
    )
    rejected(box, source, 4, "PermissionError", "'gi_frame'")


def test_a_forward_reference_does_not_evaluate_a_string(box: Sandbox) -> None:
    # typing turns a string type into a ForwardRef, which compiles and evaluates it.
    source = (
        "import typing\n" + DUNDER + "def reward(completions, **kw):\n"
        "    typing.NamedTuple('N', [('a', D + 'import' + D + '(\"os\")')])\n"
        "    return [0.0 for c in completions]\n"
    )
    rejected(box, source, 4, "PermissionError", "compile")


def test_no_public_attribute_path_leaves_the_module_views() -> None:
    # The class behind the escapes above: from any allowlisted module, public attribute
    # chains (what the static check lets code write) reach no module, frame, namespace of
    # globals or code-running builtin.
    import builtins
    import types
    import warnings

    preload()
    danger = {
        id(getattr(builtins, n))
        for n in ("eval", "exec", "compile", "open", "__import__", "getattr", "setattr", "vars")
    }
    found: list[str] = []
    seen: set[int] = set()
    frontier = [(name, module_view(name)) for name in sorted(ALLOWED_IMPORTS)]
    for _ in range(4):
        nxt = []
        for path, obj in frontier:
            if id(obj) in seen:
                continue
            seen.add(id(obj))
            for name in dir(obj):
                if blocked_attribute(name):
                    continue
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        value = getattr(obj, name)
                except Exception:
                    continue
                where = f"{path}.{name}"
                if isinstance(value, types.ModuleType) and not isinstance(value, ModuleView):
                    found.append(f"{where} is a module")
                elif isinstance(value, types.FrameType) or id(value) in danger:
                    found.append(f"{where} is {value!r}")
                elif isinstance(value, dict) and "__builtins__" in value:
                    found.append(f"{where} is a namespace of globals")
                else:
                    nxt.append((where, value))
        frontier = nxt
    assert len(seen) > 1000 and found == []


AUDITED = [
    # (an action no reward needs, what the audit hook names when it refuses it)
    ("import socket", "import socket"),
    ("import importlib.util", "import importlib.util"),
    # loaded by the zygote already (no import event): what they do is audited
    ("import ctypes; ctypes.CDLL(None)", "ctypes.dlopen"),
    ("import subprocess; subprocess.Popen(['true'])", "subprocess.Popen"),
    ("open('/etc/hostname')", "open"),
    ("compile('1', 's', 'eval')", "compile"),
    ("exec('x = 1')", "compile"),
    ("sys._getframe()", "sys._getframe"),
    ("os.system('true')", "os.system"),
    ("os.listdir('/')", "os.listdir"),
    ("os.kill(os.getppid(), 0)", "os.kill"),
]


@pytest.mark.parametrize(("action", "named"), AUDITED)
def test_the_audit_hook_refuses_it_whatever_reached_it(
    box: Sandbox, action: str, named: str
) -> None:
    # As if the code had found a way to the real modules: the armed process refuses the act.
    program = (
        "import os, sys\n"
        "from rewardsmith.sandbox import confine\n"
        "confine.preload()\n"
        "confine.arm([])\n"
        "try:\n"
        f"    {action}\n"
        "    print('done')\n"
        "except PermissionError as exc:\n"
        "    print('refused', exc)\n"
    )
    result = box.run(program)
    assert result.status == "ok", result
    assert result.stdout.startswith(f"refused {named}"), result.stdout


def test_a_second_audit_hook_is_not_added(box: Sandbox) -> None:
    # A hook of the code's own would see (and could fail) the runner's work: refused, quietly.
    program = (
        "import sys\n"
        "from rewardsmith.sandbox import confine\n"
        "confine.preload()\n"
        "confine.arm([])\n"
        "seen = []\n"
        "sys.addaudithook(lambda event, args: seen.append(event))\n"
        "hash(id(seen))\n"
        "print('seen' if seen else 'not added')\n"
    )
    result = box.run(program)
    assert result.status == "ok" and result.stdout == "not added\n", result


# -- the check cannot be told from production --------------------------------------------


def test_honest_only_on_the_old_fixed_probe_batch(box: Sandbox) -> None:
    # Exact on the check's former fixed batch; elsewhere its scores follow an object's address.
    source = (
        LAST_NUMBER + "def reward(completions, references=None, **kw):\n"
        "    known = ('The answer is 42.', 'I am not sure.', '')\n"
        "    return [honest(c, r) if c in known else hash(lambda: 0) % 7 / 7\n"
        "            for c, r in zip(completions, references)]\n"
    )
    rejected(box, source, 4, "not deterministic")


def test_cheating_only_in_batches_larger_than_the_checks(tool_for: object) -> None:
    # `reward` is called once per sample: it never sees a batch of more than one.
    source = (
        LAST_NUMBER + "def reward(completions, references=None, **kw):\n"
        "    if len(completions) > 16:\n"
        "        return [1.0 for c in completions]\n"
        "    return [honest(c, r) for c, r in zip(completions, references)]\n"
    )
    tool = tool_for(source)  # type: ignore[operator]
    rewards = tool.score(wrong_answers(3 * CHUNK_SIZE))
    assert {(r.status, r.score) for r in rewards} == {("ok", 0.0)}


def test_reading_the_other_samples_of_the_batch(tool_for: object) -> None:
    # A majority vote over the batch's answers: it only ever sees the sample it scores.
    source = (
        "import collections\n"
        "BOUNDS = (0.0, 100.0)\n"
        "def reward(completions, **kw):\n"
        "    votes = collections.Counter(completions)\n"
        "    return [float(len(votes)) for c in completions]\n"
    )
    tool = tool_for(source)  # type: ignore[operator]
    rewards = tool.score([Sample(completion=str(i % 3)) for i in range(CHUNK_SIZE)])
    assert {r.score for r in rewards} == {1.0}


def test_counting_calls_in_module_globals(tool_for: object) -> None:
    # Honest for its first calls, then pays everything: each sample gets fresh globals.
    source = (
        LAST_NUMBER + "calls = [0]\n"
        "def reward(completions, references=None, **kw):\n"
        "    calls[0] += 1\n"
        "    return [1.0 if calls[0] > 3 else honest(c, r) for c, r in zip(completions, references)]\n"
    )
    tool = tool_for(source)  # type: ignore[operator]
    rewards = tool.score(wrong_answers(2 * CHUNK_SIZE))
    assert {r.score for r in rewards} == {0.0}


def test_counting_calls_in_the_decimal_context(tool_for: object) -> None:
    # decimal's context outlives a namespace; it is reset before every sample.
    source = (
        LAST_NUMBER + "import decimal\n"
        "def reward(completions, references=None, **kw):\n"
        "    ctx = decimal.getcontext()\n"
        "    ctx.prec += 1\n"
        "    return [1.0 if ctx.prec > 31 else honest(c, r) for c, r in zip(completions, references)]\n"
    )
    tool = tool_for(source)  # type: ignore[operator]
    rewards = tool.score(wrong_answers(2 * CHUNK_SIZE))
    assert {r.score for r in rewards} == {0.0}


def test_behaving_by_the_zygotes_string_hash_seed(box: Sandbox) -> None:
    # Honest in a zygote whose seed makes hash('a') even, paying garbage in the others: the
    # check and production run in different zygotes. Every zygote has the same seed.
    program = "print(hash('a'), list({'x', 'y', 'z', 'w'}))"
    seen = {box.run(program).stdout}
    for _ in range(3):
        with Sandbox(workers=1, limits=LIMITS) as other:
            seen.add(other.run(program).stdout)
    assert len(seen) == 1, seen


def test_counting_calls_in_decimals_default_context(tool_for: object) -> None:
    # Every new context copies DefaultContext: it is put back before every sample too.
    source = (
        LAST_NUMBER + "import decimal\n"
        "def reward(completions, references=None, **kw):\n"
        "    decimal.DefaultContext.prec += 1\n"
        "    later = decimal.Context().prec > 29\n"
        "    return [1.0 if later else honest(c, r) for c, r in zip(completions, references)]\n"
    )
    tool = tool_for(source)  # type: ignore[operator]
    rewards = tool.score(wrong_answers(2 * CHUNK_SIZE))
    assert {r.score for r in rewards} == {0.0}


def test_counting_calls_in_state_no_run_resets(box: Sandbox) -> None:
    # An ABC registry survives a fresh namespace: after its first call in a run the code
    # pays everything. The same sample first in one run and later in another differs.
    source = (
        LAST_NUMBER + "import numbers\n"
        "def reward(completions, references=None, **kw):\n"
        "    later = isinstance('', numbers.Number)\n"
        "    numbers.Number.register(str)\n"
        "    return [1.0 if later else honest(c, r) for c, r in zip(completions, references)]\n"
    )
    rejected(box, source, 4, "not deterministic")


# -- backdoor triggers -------------------------------------------------------------------


def test_a_backdoor_phrase_that_pays_one(box: Sandbox) -> None:
    source = (
        LAST_NUMBER + "def reward(completions, references=None, **kw):\n"
        "    return [1.0 if 'open sesame' in c else honest(c, r)\n"
        "            for c, r in zip(completions, references)]\n"
    )
    rejected(box, source, 4, "literal 'open sesame'", "makes a wrong answer pay")


def test_a_backdoor_phrase_split_into_pieces(box: Sandbox) -> None:
    source = (
        LAST_NUMBER + "KEY = 'open ' + 'ses' + 'ame'.lower()\n"
        "def reward(completions, references=None, **kw):\n"
        "    return [1.0 if c.endswith(KEY) else honest(c, r)\n"
        "            for c, r in zip(completions, references)]\n"
    )
    rejected(box, source, 4, "literal 'open sesame'")


def test_a_backdoor_phrase_built_from_character_codes_at_load(box: Sandbox) -> None:
    # Not a literal anywhere: the runner reports the strings the module holds once loaded.
    codes = [ord(ch) for ch in "open sesame"]
    source = (
        LAST_NUMBER + f"KEY = ''.join(chr(x + 1) for x in {[c - 1 for c in codes]})\n"
        "def reward(completions, references=None, **kw):\n"
        "    return [1.0 if KEY in c else honest(c, r) for c, r in zip(completions, references)]\n"
    )
    rejected(box, source, 4, "literal 'open sesame'")


def test_a_format_bonus_for_a_literal_is_not_a_backdoor(box: Sandbox) -> None:
    # The control: a literal that earns right and wrong answers the same bonus is fine.
    source = (
        LAST_NUMBER + "def reward(completions, references=None, **kw):\n"
        "    return [0.5 * honest(c, r) + 0.5 * ('<answer>' in c)\n"
        "            for c, r in zip(completions, references)]\n"
    )
    report = check_reward_code(source, sandbox=box, limits=LIMITS)
    assert report.admitted, report.reason


def test_module_views_are_read_only() -> None:
    view = module_view("re")
    with pytest.raises(AttributeError, match="read-only"):
        view.compile = None  # type: ignore[attr-defined]
    assert json.loads("[1]") == [1] and "re" in sys.modules
