"""A package registry of the test's own, for pip and npm to install from through the
proxy, in the lab's network (support/lab.py serves it over HTTPS): a simple PyPI index
with one wheel, an npm registry with one package, and a CA whose certificate for
pypi.org, files.pythonhosted.org and registry.npmjs.org the clients are told to trust.

The packages are stand-ins with real names (`six`, `left-pad`), so that a README recipe
runs as written; what they hold says where they came from.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import subprocess
import tarfile
import zipfile
from pathlib import Path

NAMES = ("pypi.org", "files.pythonhosted.org", "registry.npmjs.org")
WHEEL = "six-99.0-py3-none-any.whl"
TARBALL = "left-pad-99.0.0.tgz"


def certificates(folder: Path) -> dict[str, Path]:
    """A CA and a server certificate for NAMES signed by it: {"ca", "cert", "key"}."""
    folder.mkdir(parents=True, exist_ok=True)
    ca_key, ca, key, request, cert = (folder / name for name in (
        "ca.key", "ca.pem", "server.key", "server.csr", "server.pem"))
    names = ",".join(f"DNS:{name}" for name in NAMES)

    def openssl(*args: str) -> None:
        subprocess.run(["openssl", *args], check=True, capture_output=True)

    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(ca_key), "-out",
            str(ca), "-days", "2", "-subj", "/CN=lnk-sandbox test CA",
            "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out",
            str(request), "-subj", "/CN=pypi.org")
    extensions = folder / "server.ext"
    extensions.write_text(f"subjectAltName={names}\nbasicConstraints=CA:FALSE\n"
                          "extendedKeyUsage=serverAuth\n")
    openssl("x509", "-req", "-in", str(request), "-CA", str(ca), "-CAkey", str(ca_key),
            "-CAcreateserial", "-out", str(cert), "-days", "2", "-extfile", str(extensions))
    for path in folder.iterdir():
        path.chmod(0o644)
    return {"ca": ca, "cert": cert, "key": key}


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return f"sha256={digest.decode()}"


def _wheel() -> bytes:
    files = {
        "six.py": b'"""A stand-in from the test registry."""\nFROM = "the test registry"\n',
        "six-99.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: six\nVersion: 99.0\n",
        "six-99.0.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: lnk-test\n"
                                    b"Root-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = "".join(f"{name},{_record_hash(data)},{len(data)}\n"
                     for name, data in files.items()) + "six-99.0.dist-info/RECORD,,\n"
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as wheel:
        for name, data in files.items():
            wheel.writestr(name, data)
        wheel.writestr("six-99.0.dist-info/RECORD", record)
    return out.getvalue()


def _tarball() -> bytes:
    files = {
        "package/package.json": json.dumps({"name": "left-pad", "version": "99.0.0",
                                            "main": "index.js"}).encode(),
        "package/index.js": b"module.exports = (s, n, c = ' ') => "
                            b"String(s).padStart(n, c); // from the test registry\n",
    }
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


def build(root: Path) -> None:
    """The files the lab serves: /simple/six/, /packages/WHEEL, /left-pad and its
    tarball, the same tree for every name (each client asks only for its own paths)."""
    wheel, tarball = _wheel(), _tarball()
    (root / "packages").mkdir(parents=True)
    (root / "packages" / WHEEL).write_bytes(wheel)
    (root / "simple" / "six").mkdir(parents=True)
    sha = hashlib.sha256(wheel).hexdigest()
    (root / "simple" / "six" / "index.html").write_text(
        "<!DOCTYPE html><html><body>"
        f'<a href="https://files.pythonhosted.org/packages/{WHEEL}#sha256={sha}">{WHEEL}</a>'
        "</body></html>\n")
    (root / "tarballs").mkdir()
    (root / "tarballs" / TARBALL).write_bytes(tarball)
    integrity = "sha512-" + base64.b64encode(hashlib.sha512(tarball).digest()).decode()
    (root / "left-pad").write_text(json.dumps({
        "name": "left-pad", "dist-tags": {"latest": "99.0.0"},
        "versions": {"99.0.0": {
            "name": "left-pad", "version": "99.0.0", "main": "index.js",
            "dist": {"tarball": f"https://registry.npmjs.org/tarballs/{TARBALL}",
                     "shasum": hashlib.sha1(tarball).hexdigest(),  # npm's own field
                     "integrity": integrity}}}}))
    for path in [root, *root.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
