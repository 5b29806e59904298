"""A real TCP proxy on 127.0.0.1 (threads) between the app and a server, that a test can cut and restart.

    with TcpProxy("127.0.0.1", 5432) as proxy:     # listens on proxy.port
        ...                                         # connect the app to 127.0.0.1:proxy.port
        proxy.cut(down_for=2.0)   # close every open connection at once, then refuse new ones for 2 s
                                  # (as a server restart looks to its clients), then accept again

        held = proxy.hold_after(b"COPY finops_usageline ")  # a client's statement passes, and then nothing it
        held.wait()                                          # sends: the server waits in the COPY for its rows

Refusing is done by accepting and closing at once: the client sees the server close the connection before it
answers, exactly what a restarting Postgres's clients see.
"""

import socket
import threading
import time


class TcpProxy:
    def __init__(self, target_host: str, target_port: int):
        self.target = (target_host, target_port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        self._down_until = 0.0
        self._stopped = False
        self.cuts = 0
        self.refused = 0
        self._marker = b""
        self._release = threading.Event()
        self._thread = threading.Thread(target=self._accept_loop, daemon=True)

    def __enter__(self) -> "TcpProxy":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stopped = True
        self._release.set()
        self._listener.close()
        self._close_all()

    def cut(self, *, down_for: float = 0.0) -> int:
        """Close every connection now; refuse new ones for `down_for` seconds. Returns how many were cut."""
        self._down_until = time.monotonic() + down_for
        self.cuts += 1
        self._release.set()
        return self._close_all()

    def hold_after(self, marker: bytes) -> threading.Event:
        """Once a client has sent `marker` (a statement's text: forwarded whole), forward nothing more it sends
        until `cut` or `release`; the server's answers still pass. Returns an event set at that moment.

        A fault test's pause point: the client is inside that statement (a COPY's client has its CopyInResponse and
        writes rows that never arrive; the server waits for them), however small the statement's data, rather than
        racing a workload made big enough to be still running when the test acts. Once only: later statements pass.
        """
        self.held = threading.Event()
        self._release.clear()
        self._marker = marker
        return self.held

    def release(self) -> None:
        """Forward what the held client sent meanwhile, and everything after it."""
        self._release.set()

    @property
    def down(self) -> bool:
        return time.monotonic() < self._down_until

    def _close_all(self) -> int:
        with self._lock:
            sockets, self._open = list(self._open), set()
        for sock in sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()
        return len(sockets) // 2

    def _accept_loop(self) -> None:
        while not self._stopped:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            if self.down:
                self.refused += 1
                client.close()
                continue
            try:
                server = socket.create_connection(self.target, timeout=5)
                server.settimeout(None)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._open |= {client, server}
            for source, sink, upstream in ((client, server, True), (server, client, False)):
                threading.Thread(target=self._pump, args=(source, sink, upstream), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket, upstream: bool) -> None:
        tail = b""  # the end of what came before: a marker split between two reads is still seen
        try:
            while data := source.recv(65536):
                sink.sendall(data)
                if upstream and self._marker:
                    seen, marker = tail + data, self._marker
                    if marker in seen:
                        self._marker = b""
                        self.held.set()
                        self._release.wait()
                        continue
                    tail = seen[-len(marker) :]
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
            with self._lock:
                self._open.discard(source)
                self._open.discard(sink)
