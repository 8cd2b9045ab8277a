"""Benchmarks shipped with the package (run by `rewardsmith bench ...`)."""
