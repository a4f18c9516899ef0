"""Engine agreement: the request engine checked against the formulas and the minute model (``oncallsim
validate``, docs/validation.md). Its checks are statistical, with batch-means confidence intervals.
"""

from oncallsim.verify.report import Results, run_all, write_report

__all__ = ["Results", "run_all", "write_report"]
