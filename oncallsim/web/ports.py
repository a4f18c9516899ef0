"""Is the console's port free? Asked before serving, so a busy port is one clear line naming ``--port``, not a
traceback after the "console on …" line. ``python -m oncallsim.web.ports PORT [HOST]`` (``make run`` asks it)."""

from __future__ import annotations

import errno
import socket
import sys

from oncallsim.model import InvalidInput
from oncallsim.model.errors import whole_number

__all__ = ["check_port_free"]


def check_port_free(host: str, port: int) -> None:
    """Raise ``InvalidInput("--port", …)`` when ``host:port`` cannot be bound (another server holds it)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds: TIME_WAIT is no obstacle
        try:
            probe.bind((host.strip("[]"), port))
        except OSError as exc:
            why = "is already in use" if exc.errno == errno.EADDRINUSE else f"cannot be bound ({exc.strerror})"
            raise InvalidInput(
                "--port", f"{host}:{port} {why}; choose another with --port N (make run PORT=N)"
            ) from None


def main(argv: list[str]) -> int:
    port = whole_number(argv[0]) if argv else None
    if port is None or not 1 <= port <= 65535:
        print("--port: must be a whole number from 1 to 65535", file=sys.stderr)
        return 2
    try:
        check_port_free(argv[1] if len(argv) > 1 else "127.0.0.1", port)
    except InvalidInput as exc:
        print(exc, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
