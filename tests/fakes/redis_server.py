"""A private redis-server process on a free port, that a test may kill and start again (never the shared one).

with RedisServer() as redis_server:    # redis_server.url: redis://127.0.0.1:<port>/0
    redis_server.restart(down_for=1.0)  # SIGKILL, then the same port again: no persistence, so every key
                                        # (queued tasks included) is gone, as after a crash of a cache-only Redis
"""

import shutil
import signal
import socket
import subprocess
import time

import redis


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class RedisServer:
    def __init__(self):
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen | None = None
        self.binary = shutil.which("redis-server") or "/usr/bin/redis-server"

    def start(self) -> None:
        self.process = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while True:
            try:
                client = redis.Redis.from_url(self.url)
                client.ping()
                client.close()
                return
            except redis.ConnectionError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=10)

    def restart(self, *, down_for: float = 1.0) -> None:
        self.kill()
        time.sleep(down_for)
        self.start()

    def client(self) -> redis.Redis:
        return redis.Redis.from_url(self.url)

    def __enter__(self) -> "RedisServer":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.kill()
