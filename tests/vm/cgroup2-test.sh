#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The CTest test vm.cgroup2: boots the test guest once and runs the cgroup v2 test
# group in it (guest-suite.sh), or skips (status 77) saying why when the guest cannot
# boot here.
#
# Usage: tests/vm/cgroup2-test.sh SOURCE_DIR BUILD_DIR
#   AGENTJAIL_VM=0             skip on purpose
#   AGENTJAIL_VM_TESTS         ctest -R regex of the tests run in the guest
#   AGENTJAIL_VM_LABELS        ctest -L regex they must match too
#   AGENTJAIL_VM_TEST_TIMEOUT  seconds per test in the guest
#   AGENTJAIL_VM_TIMEOUT       seconds for the whole guest run
#   AGENTJAIL_VM_SLURM=0       leave out the Slurm checks (guest-slurm.sh)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
src=$(cd "${1:?usage: cgroup2-test.sh SOURCE_DIR BUILD_DIR}" && pwd -P)
build=$(cd "${2:?usage: cgroup2-test.sh SOURCE_DIR BUILD_DIR}" && pwd -P)
skip=77

if [[ "${AGENTJAIL_VM:-1}" == 0 ]]; then
    echo "vm.cgroup2: skipped: AGENTJAIL_VM=0"
    exit "$skip"
fi
if ! why=$("$here/run-in-vm.sh" --check); then
    echo "vm.cgroup2: skipped: the test guest cannot boot on this machine:"
    printf '%s\n' "$why" | sed 's/^/    /'
    echo "    (scripts/setup.sh installs qemu-system-x86, linux-image-amd64 and busybox-static)"
    exit "$skip"
fi
echo "vm.cgroup2: $why"

args=()
# The build tree holds absolute paths to itself and to the sources: share both at
# their own paths (the build is usually inside the source tree).
[[ "$build/" == "$src/"* ]] || args+=(--share "$build")
for v in AGENTJAIL_VM_TESTS AGENTJAIL_VM_LABELS AGENTJAIL_VM_TEST_TIMEOUT AGENTJAIL_VM_SLURM CI; do
    [[ -z "${!v+x}" ]] || args+=(--env "$v")
done
exec "$here/run-in-vm.sh" --timeout "${AGENTJAIL_VM_TIMEOUT:-1200}" "${args[@]}" --cwd "$build" \
    "$src" "$here/guest-suite.sh" "$build"
