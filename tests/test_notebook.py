"""The notebook example (examples/notebook.ipynb) runs in a real Jupyter kernel (nbclient, ipykernel): a run as a
data frame, its HTML view, a run file replayed as a frame, a sweep's Parquet as a frame."""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent


def test_the_notebook_example_runs_and_shows_the_run() -> None:
    notebook = nbformat.read(ROOT / "examples" / "notebook.ipynb", as_version=4)
    NotebookClient(notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(ROOT)}}).execute()
    outputs = [cell.get("outputs", []) for cell in notebook.cells if cell.cell_type == "code"]
    assert not [o for cell in outputs for o in cell if o.get("output_type") == "error"]
    view = outputs[0][0]["data"]
    assert "text/html" in view and "Bad deploy" in view["text/html"] and "<svg" in view["text/html"]
    assert "score <strong>" in view["text/html"]
    frame = outputs[1][0]["data"]["text/html"]
    assert "error_rate" in frame and "09:28" in frame  # the minutes as a table, the page at 09:28
    assert outputs[2][0]["data"]["text/plain"] == "('09:28', 0.174)"
    assert outputs[3][0]["data"]["text/plain"] == "True"  # the run file replays to the same frame
    assert outputs[4][0]["data"]["text/plain"] == "('textbook', 100)"
    assert "grid_rollback_minutes" in outputs[5][0]["data"]["text/html"]
