"""Run every benchmark in this folder, one after another: ``python benchmarks/run_all.py``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent

if __name__ == "__main__":
    for script in sorted(HERE.glob("*.py")):
        if script.name != "run_all.py":
            print(f"== {script.stem}", flush=True)
            subprocess.run([sys.executable, str(script)], check=True)
