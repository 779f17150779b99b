#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# `pip install ./python` into a fresh venv with no index (offline), as a user would,
# and the three ways the binding finds the library (issue 28, item 7): the path in
# AGENTJAIL_LIBRARY; a wheel that carries its own copy (AGENTJAIL_WHEEL_LIBRARY at
# build); and, with neither, a clear ImportError naming both. consumer.py checks the
# version, which library was loaded, and a real run each time.
# Usage: python_venv.sh SOURCE_DIR LIBRARY VERSION
set -euo pipefail
source_dir=$1 library=$2 version=$3
tmp=$(mktemp -d /tmp/aj-pyvenv.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
export PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 PYTHONDONTWRITEBYTECODE=1
unset AGENTJAIL_LIBRARY AGENTJAIL_WHEEL_LIBRARY
if ! python3 -m venv "$tmp/venv" >"$tmp/venv.log" 2>&1; then
    cat "$tmp/venv.log" >&2
    echo "python_venv.sh: python3 -m venv failed (scripts/setup.sh installs python3-venv)" >&2
    exit 1
fi
py=$tmp/venv/bin/python
site=$("$py" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')

echo "== pip install ./python (no index)"
"$tmp/venv/bin/pip" install -q "$source_dir/python"
echo "== AGENTJAIL_LIBRARY"
AJ_PREFIX=$site AJ_LIBRARY_IN=$(dirname "$library") AGENTJAIL_LIBRARY=$library \
    "$py" "$source_dir/tests/packaging/consumer.py" "$version"

echo "== neither: the error says what to do"
if ldconfig -p 2>/dev/null | grep -q "libagentjail.so.${version%%.*} "; then
    echo "skipped: a libagentjail is installed system-wide here, so the loader finds one"
else
    if "$py" -c 'import agentjail' 2>"$tmp/err"; then
        echo "import agentjail worked with no library to find" >&2
        exit 1
    fi
    grep -q "ImportError: agentjail: cannot load libagentjail.so" "$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
    grep -q "AGENTJAIL_LIBRARY" "$tmp/err" || { cat "$tmp/err" >&2; exit 1; }
fi

echo "== a wheel carrying the library"
AGENTJAIL_WHEEL_LIBRARY=$library "$tmp/venv/bin/pip" install -q --force-reinstall "$source_dir/python"
[[ -f "$site/agentjail/libagentjail.so.${version%%.*}" ]] || { echo "the wheel did not carry the library" >&2; exit 1; }
AJ_PREFIX=$site AJ_LIBRARY_IN=$site/agentjail "$py" "$source_dir/tests/packaging/consumer.py" "$version"

echo "== pip uninstall leaves nothing"
"$tmp/venv/bin/pip" uninstall -q -y agentjail
if [[ -e "$site/agentjail" ]]; then
    echo "left behind: $(find "$site/agentjail")" >&2
    exit 1
fi
echo "python_venv.sh: ok"
