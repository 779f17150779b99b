# SPDX-License-Identifier: Apache-2.0
"""The Python binding's own PEP 517 / PEP 660 build backend: a wheel is the package's
files plus its metadata, so there is nothing to download to build one (`pip install
./python` works offline, in a venv or not). AGENTJAIL_WHEEL_LIBRARY=PATH puts a copy
of that libagentjail into the wheel (then tagged for this platform), which the
binding prefers to the system's."""

import base64
import hashlib
import io
import os
import re
import sys
import sysconfig
import tarfile
import zipfile

_HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_NAME = "agentjail"


def _project():
    """name, version, summary, license and requires-python from pyproject.toml (read
    with a pattern: tomllib is not in every Python this supports)."""
    with open(os.path.join(_HERE, "pyproject.toml"), encoding="utf-8") as f:
        text = f.read()
    project = text[text.index("[project]"):]

    def key(name):
        m = re.search(r'^%s\s*=\s*"([^"]*)"' % name, project, re.M)
        return m.group(1) if m else ""

    return {"version": key("version"), "summary": key("description"), "requires": key("requires-python")}


def _metadata():
    p = _project()
    with open(os.path.join(_HERE, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    return (
        "Metadata-Version: 2.1\n"
        "Name: %s\nVersion: %s\nSummary: %s\nLicense: Apache-2.0\nRequires-Python: %s\n"
        "Classifier: Operating System :: POSIX :: Linux\n"
        "Description-Content-Type: text/markdown\n\n%s" % (_NAME, p["version"], p["summary"], p["requires"], readme)
    )


def _bundled():
    path = os.environ.get("AGENTJAIL_WHEEL_LIBRARY", "")
    if path and not os.path.isfile(path):
        raise RuntimeError("AGENTJAIL_WHEEL_LIBRARY=%s: no such file" % path)
    return path


def _tag():
    if not _bundled():
        return "py3-none-any"
    return "py3-none-" + re.sub(r"[^A-Za-z0-9]", "_", sysconfig.get_platform())


def _wheel_text():
    return "Wheel-Version: 1.0\nGenerator: agentjail_build\nRoot-Is-Purelib: %s\nTag: %s\n" % (
        "false" if _bundled() else "true",
        _tag(),
    )


def _dist_info():
    return "%s-%s.dist-info" % (_NAME, _project()["version"])


def _package_files():
    """(name in the wheel, path) of the package's modules; never _installed.py (which
    cmake --install writes for its own copy) nor bytecode."""
    pkg = os.path.join(_HERE, _NAME)
    out = []
    for name in sorted(os.listdir(pkg)):
        if name.endswith(".py") and name != "_installed.py":
            out.append((_NAME + "/" + name, os.path.join(pkg, name)))
    lib = _bundled()
    if lib:
        soname = "libagentjail.so.%s" % _project()["version"].split(".")[0]
        out.append((_NAME + "/" + soname, lib))
    return out


def _record_line(name, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (name, digest, len(data))


def _write_wheel(wheel_directory, entries):
    """entries: (name, bytes); adds the dist-info and RECORD; returns the file name."""
    info = _dist_info()
    entries = list(entries) + [
        (info + "/METADATA", _metadata().encode()),
        (info + "/WHEEL", _wheel_text().encode()),
    ]
    record = [_record_line(n, d) for n, d in entries] + [info + "/RECORD,,"]
    entries.append((info + "/RECORD", ("\n".join(record) + "\n").encode()))
    filename = "%s-%s-%s.whl" % (_NAME, _project()["version"], _tag())
    with zipfile.ZipFile(os.path.join(wheel_directory, filename), "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in entries:
            zi = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            zi.external_attr = (0o755 if name.endswith(".so." + _project()["version"].split(".")[0]) else 0o644) << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(zi, data)
    return filename


def _read(path):
    with open(path, "rb") as f:
        return f.read()


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    info = os.path.join(metadata_directory, _dist_info())
    os.makedirs(info, exist_ok=True)
    with open(os.path.join(info, "METADATA"), "w", encoding="utf-8") as f:
        f.write(_metadata())
    with open(os.path.join(info, "WHEEL"), "w", encoding="utf-8") as f:
        f.write(_wheel_text())
    return _dist_info()


prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _write_wheel(wheel_directory, [(n, _read(p)) for n, p in _package_files()])


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    # A .pth naming this directory: the checkout's modules are imported in place.
    return _write_wheel(wheel_directory, [("agentjail_editable.pth", (_HERE + "\n").encode())])


def build_sdist(sdist_directory, config_settings=None):
    base = "%s-%s" % (_NAME, _project()["version"])
    filename = base + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, filename), "w:gz", format=tarfile.PAX_FORMAT) as t:
        for rel in ["pyproject.toml", "README.md", "build_backend/agentjail_build.py"] + [
            n for n, _ in _package_files() if n.endswith(".py")
        ]:
            t.add(os.path.join(_HERE, rel), arcname=base + "/" + rel)
        info = tarfile.TarInfo(base + "/PKG-INFO")
        data = _metadata().encode()
        info.size = len(data)
        t.addfile(info, io.BytesIO(data))
    return filename


if __name__ == "__main__":
    sys.exit("agentjail_build is a build backend: use pip install ./python")
