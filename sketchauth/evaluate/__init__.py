"""Offline evaluation: data sets, error rates, leakage, linkage and attack simulations."""
