"""Setting up to play is light: `make run` installs the package alone (the test tooling and the extras only with
`make test`), playing imports none of the extras, the command line's help and listings import neither numba nor
SciPy, `make run` takes PORT, and a busy port is one line naming --port before anything starts."""

from __future__ import annotations

import socket
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from oncallsim.model import InvalidInput
from oncallsim.web.ports import check_port_free, main

ROOT = Path(__file__).resolve().parent.parent


def dry_run(target: str, venv: Path, *extra: str) -> str:
    done = subprocess.run(
        ["make", "-n", target, f"VENV={venv}", *extra], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return done.stdout


def test_make_run_installs_the_package_alone_and_make_test_everything(tmp_path: Path) -> None:
    run = dry_run("run", tmp_path / "fresh", "PORT=8123")
    assert "pip install --quiet -e .\n" in run and "[test]" not in run
    assert "oncallsim.web.ports 8123" in run and "serve --port 8123" in run
    assert run.index("oncallsim prepare") < run.index("serve --port 8123")  # compiled before the server opens
    test = dry_run("test", tmp_path / "fresh")
    assert "-e '.[test]'" in test
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert extras["test"][0] == "oncallsim[all,bench]"  # make test keeps installing every extra
    assert extras["all"] == [f"oncallsim[{','.join(n for n in extras if n not in ('all', 'bench', 'test'))}]"]


# What only sweeps, data frames and the validation report need (the extras), kept out of a process that plays.
EXTRA_PACKAGES = ("pyarrow", "pandas", "matplotlib", "mpmath", "gymnasium", "dask", "distributed")
BLOCK_EXTRAS = f"""
import sys
class Blocked:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {EXTRA_PACKAGES!r}:
            raise ImportError("blocked: " + name)
sys.meta_path.insert(0, Blocked())
"""


def python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_playing_imports_none_of_the_extras() -> None:
    """The console's app, a run, its debrief with the counterfactuals, the charts and the offline report: none
    of them imports an extra (so `make run`, which installs none, plays everything); a sweep without pyarrow is
    refused in one line naming the extra to install."""
    done = python(
        BLOCK_EXTRAS
        + """
from oncallsim.web.app import create_app
from oncallsim.web.live import debrief_with_figure
from oncallsim.debrief.html import render_html
from oncallsim.policies import counterfactuals
from oncallsim import Simulation
create_app(":memory:")
sim = Simulation("tutorial", seed=1, minutes=30)
sim.run(policy=__import__("oncallsim.policies", fromlist=["Textbook"]).Textbook())
report, figure = debrief_with_figure(sim)
others = {name: o.timeline for name, o in counterfactuals(sim).items()}
render_html(report, sim.timeline, sim.plan, sim.params, sim.actions, others, "da", "t")
print("played", report.score, sorted(m for m in sys.modules if m.split(".")[0] in {EXTRA_PACKAGES!r}))
""".replace("{EXTRA_PACKAGES!r}", repr(EXTRA_PACKAGES))
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("played") and done.stdout.rstrip().endswith("[]")
    refused = python(
        BLOCK_EXTRAS
        + """
from pathlib import Path
from oncallsim.batch import sweep as s
from oncallsim.model import InvalidInput
plan = s.plan_sweep(s.SweepSpec("surge", 2, 0, None, {}, {}, True, 10))
try:
    s.check_output(plan, Path("/nonexistent/x.parquet"), False)
except InvalidInput as exc:
    print(exc)
"""
    )
    assert (
        refused.stdout.strip()
        == "pyarrow: not installed (for sweeps and their Parquet files): pip install 'oncallsim[sweep]'"
    )


def test_help_and_listings_import_neither_numba_nor_scipy() -> None:
    """`oncallsim --help` and `oncallsim scenarios` answer without the engines (lazy imports; the times are in
    docs/architecture.md): what they import is checked here, never how long it takes."""
    heavy = "{'numba', 'scipy', 'llvmlite', 'numpy'}"
    for argv in (["--help"], ["scenarios"], ["run", "--help"], ["sweep", "--help"]):
        done = python(
            f"import sys\nsys.argv = ['oncallsim', *{argv!r}]\nfrom oncallsim.cli import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            f"print('HEAVY', sorted({{m.split('.')[0] for m in sys.modules}} & {heavy}))"
        )
        assert done.returncode == 0, done.stderr[-2000:]
        assert done.stdout.rstrip().endswith("HEAVY []"), (argv, done.stdout[-300:])
    listed = python("import sys\nsys.argv = ['oncallsim', 'scenarios']\nfrom oncallsim.cli import main\nmain()")
    assert "retry-storm" in listed.stdout and "Bad deploy" in listed.stdout


def test_a_busy_port_is_one_line_naming_port() -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        with pytest.raises(InvalidInput) as info:
            check_port_free("127.0.0.1", port)
        assert str(info.value) == (
            f"--port: 127.0.0.1:{port} is already in use; choose another with --port N (make run PORT=N)"
        )
        assert main([str(port)]) == 2
    check_port_free("127.0.0.1", port)  # released: free again
    assert main([str(port)]) == 0
    assert main(["http"]) == 2 and main(["70000"]) == 2
