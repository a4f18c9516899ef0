"""Write the Grafana dashboard (examples/grafana/oncallsim.json) from the metric names (oncallsim/metrics/grafana.py).
Run: ``python scripts/update_dashboard.py``; a test fails while the file is out of date."""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from oncallsim.metrics.grafana import dashboard  # noqa: E402

PATH = ROOT / "examples" / "grafana" / "oncallsim.json"


def text() -> str:
    return json.dumps(dashboard(), indent=2, ensure_ascii=False) + "\n"


if __name__ == "__main__":
    PATH.write_text(text(), encoding="utf-8")
    print(f"wrote {PATH.relative_to(ROOT)}")
