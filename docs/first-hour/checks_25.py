"""One-line checks of issue 25's cases that need Python (run_25.sh): python checks_25.py CASE.

Each prints one line a user (or a reviewer) would look at; a missing API prints its error."""
import json
import re
import sys
from pathlib import Path

case = sys.argv[1]
if case == "openrlhf-flags":  # flags the docs pass to OpenRLHF that 0.11.2 does not have
    import importlib.util

    cli = Path(importlib.util.find_spec("openrlhf").origin).parent / "cli"
    known = set()
    for script in ("train_ppo_ray.py", "serve_rm.py"):
        known |= set(re.findall(r'add_argument\(\s*f?"(--[^"]+)"', (cli / script).read_text()))
    docs = Path(sys.argv[2])
    used = set()
    for page in ("integrations.md", "server.md", "rm_export.md"):
        # rewardsmith's flags use hyphens; `--x_y` and `--x.y` are OpenRLHF's
        used |= set(re.findall(r"(?<![\w-])--[a-z][a-z0-9]*[_.][\w.]*", (docs / page).read_text()))
    unknown = sorted(used - known)
    print(f"flags not in openrlhf 0.11.2: {', '.join(unknown) or 'none'}")
elif case == "trl":  # one function over several tasks: its name and what it logs
    from rewardsmith.integrations.trl import reward_funcs

    (f,) = reward_funcs("gsm8k", task_map={"math500": "math"}, library="home/lib.db")
    logged = {}
    f(["q", "q"], ["#### 4", "\\boxed{4}"], solution=["4", "4"], task=["gsm8k", "math500"],
      log_metric=logged.__setitem__)
    print(f.__name__, sorted(k for k in logged if k.endswith("/mean") or "not_" in k))
elif case == "verl":  # a math row's gsm8k component in veRL's batch mode
    from rewardsmith.integrations.verl import compute_score_batch

    rows = compute_score_batch(["math", "openai/gsm8k"], ["\\boxed{4}", "<thinking>a</thinking><solution>4</solution>"],
                               ["4", "4"], [None, {"rewardsmith_tool": "gsm8k_with_format"}])
    print(f"math row: gsm8k={rows[0].get('gsm8k')} format_tags={rows[0].get('format_tags')}")
elif case == "help-examples":  # examples naming files that are not in the repo, and groups without one
    from rewardsmith.cli.examples import EXAMPLES

    root = Path(sys.argv[2])
    missing = sorted({w for ex in sum(EXAMPLES.values(), []) for w in ex.split()
                      if "/" in w and not w.startswith(("out/", "runs/", "http", "-"))
                      and not (root / w).exists()})
    groups = [g for g in ("", "tools", "rm", "grpo", "route", "bench", "synth", "search") if not EXAMPLES.get(g)]
    print(f"missing files: {', '.join(missing) or 'none'}; groups without an example: "
          f"{', '.join(g or 'root' for g in groups) or 'none'}")
elif case == "ticks":  # x ticks of a 3-step metrics plot
    from rewardsmith.report import grpo_plot
    from rewardsmith.report.pyplot import pyplot

    plt = pyplot()
    real, seen = plt.subplots, []
    plt.subplots = lambda *a, **k: seen.append(real(*a, **k)) or seen[-1]
    grpo_plot.plot_metrics("grpo_run/metrics.jsonl", "grpo_run/m.png")
    print("step ticks:", [float(t) for t in seen[0][1][0].get_xticks() if 1 <= t <= 3])
elif case == "card":  # the model_dir line of the model card's snippet
    line = next(x for x in Path("rm/README.md").read_text().splitlines() if x.startswith("model_dir"))
    print(line)
