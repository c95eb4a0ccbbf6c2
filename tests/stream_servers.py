"""Live streams of a clip on 127.0.0.1, for the live-source tests and the latency benchmark.

* :class:`RtspServer`: a small RTSP server (one client at a time). FFmpeg packs the clip into
  RTP (``-f rtp``, at its frame rate with ``-re``); this server answers the RTSP requests and
  relays the RTP packets to the client, interleaved on the RTSP connection (TCP) or to the
  client's UDP ports. FFmpeg's own ``-rtsp_flags listen`` only *receives* a published stream
  (it is an option of the RTSP demuxer), so it cannot serve one. The server can drop a client
  mid-stream (:meth:`RtspServer.drop`) or stop sending (:meth:`RtspServer.stall`).
* :func:`http_ts`: FFmpeg serving live MPEG-TS over HTTP to one client (``-listen 1``).
* :func:`udp_ts`: FFmpeg sending MPEG-TS to a UDP port.
* :func:`http_hls`: a live HLS playlist (FFmpeg's HLS muxer, 1-s segments, a sliding window)
  served over HTTP.
* :class:`FollowProcess`: ``python -m baglm_nb follow`` in a process of its own, its output
  lines time-stamped; with a :class:`cli_forks.CliForks`, forked from one Python that imported
  torch, transformers and the rest once.

Every server listens on 127.0.0.1 only and is stopped when its ``with`` block ends.
"""

from __future__ import annotations

import contextlib
import os
import re
import select
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from cli_forks import CliForks, ForkedProcess

FFMPEG = ["ffmpeg", "-nostdin", "-loglevel", "error"]


def ffmpeg(*args: str) -> None:
    """Run ffmpeg quietly with ``args`` (output files overwritten); fails when it fails."""
    subprocess.run([*FFMPEG, "-y", *args], check=True, timeout=60)


def free_port(kind: int = socket.SOCK_STREAM) -> int:
    """A port that is free on 127.0.0.1 now."""
    with socket.socket(socket.AF_INET, kind) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_listening(port: int, timeout: float = 10.0) -> None:
    """Wait until a TCP socket listens on ``port`` (read from /proc, without connecting: a
    one-client server would take a probe for its client)."""
    needle = f":{port:04X} "
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for table in ("/proc/net/tcp", "/proc/net/tcp6"):
            with contextlib.suppress(OSError), open(table) as f:
                for line in f.readlines()[1:]:
                    fields = line.split()
                    if (fields[1] + " ").endswith(needle) and fields[3] == "0A":
                        return
        time.sleep(0.02)
    raise TimeoutError(f"nothing listens on port {port} after {timeout} s")


def _source_args(clip: Path, *, loop: bool, speed: float = 1.0) -> list[str]:
    """FFmpeg input options: ``clip`` read at ``speed`` times its frame rate, looped or not."""
    return [
        "-readrate",
        f"{speed:g}",
        *(["-stream_loop", "-1"] if loop else []),
        "-i",
        str(clip),
        "-an",
        "-c:v",
        "copy",
    ]


class HttpStream(str):
    """The URL of :func:`http_ts`'s stream; :meth:`kill` kills its server mid-stream (no end of
    stream is sent: FFmpeg's HTTP server ends a stream it finishes with the terminating chunk)."""

    proc: subprocess.Popen

    def kill(self) -> None:
        """Kill the server (SIGKILL)."""
        self.proc.kill()


@contextlib.contextmanager
def http_ts(clip: Path, *, loop: bool = True, speed: float = 1.0) -> Iterator[HttpStream]:
    """``http://127.0.0.1:PORT/live.ts``: live MPEG-TS of ``clip`` for one client, at ``speed``
    times its frame rate."""
    port = free_port()
    url = HttpStream(f"http://127.0.0.1:{port}/live.ts")
    url.proc = subprocess.Popen(
        [*FFMPEG, *_source_args(clip, loop=loop, speed=speed), "-f", "mpegts", "-listen", "1", url]
    )
    try:
        wait_listening(port)
        yield url
    finally:
        url.proc.kill()
        url.proc.wait()


