"""Plots and reports of rewardsmith runs (matplotlib, imported only inside the functions)."""
