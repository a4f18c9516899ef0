"""A team's Prometheus rules rehearsed on simulated runs: evaluated by the real promtool (``evaluate``,
``promtool``), and pages sent where a team receives them (``pagerduty``). docs/alerts.md."""

from oncallsim.alerting.evaluate import AlertSummary, Episode, RunAlerts, alert_rules, evaluate, summarize
from oncallsim.alerting.promtool import check_rules, find_promtool

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
