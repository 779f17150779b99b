#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs agentjail's build, test and benchmark dependencies from Debian 12 packages,
# and does nothing (no apt, no root needed) when they are all present already.
#
# Usage: scripts/setup.sh [--build-only] [--lint] [--bench] [--no-vm] [--no-clients] [--check]
#   --build-only  only what building the command and the library needs (scripts/install.sh)
#   --lint        also install clang-format and clang-tidy (for scripts/lint.sh)
#   --bench       also install the peers bench/ compares with (firejail; srt from npm)
#   --no-vm       leave out the QEMU guest's packages (the vm tests then skip, saying why)
#   --no-clients  leave out the real agent clients from npm (the Agents tests then skip)
#   --check       only report what is missing; exit 1 if anything is
#   AGENTJAIL_CLIENTS_DIR  where the agent clients go (default: .clients in the checkout)
set -euo pipefail

# What cmake needs to configure and build the library and the command (a user's
# install, scripts/install.sh; build-essential brings dpkg-dev, whose dpkg-shlibdeps
# the .deb's Depends come from).
user_pkgs=(build-essential cmake ninja-build pkg-config libseccomp-dev libcap-dev
    libboost-program-options-dev libboost-dev libfmt-dev libtomlplusplus-dev
    nlohmann-json3-dev libssl-dev libsystemd-dev)
# And for a developer: the tests' frameworks, ccache, git.
build_pkgs=("${user_pkgs[@]}" ccache libgtest-dev libgmock-dev git ca-certificates)
# What the test tiers and the benchmark run: hyperfine and bwrap (bench peers),
# unshare/runuser (util-linux), ps (procps), useradd/userdel (passwd) for the
# unprivileged pass of scripts/test.sh, capsh (libcap2-bin), python3; curl and
# iproute2 (ip) for the network tests and bench/network.sh; ssh, sshd and OpenBSD netcat
# for the git-over-SSH test (a throwaway sshd on loopback, reached through SOCKS5).
# python3-venv: the packaging test installs the Python binding with pip into a venv;
# man-db, zsh and fish check the man pages and the completions.
test_pkgs=(hyperfine bubblewrap util-linux procps passwd libcap2-bin python3 python3-venv curl
    iproute2 openssh-client openssh-server netcat-openbsd man-db zsh fish lintian)
# The slurm tier (tests/slurm/): a throwaway Slurm from Debian's slurm-wlm (slurmctld,
# slurmd, the client commands) with a munged of its own; libslurm-dev's <slurm/spank.h>
# is what the SPANK plugin (slurm/) builds against. python3-yaml checks the Kubernetes
# manifests of examples/kubernetes/.
slurm_pkgs=(slurm-wlm munge libslurm-dev python3-yaml)
# The sanitizer and fuzz tier of scripts/test.sh (scripts/fuzz.sh): clang with its
# ASan, UBSan and libFuzzer runtimes (libclang-rt), and http_parser, which the
# differential fuzz target holds the proxy's request-head parser against.
fuzz_pkgs=(clang-14 libclang-rt-14-dev libhttp-parser-dev)
lint_pkgs=(clang-format clang-tidy)
# What tests/vm/run-in-vm.sh boots for the real cgroup v2 tests (label vm): the host's
# cgroup v2 hierarchy has no controllers, so those tests run in a QEMU guest on Debian's
# kernel; busybox-static is the guest's init, xz-utils unpacks the kernel's vmlinux once;
# systemd gives the guest a real `systemd --user` manager (the guest shares the host's
# /usr; nothing of it runs on the host) for the test of the systemd-scope cgroup.
vm_pkgs=(qemu-system-x86 linux-image-amd64 busybox-static xz-utils systemd)

# What bench/ compares against, beyond the test packages (--bench): firejail for
# bench/startup.sh; socat and ripgrep for sandbox-runtime (`srt`, installed from npm)
# in bench/network.sh, and Debian's nodejs and npm where no npm is installed (a
# NodeSource nodejs brings its own npm and conflicts with Debian's); tmux, the terminal
# bench/tty.sh times a large output in.
bench_pkgs=(firejail socat ripgrep tmux)

