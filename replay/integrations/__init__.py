"""Integrations: importing tau-bench trajectories and tau2-bench domains.

Private: use what ``replay`` exports.
"""