@contextlib.contextmanager
def udp_ts(
    clip: Path, port: int, *, loop: bool = True, speed: float = 1.0
) -> Iterator[subprocess.Popen]:
    """Send MPEG-TS of ``clip`` to ``udp://127.0.0.1:port`` (at ``speed`` times its frame rate)."""
    proc = subprocess.Popen(
        [
            *FFMPEG,
            *_source_args(clip, loop=loop, speed=speed),
            "-f",
            "mpegts",
            f"udp://127.0.0.1:{port}?pkt_size=1316",
        ]
    )
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()


@contextlib.contextmanager
def http_hls(clip: Path, *, speed: float = 1.0) -> Iterator[str]:
    """``http://127.0.0.1:PORT/live.m3u8``: a live HLS stream of ``clip`` (looped, at ``speed``
    times its frame rate)."""
    from range_server import serve

    with tempfile.TemporaryDirectory() as folder:
        playlist = Path(folder) / "live.m3u8"
        proc = subprocess.Popen(
            [
                *FFMPEG,
                *_source_args(clip, loop=True, speed=speed),
                "-f",
                "hls",
                "-hls_time",
                "1",
                "-hls_list_size",
                "6",
                "-hls_flags",
                "delete_segments",
                str(playlist),
            ]
        )
        try:
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:  # two segments listed: a client can start
                if playlist.exists() and playlist.read_text().count("#EXTINF") >= 2:
                    break
                time.sleep(0.05)
            with serve(folder) as base:
                yield f"{base}/live.m3u8"
        finally:
            proc.kill()
            proc.wait()


