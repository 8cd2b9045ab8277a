"""Rollouts as data: re-score stored rollouts with another tool version (`rescore`), compare
two verifiers on identical rollouts (`compare`), and profile rewards before training
(`profile`). Every function reads the one rollout format of `rewardsmith.rollout_log`
(docs/rollouts.md)."""