# The real agent clients the Agents tests (tests/integration/test_agents.cc) and
# bench/agents.sh run, pinned, from npm; sandbox-runtime is the benchmark's peer and
# the SDK is what the test agent is written against. They go into a prefix of the
# checkout's own (.clients/node_modules, ignored by git), not into npm's global one:
# the tests then run exactly these versions whatever `claude` a developer has on PATH,
# setup never replaces that one, and installing needs no root. The prefix is made
# readable by everyone, so the unprivileged test pass can run the clients too; the
# tests bind it read-only into the sandbox.
client_pkgs=(@anthropic-ai/claude-code@2.1.332 @openai/codex@0.171.0 @google/gemini-cli@0.61.0
    @anthropic-ai/sandbox-runtime@0.0.83 @anthropic-ai/sdk@1.15.0)
clients_dir=${AGENTJAIL_CLIENTS_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)/.clients}

say() { printf 'setup.sh: %s\n' "$*" >&2; }

check_only=0
with_bench=0
with_vm=1
with_clients=1
pkgs=("${build_pkgs[@]}" "${test_pkgs[@]}" "${slurm_pkgs[@]}" "${fuzz_pkgs[@]}")
for arg in "$@"; do
    case "$arg" in
        --build-only)
            pkgs=("${user_pkgs[@]}")
            with_vm=0 with_clients=0
            ;;
        --lint) pkgs+=("${lint_pkgs[@]}") ;;
        --bench)
            pkgs+=("${bench_pkgs[@]}")
            command -v npm >/dev/null 2>&1 || pkgs+=(nodejs npm)
            with_bench=1
            ;;
        --no-vm) with_vm=0 ;;
        --no-clients) with_clients=0 ;;
        --check) check_only=1 ;;
        -h | --help)
            sed -n '3,12s/^# \{0,1\}//p' "$0"
            exit 0
            ;;
        *)
            say "unknown argument: $arg (try --help)"
            exit 2
            ;;
    esac
done

((with_vm == 0)) || pkgs+=("${vm_pkgs[@]}")
# npm installs the clients; Debian's own nodejs and npm where no npm is installed (a
# NodeSource nodejs brings its own npm and conflicts with Debian's).
if ((with_clients)) && ! command -v npm >/dev/null 2>&1; then
    pkgs+=(nodejs npm)
fi

if ! command -v dpkg-query >/dev/null 2>&1; then
    say "this script knows Debian 12 (dpkg/apt) only; install the equivalents of:"
    say "  ${pkgs[*]}"
    say "or set AGENTJAIL_SKIP_SETUP=1 to let scripts/build.sh and scripts/test.sh skip this step"
    exit 1
fi