class RtspServer:
    """Serve ``clip`` as a live RTSP stream at ``rtsp://127.0.0.1:PORT/live``.

    Each client gets a fresh FFmpeg run of the clip (looped with ``loop=True``, at ``speed``
    times its frame rate), so a client that reconnects gets a new stream. Use it as a
    context manager; :meth:`drop` cuts the current client off (FFmpeg killed, connection closed)
    and :meth:`stall` stops sending while keeping the connection open.
    """

    def __init__(self, clip: Path, *, loop: bool = False, speed: float = 1.0, port: int = 0):
        self.clip, self.loop, self.speed = Path(clip), loop, speed
        self._listener = socket.create_server(("127.0.0.1", port))
        self.port = self._listener.getsockname()[1]
        self.url = f"rtsp://127.0.0.1:{self.port}/live"
        self.clients = 0
        #: perf_counter() when the current client's PLAY was answered (the stream's start).
        self.play_time: float | None = None
        #: The current client's frames: RTP time (s, from the first packet sent, as FFmpeg's
        #: RTSP client stamps it) -> perf_counter() when the frame's last packet was sent.
        self.frames_sent: dict[float, float] = {}
        self._first_rtp: int | None = None
        self._closed = threading.Event()
        self._stalled = threading.Event()
        self._conn: socket.socket | None = None
        self._ffmpeg: subprocess.Popen | None = None
        self._thread = threading.Thread(target=self._accept_loop, daemon=True)
        self._thread.start()

    def __enter__(self) -> RtspServer:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Stop serving: the client is cut off and the port closed."""
        self._closed.set()
        self.drop()
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        self._thread.join(timeout=5)

    def drop(self) -> None:
        """Cut the current client off mid-stream (the server keeps listening)."""
        if self._ffmpeg is not None:
            self._ffmpeg.kill()
        if self._conn is not None:
            with contextlib.suppress(OSError):
                self._conn.shutdown(socket.SHUT_RDWR)

    def stall(self) -> None:
        """Stop sending packets; the connection stays open."""
        self._stalled.set()
        if self._ffmpeg is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self._ffmpeg.pid, signal.SIGSTOP)

    # ---------------------------------------------------------------------------------------

    def _sent(self, rtp_time: int) -> None:
        if self._first_rtp is None:
            self._first_rtp = rtp_time
        ticks = (rtp_time - self._first_rtp) % (1 << 32)
        self.frames_sent[ticks / 90000] = time.perf_counter()

    def sent_at(self, stream_time: float) -> float:
        """perf_counter() when the frame stamped ``stream_time`` (s) left this server."""
        nearest = min(self.frames_sent, key=lambda t: abs(t - stream_time))
        if abs(nearest - stream_time) > 1e-3:
            raise KeyError(f"no frame at {stream_time} s (nearest: {nearest} s)")
        return self.frames_sent[nearest]

    def _accept_loop(self) -> None:
        while not self._closed.is_set():
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            self.clients += 1
            self._stalled.clear()
            self.frames_sent, self._first_rtp = {}, None
            self._conn = conn
            try:
                with tempfile.TemporaryDirectory() as tmp:
                    _Session(self, conn, Path(tmp)).run()
            except OSError:
                pass
            finally:
                if self._ffmpeg is not None:
                    self._ffmpeg.kill()
                    self._ffmpeg.wait()
                    self._ffmpeg = None
                with contextlib.suppress(OSError):
                    conn.close()
                self._conn = None

    def _start_ffmpeg(self, tmp: Path, rtp: int, rtcp: int) -> str:
        """Start FFmpeg's RTP output to ports ``rtp``/``rtcp``; returns its SDP."""
        sdp = tmp / "stream.sdp"
        self._ffmpeg = subprocess.Popen(
            [
                *FFMPEG,
                *_source_args(self.clip, loop=self.loop, speed=self.speed),
                "-f",
                "rtp",
                "-rtpflags",
                "send_bye",  # RTCP BYE at the clip's end: the stream ended, it did not vanish
                "-sdp_file",
                str(sdp),
                f"rtp://127.0.0.1:{rtp}?rtcpport={rtcp}&pkt_size=1200",
            ]
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if sdp.exists() and "a=rtpmap" in (text := sdp.read_text()):
                lines = [ln for ln in text.splitlines() if ln and not ln.startswith("c=")]
                lines = [re.sub(r"^m=video \d+", "m=video 0", ln) for ln in lines]
                lines.insert(2, "c=IN IP4 0.0.0.0")
                return "\r\n".join([*lines, "a=control:streamid=0"]) + "\r\n"
            time.sleep(0.01)
        raise RuntimeError("ffmpeg wrote no SDP")


class _Session:
    """One RTSP client: requests on the TCP connection, RTP relayed from FFmpeg."""

    def __init__(self, server: RtspServer, conn: socket.socket, tmp: Path):
        self.server, self.conn, self.tmp = server, conn, tmp
        self.udp = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(2)]
        for s in self.udp:
            # a big buffer: FFmpeg's packets wait there while this relay is starved of CPU
            # (a busy machine, or a model loading in this process); beyond net.core.rmem_max
            # only for root (SO_RCVBUFFORCE)
            try:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUFFORCE, 1 << 24)
            except (OSError, AttributeError):
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
            s.bind(("127.0.0.1", 0))
        self.lock = threading.Lock()
        self.playing = threading.Event()
        self.client_ports: tuple[int, int] | None = None  # UDP transport; None: interleaved
        self.done = threading.Event()

    def run(self) -> None:
        relay = threading.Thread(target=self._relay, daemon=True)
        relay.start()
        try:
            self._requests()
        finally:
            self.done.set()
            relay.join(timeout=5)
            for s in self.udp:
                s.close()

    def _send(self, data: bytes) -> None:
        with self.lock:
            self.conn.sendall(data)

    def _reply(self, cseq: str, headers: dict[str, str] | None = None, body: str = "") -> None:
        lines = [
            "RTSP/1.0 200 OK",
            f"CSeq: {cseq}",
            *(f"{k}: {v}" for k, v in (headers or {}).items()),
        ]
        if body:
            lines.append(f"Content-Length: {len(body.encode())}")
        self._send(("\r\n".join(lines) + "\r\n\r\n" + body).encode())

    def _requests(self) -> None:
        buf = b""
        while not self.server._closed.is_set():
            try:
                chunk = self.conn.recv(65536)
            except OSError:
                return
            if not chunk:
                return
            buf += chunk
            while buf:
                if buf[:1] == b"$":  # interleaved RTCP from the client
                    if len(buf) < 4 or len(buf) < 4 + int.from_bytes(buf[2:4], "big"):
                        break
                    buf = buf[4 + int.from_bytes(buf[2:4], "big") :]
                    continue
                head, sep, rest = buf.partition(b"\r\n\r\n")
                if not sep:
                    break
                lines = head.decode("latin-1").split("\r\n")
                headers = dict(ln.split(":", 1) for ln in lines[1:] if ":" in ln)
                headers = {k.strip().lower(): v.strip() for k, v in headers.items()}
                length = int(headers.get("content-length", 0))
                if len(rest) < length:
                    break
                buf = rest[length:]
                if not self._handle(lines[0].split()[0], headers):
                    return

    def _handle(self, method: str, headers: dict[str, str]) -> bool:
        cseq = headers.get("cseq", "0")
        session = {"Session": "4242;timeout=60"}
        if method == "OPTIONS":
            self._reply(cseq, {"Public": "OPTIONS, DESCRIBE, SETUP, PLAY, TEARDOWN, GET_PARAMETER"})
        elif method == "DESCRIBE":
            rtp, rtcp = (s.getsockname()[1] for s in self.udp)
            sdp = self.server._start_ffmpeg(self.tmp, rtp, rtcp)
            base = {"Content-Base": self.server.url + "/", "Content-Type": "application/sdp"}
            self._reply(cseq, base, sdp)
        elif method == "SETUP":
            transport = headers.get("transport", "")
            ports = re.search(r"client_port=(\d+)-(\d+)", transport)
            if ports and "interleaved" not in transport:
                self.client_ports = (int(ports.group(1)), int(ports.group(2)))
                reply = f"RTP/AVP;unicast;client_port={ports.group(1)}-{ports.group(2)}"
            else:
                reply = "RTP/AVP/TCP;unicast;interleaved=0-1"
            self._reply(cseq, {"Transport": reply, **session})
        elif method == "PLAY":
            self._reply(cseq, {"Range": "npt=0.000-", **session})
            self.server.play_time = time.perf_counter()
            self.playing.set()
        elif method == "TEARDOWN":
            self._reply(cseq, session)
            return False
        else:  # GET_PARAMETER keep-alives and anything else
            self._reply(cseq, session)
        return True

    def _relay(self) -> None:
        """Forward FFmpeg's RTP (channel 0) and RTCP (channel 1) once the client plays."""
        pending: list[tuple[int, bytes]] = []
        out = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        idle_since = None
        try:
            while not self.done.is_set():
                ready, _, _ = select.select(self.udp, [], [], 0.05)
                for channel, s in enumerate(self.udp):
                    if s in ready:
                        pending.append((channel, s.recv(65536)))
                ffmpeg = self.server._ffmpeg
                if not ready and ffmpeg is not None and ffmpeg.poll() is not None:
                    idle_since = idle_since or time.monotonic()
                    # hang up 1.5 s after the clip's end: a UDP client that reads late still
                    # gets the last packets and the BYE before it sees the connection close
                    if time.monotonic() - idle_since > 1.5 and not pending:
                        with contextlib.suppress(OSError):  # the clip ended: hang up
                            self.conn.shutdown(socket.SHUT_RDWR)
                        return
                if not self.playing.is_set() or self.server._stalled.is_set():
                    if self.server._stalled.is_set():
                        pending.clear()
                    continue
                for channel, packet in pending:
                    if self.client_ports is None:
                        header = b"$" + bytes([channel]) + len(packet).to_bytes(2, "big")
                        self._send(header + packet)
                    else:
                        out.sendto(packet, ("127.0.0.1", self.client_ports[channel]))
                    if channel == 0 and len(packet) >= 8 and packet[1] & 0x80:
                        self.server._sent(int.from_bytes(packet[4:8], "big"))  # a frame's last
                pending.clear()
        except OSError:
            return
        finally:
            out.close()


