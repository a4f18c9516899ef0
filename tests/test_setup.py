"""Setting up to play is light: `make run` installs the package alone (the test tooling only with `make test`),
takes PORT, and a busy port is one line naming --port before anything starts."""

from __future__ import annotations

import socket
import subprocess
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
    extras = (ROOT / "pyproject.toml").read_text()
    assert 'test = [\n    "oncallsim[gym,cluster,bench]"' in extras  # make test keeps installing every extra


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
