"""Connect to a Ray cluster within a time limit, and say plainly when there is none.

``ray.init(address=...)`` on an address that does not answer retries for minutes (its GCS
client reconnects, printing a line about every 40 s) and, inside its C++ client, does not see
Ctrl-C. :func:`connect` bounds it:

* ``"auto"`` (and ``RAY_ADDRESS``) is resolved with Ray's own rule; no cluster on this machine
  is a :class:`RayConnectError` that says how to start one;
* ``HOST:PORT`` is probed first: a TCP connection that must answer the HTTP/2 preface as a gRPC
  server (Ray's GCS) does, retried until ``timeout`` seconds have passed (a head node that is
  still starting gets the time); the probe runs in this thread, so Ctrl-C interrupts it;
* ``ray.init`` itself then runs in a helper thread that this thread waits for, in short steps
  (Ctrl-C works) and at most until the same deadline; a GCS that accepts the connection but
  never completes Ray's handshake ends the same way.

Without an address (and no ``RAY_ADDRESS``) a local Ray instance is started for the run, as
``ray.init()`` does. Exports :func:`connect`, :class:`RayConnectError` and
:data:`CONNECT_TIMEOUT_S`.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from typing import Any

__all__ = ["CONNECT_TIMEOUT_S", "RayConnectError", "connect"]

#: Default seconds to reach a cluster (``--connect-timeout``).
CONNECT_TIMEOUT_S = 30.0

#: How often (s) the waiting thread wakes up (for Ctrl-C) while ``ray.init`` runs.
_STEP_S = 0.2


class RayConnectError(RuntimeError):
    """No Ray cluster at the address given, or none answered in time."""


def _resolve(address: str) -> str | None:
    """``HOST:PORT`` of the cluster to join (``address`` itself when it is one), or None to start
    a local instance."""
    from ray._private.services import canonicalize_bootstrap_address

    if address not in ("auto", "local"):
        return address
    try:
        return canonicalize_bootstrap_address(address)
    except ConnectionError:
        raise RayConnectError(
            f"--address {address}: no running Ray cluster found on this machine (start one "
            "with `ray start --head`, or pass --address HOST:PORT of the head node)"
        ) from None
    except ValueError as exc:
        raise ValueError(f"--address {address}: {exc}") from None


#: An HTTP/2 client's connection preface and an empty SETTINGS frame: a gRPC server (Ray's GCS)
#: answers with a SETTINGS frame of its own.
_H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])
_H2_SETTINGS = 4


def _speaks_grpc(sock: socket.socket, deadline: float) -> bool | None:
    """Whether the server answers the HTTP/2 preface with a SETTINGS frame (None: silent until
    ``deadline``)."""
    sock.sendall(_H2_PREFACE)
    head = b""
    while len(head) < 9:
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        sock.settimeout(min(left, 1.0))
        try:
            chunk = sock.recv(9 - len(head))
        except TimeoutError:
            continue
        if not chunk:
            return False
        head += chunk
    return head[3] == _H2_SETTINGS


def _probe(target: str, deadline: float, timeout: float) -> None:
    """Wait until a gRPC server (Ray's GCS) answers at ``target`` (``HOST:PORT``)."""
    host, _, port = target.rpartition(":")
    if not port.isdigit():
        raise ValueError(f"--address {target}: expected HOST:PORT")
    last = "no answer"
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise RayConnectError(
                f"cannot reach the Ray cluster at {target}: {last} (gave up after {timeout:g} s; "
                "--connect-timeout sets the limit)"
            )
        try:
            with socket.create_connection(
                (host.strip("[]"), int(port)), timeout=min(left, 2.0)
            ) as sock:
                grpc = _speaks_grpc(sock, deadline)
            if grpc:
                return
            last = (
                ("something listens there but does not answer as a Ray cluster (no gRPC reply)")
                if grpc is None
                else "it closed the connection: not a Ray cluster"
            )
        except OSError as exc:
            last = exc.strerror or type(exc).__name__
        time.sleep(min(0.5, max(0.0, deadline - time.monotonic())))


class _NotMainThread(logging.Filter):
    """Drops Ray's warning that it set no SIGTERM handler (it runs in a helper thread here)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "SIGTERM handler is not set" not in record.getMessage()


def _init_in_thread(ray: Any, target: str | None, deadline: float, timeout: float) -> None:
    """``ray.init(address=target)`` in a helper thread, waited for until ``deadline``."""
    outcome: dict[str, BaseException | None] = {}

    def init() -> None:
        try:
            ray.init(address=target, logging_level=logging.WARNING)
            outcome["error"] = None
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread
            outcome["error"] = exc

    quiet = _NotMainThread()
    logging.getLogger("ray._private.worker").addFilter(quiet)
    thread = threading.Thread(target=init, name="ray-connect", daemon=True)
    thread.start()
    try:
        while thread.is_alive() and time.monotonic() < deadline:
            thread.join(_STEP_S)
    finally:
        logging.getLogger("ray._private.worker").removeFilter(quiet)
    if "error" not in outcome:
        raise RayConnectError(
            f"the Ray cluster at {target} accepts connections but did not complete Ray's "
            f"handshake within {timeout:g} s (--connect-timeout)"
        )
    if isinstance(outcome["error"], ConnectionError):
        raise RayConnectError(f"cannot join the Ray cluster at {target}: {outcome['error']}")
    if outcome["error"] is not None:
        raise outcome["error"]


def connect(address: str | None, timeout: float = CONNECT_TIMEOUT_S) -> bool:
    """Join (or start) Ray; True when this call initialised it (the caller shuts it down).

    Parameters
    ----------
    address
        ``None`` (``RAY_ADDRESS``, else a local instance), ``"auto"`` or ``HOST:PORT``.
    timeout
        Seconds to reach a cluster and join it.

    Raises
    ------
    RayConnectError
        No cluster found, none answers within ``timeout``, or it refused to be joined.
    ValueError
        A malformed address, or a non-positive timeout.
    """
    import ray

    if not timeout > 0:
        raise ValueError(f"--connect-timeout must be > 0 seconds, got {timeout:g}")
    if ray.is_initialized():
        return False
    deadline = time.monotonic() + timeout
    wanted = address or os.environ.get("RAY_ADDRESS") or None
    target = _resolve(wanted) if wanted else None
    if target is not None and not target.startswith("ray://"):
        _probe(target, deadline, timeout)
    if target is None:
        ray.init(logging_level=logging.WARNING)  # a local instance of this run
    else:
        _init_in_thread(ray, target, deadline, timeout)
    return True
