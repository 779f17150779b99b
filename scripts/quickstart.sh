#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# One command from a fresh Debian 12 checkout to a command running in the default
# sandbox: installs the dependencies, builds, and runs `id; hostname; ls /` inside.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

build=${AGENTJAIL_BUILD_DIR:-build}

if [[ "${AGENTJAIL_SKIP_SETUP:-0}" != 1 ]]; then
    # The agent clients (~1 GB from npm) are for the tests; scripts/test.sh installs them.
    scripts/setup.sh --no-clients
fi
scripts/build.sh

# The repository root is the workspace (the default policy binds the current
# directory read-write); HOME inside is an empty private tmpfs.
printf '\nquickstart.sh: %s\n\n' "$build/bin/agentjail -- sh -c 'id; hostname; ls /; cat /proc/self/uid_map'" >&2
exec "$build/bin/agentjail" -- sh -c 'id; hostname; ls /; cat /proc/self/uid_map'
