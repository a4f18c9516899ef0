"""A team's Prometheus rules rehearsed on simulated runs: evaluated by the real promtool (``evaluate``,
``promtool``), and pages sent where a team receives them (``pagerduty``). docs/alerts.md. Names are imported on
first use (``oncallsim.lazy``)."""

from typing import TYPE_CHECKING as _TYPE_CHECKING

from oncallsim.lazy import exports as _exports

__all__ = [
    "AlertSummary",
    "Episode",
    "RunAlerts",
    "alert_rules",
    "check_rules",
    "evaluate",
    "find_promtool",
    "summarize",
]

_HOMES = {
    **dict.fromkeys(
        ("AlertSummary", "Episode", "RunAlerts", "alert_rules", "evaluate", "summarize"), "oncallsim.alerting.evaluate"
    ),
    **dict.fromkeys(("check_rules", "find_promtool"), "oncallsim.alerting.promtool"),
}

if _TYPE_CHECKING:
    from oncallsim.alerting.evaluate import AlertSummary, Episode, RunAlerts, alert_rules, evaluate, summarize
    from oncallsim.alerting.promtool import check_rules, find_promtool

__getattr__, __dir__ = _exports(__name__, _HOMES)
