"""Proxy cost: a download through proxy mode's proxy against the same download direct.

One HTTP server on the host's 127.0.0.1; one client program, run in sandboxes in the
same run: a host-mode one that connects to the server directly, and proxy-mode ones
(`localhost:PORT` allowed) that go through the supervisor's proxy, as an absolute-URI
request and as a CONNECT tunnel. Each measures, inside its sandbox (the sandbox's start
is left out), the median time of a request for a one-byte body on a new connection
(latency) and the best throughput of a large download. The ways take turns for
`--rounds` rounds, so that a load that comes and goes on the machine falls on each: the
latency printed is the median of the rounds' medians, the throughput the best of all.
The ratios proxy / direct are printed last.

`--relay WAY:BYTES` (repeatable) measures the proxy once per relay way and chunk, through
the supervisor's LNK_PROXY_RELAY and LNK_PROXY_BUFFER (proxy/relay.py): `hybrid:1048576`
(the default: copy until a read fills 64 KiB, then splice), `splice:1048576`,
`copy:262144`, ...; without it, the default. `--baseline LNK` measures another
installation's `lnk` (an older checkout's venv) in the same rounds, so that a before and
an after share the machine's load: its rows are marked [baseline].

    .venv/bin/python benchmarks/proxy.py [--size-mib N] [--requests N] [--downloads N]
        [--rounds N] [--relay WAY:BYTES ...] [--baseline PATH/TO/lnk]
"""

from __future__ import annotations

import argparse
import http.server
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

LNK = str(Path(sys.executable).parent / "lnk")
PYTHON_INSIDE = "/usr/bin/python3"

CLIENT = r"""
import http.client, json, socket, statistics, sys, time
port, size, requests, downloads, way = int(sys.argv[1]), int(sys.argv[2]), \
    int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
buffer = bytearray(1 << 20)

def get(path):
    if way == "direct":
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        conn.request("GET", path)
    elif way == "absolute":
        conn = http.client.HTTPConnection("127.0.0.1", 3128, timeout=60)
        conn.request("GET", f"http://localhost:{port}{path}")
    else:
        conn = http.client.HTTPConnection("127.0.0.1", 3128, timeout=60)
        conn.set_tunnel("localhost", port)
        conn.request("GET", path)
    response = conn.getresponse()
    assert response.status == 200, response.status
    got = 0
    while n := response.readinto(buffer):
        got += n
    conn.close()
    return got

latencies = []
for _ in range(requests):
    start = time.perf_counter()
    assert get("/small") == 1
    latencies.append(time.perf_counter() - start)
rates = []
for _ in range(downloads):
    start = time.perf_counter()
    assert get("/large") == size
    rates.append(size / (time.perf_counter() - start))
print(json.dumps({"latency": statistics.median(latencies), "throughput": max(rates)}))
"""


def serve(size: int) -> http.server.ThreadingHTTPServer:
    large = os.urandom(1 << 20) * (size >> 20)

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            body = large if self.path == "/large" else b"x"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def measure(way: str, port: int, *, size: int, requests: int, downloads: int,
            folder: str, relay: str | None = None, lnk: str = LNK) -> dict[str, float]:
    mode = "host" if way == "direct" else "proxy"
    # The client starts in a project folder the spec lets it read: a spec file grants
    # nothing it does not name, and lnk refuses to start a command elsewhere.
    project = Path(folder) / "project"
    project.mkdir(exist_ok=True)
    spec = project / f"{mode}.toml"
    allow = f'\nallow = ["localhost:{port}"]' if mode == "proxy" else ""
    spec.write_text(f'[files]\nread = ["."]\n\n[network]\nmode = "{mode}"{allow}\n')
    env = dict(os.environ)
    if relay is not None and relay != "baseline":
        kind, _, size_text = relay.partition(":")
        env["LNK_PROXY_RELAY"], env["LNK_PROXY_BUFFER"] = kind, size_text
    done = subprocess.run(
        [lnk, "sandbox", "run", "--yes", "--spec", str(spec), "--", PYTHON_INSIDE, "-c",
         CLIENT, str(port), str(size), str(requests), str(downloads), way],
        cwd=project, capture_output=True, text=True, timeout=600, env=env)
    if done.returncode != 0:
        raise SystemExit(f"{way}: exit {done.returncode}\n{done.stderr}")
    result: dict[str, float] = json.loads(done.stdout)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mib", type=int, default=64)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--downloads", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--relay", action="append", metavar="WAY:BYTES")
    parser.add_argument("--baseline", metavar="LNK")
    args = parser.parse_args()
    size = args.size_mib << 20
    server = serve(size)
    port = server.server_address[1]
    relays: list[str | None] = list(args.relay or [None])
    if args.baseline:
        relays.append("baseline")
    ways = [("direct", None)] + [(way, relay) for relay in relays
                                 for way in ("absolute", "tunnel")]
    runs: dict[tuple[str, str | None], list[dict[str, float]]] = {w: [] for w in ways}
    try:
        with tempfile.TemporaryDirectory() as folder:
            os.environ.setdefault("LNK_HOME", os.path.join(folder, ".lnk"))
            for _ in range(args.rounds):
                for way, relay in ways:
                    runs[(way, relay)].append(measure(
                        way, port, size=size, requests=args.requests,
                        downloads=args.downloads, folder=folder, relay=relay,
                        lnk=args.baseline if relay == "baseline" else LNK))
    finally:
        server.shutdown()
    results = {key: {"latency": statistics.median(r["latency"] for r in found),
                     "throughput": max(r["throughput"] for r in found)}
               for key, found in runs.items()}
    direct = results[("direct", None)]
    print(f"{'':<40}{'latency (median)':>18}{'throughput (best)':>20}")
    for (way, relay), result in results.items():
        label = {"direct": "direct (host mode)", "absolute": "proxy, absolute URI",
                 "tunnel": "proxy, CONNECT tunnel"}[way]
        if relay:
            label += f" [{relay}]"
        print(f"{label:<40}{result['latency'] * 1000:>15.2f} ms"
              f"{result['throughput'] / 2**20:>15.0f} MiB/s")
    for (way, relay), result in results.items():
        if way == "direct":
            continue
        print(f"ratio {way:<9}{f' [{relay}]' if relay else '':<20} latency "
              f"x{result['latency'] / direct['latency']:.2f} "
              f"(+{(result['latency'] - direct['latency']) * 1000:.2f} ms), "
              f"throughput x{result['throughput'] / direct['throughput']:.2f}")


if __name__ == "__main__":
    main()