missing=()
for p in "${pkgs[@]}"; do
    # "install ok installed" is the only state in which the files are really there.
    if [[ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" != "install ok installed" ]]; then
        missing+=("$p")
    fi
done

# sandbox-runtime is an npm package, not a Debian one (--bench only).
install_srt() {
    ((with_bench)) || return 0
    command -v srt >/dev/null 2>&1 && return 0
    if ((check_only)); then
        say "missing: srt (npm install -g @anthropic-ai/sandbox-runtime)"
        return 1
    fi
    if ((EUID != 0)); then
        say "run as root (sudo $0 --bench) or: npm install -g @anthropic-ai/sandbox-runtime"
        return 1
    fi
    say "npm install -g @anthropic-ai/sandbox-runtime"
    npm install -g --no-fund --no-audit @anthropic-ai/sandbox-runtime
}

# The pinned clients (see client_pkgs): "NAME@VERSION" lines for those missing or at
# another version, read from each package's own package.json.
missing_clients() {
    local spec name want have
    for spec in "${client_pkgs[@]}"; do
        name=${spec%@*} want=${spec##*@}
        have=$(sed -n 's/^  "version": "\(.*\)",\{0,1\}$/\1/p' "$clients_dir/node_modules/$name/package.json" 2>/dev/null | head -n1 || true)
        [[ "$have" == "$want" ]] || echo "$spec"
    done
    # Claude Code's postinstall puts the platform's binary in place of a stub.
    [[ -x "$clients_dir/node_modules/.bin/claude" && -s "$clients_dir/node_modules/@anthropic-ai/claude-code/bin/claude.exe" ]] ||
        echo "@anthropic-ai/claude-code@2.1.332 (its binary)"
}

install_clients() {
    ((with_clients)) || return 0
    local -a todo
    mapfile -t todo < <(missing_clients)
    if ((${#todo[@]} == 0)); then
        say "agent clients present in $clients_dir"
        return 0
    fi
    if ((check_only)); then
        say "missing agent clients: ${todo[*]} (in $clients_dir)"
        return 1
    fi
    if ! command -v npm >/dev/null 2>&1; then
        say "npm is missing: install nodejs and npm, or run with --no-clients"
        return 1
    fi
    say "npm install ${client_pkgs[*]} into $clients_dir"
    mkdir -p "$clients_dir"
    # All at once: npm prunes what a later --no-save install does not name. --prefix
    # with no package.json there: npm writes none, nothing of it is committed.
    (cd "$clients_dir" && npm install --prefix "$clients_dir" --no-save --no-package-lock --no-fund \
        --no-audit --loglevel=error "${client_pkgs[@]}" </dev/null)
    chmod -R a+rX "$clients_dir"
    mapfile -t todo < <(missing_clients)
    if ((${#todo[@]} > 0)); then
        say "npm finished but these are still missing: ${todo[*]}"
        return 1
    fi
    say "installed the agent clients into $clients_dir"
}

# A client that could not be installed (npm unreachable, say) fails only --check: the
# Agents tests skip, naming this script, and every other tier still runs.
client_failed() {
    if ((check_only)); then
        rc=1
    else
        say "warning: the agent clients are not installed; the Agents tests will skip"
    fi
}

if ((${#missing[@]} == 0)); then
    say "all ${#pkgs[@]} packages present, nothing to install"
    rc=0
    install_srt || rc=1
    install_clients || client_failed
    exit "$rc"
fi

say "missing: ${missing[*]}"
if ((check_only)); then
    exit 1
fi
if ((EUID != 0)); then
    say "run as root (sudo $0) or install: apt-get install -y --no-install-recommends ${missing[*]}"
    exit 1
fi

export DEBIAN_FRONTEND=noninteractive
say "apt-get update"
apt-get update -q
say "apt-get install ${missing[*]}"
# INITRD=No: the kernel's postinst would build a 31 MB initrd nothing boots (the vm
# tests bring their own initramfs); skipping it saves about 30 s.
INITRD=No apt-get install -y -q --no-install-recommends "${missing[@]}" </dev/null
say "installed ${#missing[@]} packages"
# The daemons some of them bring (sshd, slurmctld, slurmd, munged) are for nothing
# here: the tests start throwaway ones of their own. Those this run installed are
# stopped and not started at boot; a daemon the machine had before is left alone.
declare -A daemon_units=([openssh-server]="ssh.service ssh.socket"
    [slurm-wlm]="slurmctld.service slurmd.service" [munge]="munge.service")
if command -v systemctl >/dev/null 2>&1 && [[ -d /run/systemd/system ]]; then
    for pkg in "${missing[@]}"; do
        for unit in ${daemon_units[$pkg]:-}; do
            systemctl cat "$unit" >/dev/null 2>&1 || continue
            systemctl disable --now "$unit" >/dev/null 2>&1 || true
            say "disabled $unit (installed for the tests, which start their own)"
        done
    done
fi
rc=0
install_srt || rc=1
install_clients || client_failed
exit "$rc"
