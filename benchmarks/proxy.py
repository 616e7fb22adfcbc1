"""Proxy cost: a download through proxy mode's proxy against the same download direct.

One HTTP server on the host's 127.0.0.1; one client program, run in two sandboxes in
the same run: a host-mode one that connects to the server directly, and a proxy-mode one
(`localhost` allowed) that goes through the helper and the supervisor's proxy, as an
absolute-URI request and as a CONNECT tunnel. Each measures, inside its sandbox (the
sandbox's start is left out), the median time of a request for a one-byte body on a new
connection (latency) and the best throughput of a large download; the ratios proxy /
direct are printed last.

    .venv/bin/python benchmarks/proxy.py [--size-mib N] [--requests N] [--downloads N]
"""

from __future__ import annotations

import argparse
import http.server
import json
import os
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
            folder: str) -> dict[str, float]:
    mode = "host" if way == "direct" else "proxy"
    spec = Path(folder) / f"{mode}.toml"
    allow = '\nallow = ["localhost"]' if mode == "proxy" else ""
    spec.write_text(f'[network]\nmode = "{mode}"{allow}\n')
    done = subprocess.run(
        [LNK, "sandbox", "run", "--yes", "--spec", str(spec), "--", PYTHON_INSIDE, "-c",
         CLIENT, str(port), str(size), str(requests), str(downloads), way],
        cwd=folder, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        raise SystemExit(f"{way}: exit {done.returncode}\n{done.stderr}")
    result: dict[str, float] = json.loads(done.stdout)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size-mib", type=int, default=64)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--downloads", type=int, default=5)
    args = parser.parse_args()
    size = args.size_mib << 20
    server = serve(size)
    port = server.server_address[1]
    try:
        with tempfile.TemporaryDirectory() as folder:
            os.environ.setdefault("LNK_HOME", os.path.join(folder, ".lnk"))
            results = {way: measure(way, port, size=size, requests=args.requests,
                                  downloads=args.downloads, folder=folder)
                       for way in ("direct", "absolute", "tunnel")}
    finally:
        server.shutdown()
    direct = results["direct"]
    print(f"{'':<28}{'latency (median)':>18}{'throughput (best)':>20}")
    for way, label in (("direct", "direct (host mode)"),
                       ("absolute", "proxy, absolute URI"),
                       ("tunnel", "proxy, CONNECT tunnel")):
        result = results[way]
        print(f"{label:<28}{result['latency'] * 1000:>15.2f} ms"
              f"{result['throughput'] / 2**20:>15.0f} MiB/s")
    for way in ("absolute", "tunnel"):
        result = results[way]
        print(f"ratio {way:<9} latency x{result['latency'] / direct['latency']:.2f} "
              f"(+{(result['latency'] - direct['latency']) * 1000:.2f} ms), "
              f"throughput x{result['throughput'] / direct['throughput']:.2f}")


if __name__ == "__main__":
    main()
