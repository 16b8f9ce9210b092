"""A small orders service of "your own", on loopback: what the `orders` example agent calls over HTTP.

It behaves like a real payments provider: `POST /orders/{id}/refund` with an `Idempotency-Key` header
refunds at most once per key — a retry with the same key gets the first answer back, never a second
refund. `POST /orders/{id}/notify` (`{"text": ...}`, with a key) tells the customer, once per key: the repository's
application (workflows/order_refund.py) calls it after the refund. State is in SQLite, so every effect can be
counted (`GET /refunds`, `GET /notices`).

    python -m examples.orders_service --port 8090 --db .data/orders.db [--slow-after-effect 2] [--host 127.0.0.1]

`--slow-after-effect S` waits S seconds after a refund committed, before answering: the window in which a
worker that dies has made the effect without learning it did — the case the key exists for.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import signal
import sqlite3
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

ORDERS = {"A-1": 42.0, "B-2": 17.5, "C-3": 99.0}
_REFUND = re.compile(r"^/orders/([A-Za-z0-9-]{1,32})/refund$")
_ORDER = re.compile(r"^/orders/([A-Za-z0-9-]{1,32})$")
_NOTIFY = re.compile(r"^/orders/([A-Za-z0-9-]{1,32})/notify$")


class Orders:
    def __init__(self, db: Path) -> None:
        db.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(db, check_same_thread=False, isolation_level=None)
        self.db.execute("CREATE TABLE IF NOT EXISTS refunds (key TEXT PRIMARY KEY, order_id TEXT, answer TEXT)")
        self.db.execute("CREATE TABLE IF NOT EXISTS notices (key TEXT PRIMARY KEY, order_id TEXT, text TEXT)")
        self.lock = threading.Lock()

    def refund(self, order_id: str, key: str) -> tuple[str, bool]:
        """(answer, refunded_now): the check and the effect in one transaction, per key."""
        with self.lock:
            row = self.db.execute("SELECT answer FROM refunds WHERE key = ?", (key,)).fetchone()
            if row is not None:
                return row[0], False
            number = self.db.execute("SELECT COUNT(*) FROM refunds").fetchone()[0] + 1
            answer = f"refunded {order_id}: ${ORDERS[order_id]:.2f}, refund #{number}"
            self.db.execute("INSERT INTO refunds VALUES (?, ?, ?)", (key, order_id, answer))
            return answer, True

    def notify(self, order_id: str, key: str, text: str) -> bool:
        """Tells the customer, once per key; whether it was sent now."""
        with self.lock:
            done = self.db.execute("INSERT OR IGNORE INTO notices VALUES (?, ?, ?)", (key, order_id, text))
            return done.rowcount == 1

    def notices(self) -> list[dict[str, str]]:
        with self.lock:
            rows = self.db.execute("SELECT key, order_id, text FROM notices ORDER BY rowid").fetchall()
        return [{"key": k, "order_id": o, "text": t} for k, o, t in rows]

    def refunds(self) -> list[dict[str, str]]:
        with self.lock:
            rows = self.db.execute("SELECT key, order_id, answer FROM refunds ORDER BY rowid").fetchall()
        return [{"key": k, "order_id": o, "answer": a} for k, o, a in rows]


def handler(orders: Orders, slow_after_effect: float) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        timeout = 10  # a silent client cannot hold a thread

        def do_GET(self) -> None:
            if self.path == "/refunds":
                return self._send(200, orders.refunds())
            if self.path == "/notices":
                return self._send(200, orders.notices())
            match = _ORDER.match(self.path)
            if match and match.group(1) in ORDERS:
                return self._send(200, {"order_id": match.group(1), "amount": ORDERS[match.group(1)]})
            self._send(404, {"error": "no such order"})

        def do_POST(self) -> None:
            notify = _NOTIFY.match(self.path)
            if notify and notify.group(1) in ORDERS and self.headers.get("Idempotency-Key"):
                length = int(self.headers.get("Content-Length") or 0)
                text = json.loads(self.rfile.read(length) or b"{}").get("text", "")
                sent = orders.notify(notify.group(1), self.headers["Idempotency-Key"], str(text))
                return self._send(200, {"sent": sent})
            match = _REFUND.match(self.path)
            if not match or match.group(1) not in ORDERS:
                return self._send(404, {"error": "no such order"})
            key = self.headers.get("Idempotency-Key", "")
            if not key:
                return self._send(400, {"error": "an Idempotency-Key header is required"})
            answer, now = orders.refund(match.group(1), key)
            if now:
                time.sleep(slow_after_effect)
            self._send(200, {"answer": answer, "replayed": not now})

        def _send(self, status: int, body: Any) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m examples.orders_service")
    parser.add_argument("--host", default="127.0.0.1", help="the address to listen on (a lab host's own, say)")
    parser.add_argument("--port", type=int, default=8090)
    parser.add_argument("--db", type=Path, default=Path(".data/orders.db"))
    parser.add_argument("--slow-after-effect", type=float, default=0.0)
    args = parser.parse_args(argv)
    server = ThreadingHTTPServer((args.host, args.port), handler(Orders(args.db), args.slow_after_effect))
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda *_: threading.Thread(target=server.shutdown).start())
    print(f"orders service on http://{args.host}:{server.server_port}", flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
