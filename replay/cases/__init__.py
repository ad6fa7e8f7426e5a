"""Cases: the case file's model, incidents promoted to cases, the reference solution run.

Private: use what ``replay`` exports.
"""