# --------------------------------------------------------------------------------------------
# timing a followed run from outside, on a machine that may be busy


class FollowProcess:
    """``python -m baglm_nb follow URL ...`` in a subprocess, its output lines time-stamped
    (``time.perf_counter()``, the clock :class:`RtspServer` stamps the frames it sends with) and
    its event log's lines too, as they appear. Use it as a context manager (the process is
    killed at the end if it still runs). With ``forks`` (a :class:`cli_forks.CliForks`) the
    process is a child forked from it, with the libraries already imported."""

    def __init__(self, url: str, folder: Path, *args: str, forks: CliForks | None = None) -> None:
        import sys

        self.log, self.report = folder / "events.jsonl", folder / "report.html"
        #: (perf_counter(), "out" or "err", line) of each output line.
        self.lines: list[tuple[float, str, str]] = []
        #: perf_counter() when each event-log line was first seen (polled every 20 ms).
        self.logged: list[float] = []
        self.exited: float | None = None
        self.cpu_total: float | None = None
        argv = ["follow", url, *args, "--jsonl", str(self.log), "--html", str(self.report)]
        if forks is not None:
            self.proc = forks.start(argv)
        else:
            cmd = [sys.executable, "-m", "baglm_nb", *argv]
            self.proc = subprocess.Popen(
                cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
            )
        self._threads = [
            threading.Thread(target=self._read, args=(self.proc.stdout, "out"), daemon=True),
            threading.Thread(target=self._read, args=(self.proc.stderr, "err"), daemon=True),
            threading.Thread(target=self._watch_log, daemon=True),
        ]
        for t in self._threads:
            t.start()

    def __enter__(self) -> FollowProcess:
        return self

    def __exit__(self, *exc) -> None:
        if self.running():
            self.proc.kill()
        self.proc.wait()

    def running(self) -> bool:
        """Whether the process has not exited (it is left for :meth:`wait` to reap)."""
        if self.proc.returncode is not None:
            return False
        if isinstance(self.proc, ForkedProcess):
            return self.proc.poll() is None
        flags = os.WEXITED | os.WNOHANG | os.WNOWAIT
        try:
            return os.waitid(os.P_PID, self.proc.pid, flags) is None
        except ChildProcessError:  # reaped by wait() just now
            return False

    def _read(self, stream, name: str) -> None:
        for line in stream:
            self.lines.append((time.perf_counter(), name, line.rstrip("\n")))

    def _watch_log(self) -> None:
        while self.running():
            if self.log.exists():
                with contextlib.suppress(OSError), open(self.log) as f:
                    n = sum(1 for line in f if line.endswith("\n"))
                self.logged += [time.perf_counter()] * (n - len(self.logged))
            time.sleep(0.02)

    def wait_for_events(self, n: int, timeout: float) -> None:
        """Wait until ``n`` events are logged (the model loaded and segments came)."""
        deadline = time.monotonic() + timeout
        while len(self.logged) < n:
            if not self.running() or time.monotonic() > deadline:
                raise AssertionError(f"{len(self.logged)} events logged: {self.output()}")
            time.sleep(0.02)

    def cpu_s(self) -> float:
        """The CPU time (s, all threads) the running process has used so far."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def wait(self, timeout: float) -> int:
        """Wait for the exit (at most ``timeout`` s, polled every 5 ms); its time is
        ``exited``, the CPU time the process used in all ``cpu_total``."""
        if isinstance(self.proc, ForkedProcess):  # its parent, the fork server, reaps it
            self.proc.wait(timeout)
            self.exited, self.cpu_total = self.proc.exited, self.proc.cpu_s
            for t in self._threads[:2]:
                t.join(timeout=10)
            return self.proc.returncode
        deadline = time.perf_counter() + timeout
        while True:
            pid, status, usage = os.wait4(self.proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() > deadline:
                raise subprocess.TimeoutExpired(self.proc.args, timeout)
            time.sleep(0.005)
        self.exited = time.perf_counter()
        self.proc.returncode = os.waitstatus_to_exitcode(status)
        self.cpu_total = usage.ru_utime + usage.ru_stime
        for t in self._threads[:2]:
            t.join(timeout=10)
        return self.proc.returncode

    def first(self, words: str) -> float:
        """When the first output line holding ``words`` came."""
        found = [t for t, _, line in self.lines if words in line]
        if not found:
            raise AssertionError(f"no line with {words!r}: {self.output()}")
        return found[0]

    def output(self) -> str:
        return "\n".join(f"{name}: {line}" for _, name, line in self.lines)


@contextlib.contextmanager
def rtsp_process(clip: Path, *, speed: float = 1.0, loop: bool = False) -> Iterator[str]:
    """:class:`RtspServer` in a process of its own: its URL. For a test that loads a model in
    its own process while the stream plays (the relay would wait for the interpreter, and
    FFmpeg's packets would overflow), stopped when the ``with`` block ends."""
    import sys

    code = (
        "import sys, time; sys.path.insert(0, sys.argv[1]); from pathlib import Path; "
        "from stream_servers import RtspServer; loop = sys.argv[4] == '1'; "
        "server = RtspServer(Path(sys.argv[2]), speed=float(sys.argv[3]), loop=loop); "
        "print(server.url, flush=True); time.sleep(600)"
    )
    here = str(Path(__file__).parent)
    args = [sys.executable, "-c", code, here, str(clip), f"{speed:g}", "1" if loop else "0"]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
    try:
        url = proc.stdout.readline().strip()
        if not url.startswith("rtsp://"):
            raise RuntimeError(f"the RTSP server did not start: {url!r}")
        yield url
    finally:
        proc.kill()
        proc.wait()
