// SPDX-License-Identifier: Apache-2.0
// What confines agentjail itself, when the kernel refuses it new namespaces: a
// seccomp filter it was started under (a container runtime's default profile refuses
// clone3 with ENOSYS and new user namespaces with EPERM), the container it is in,
// WSL, or the host's own switches (sysctls, AppArmor's userns restriction). The
// launcher's refusal and `agentjail doctor` both say from this what is missing and
// the fix for the place agentjail runs in, never a sysctl a container cannot set.
#pragma once

#include <string>

namespace agentjail::sys {

struct Confinement {
    bool seccomp_filter = false;  // prctl(PR_GET_SECCOMP) is 2: a filter of the caller's
    std::string container;        // "docker", "podman", "kubernetes", "lxc", a container=... value, or ""
    bool wsl = false;             // the kernel is WSL's
    int kernel_major = 0, kernel_minor = 0;
    long unprivileged_userns_clone = -1;  // -1: no such sysctl
    long max_user_namespaces = -1;
    long apparmor_restrict_userns = -1;
};

// Read from /proc, uname and the container runtimes' marker files.
Confinement confinement();

// Whether a seccomp filter this process runs under holds a notification listener
// already (WSL2's init installs one), so that the kernel refuses another (EBUSY):
// asked of a throwaway child that tries to load an allow-all filter with one. False
// at once, without the child, when this process runs under no filter.
bool seccomp_listener_taken();

// Why a new user namespace (clone3 or unshare) was refused with `err`, and what to
// do about it where agentjail runs: one sentence each, without a trailing period.
struct Refusal {
    std::string why;
    std::string fix;
};
Refusal namespace_refusal(const Confinement& c, int err);

}  // namespace agentjail::sys
