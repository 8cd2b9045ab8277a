"""Reward-function search: generate candidate reward programs, check them in the sandbox,
score them at several fidelities, rank them, feed the ranking back; ensembles with
statistics and a hacking audit.

Modules: `task` (what is optimized), `program` (the offline generator's reward programs),
`generator` / `llm_generator` (candidates), `feedback` (what the generator is told),
`pool` (the proxy's rollouts and probes), `fitness` (proxy and GRPO levels), `loop` (rounds,
successive halving, resume), `results` (the run folder), `ensemble`, `stats`, `audit`,
`report` / `plots`, `promote`. torch is imported only where a policy is trained or sampled.

    rewardsmith search run --task testbed --rounds 5 --per-round 10 --generator offline \\
        --fidelity auto --out runs/search
"""
