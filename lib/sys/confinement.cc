// SPDX-License-Identifier: Apache-2.0
// What confines agentjail itself: see confinement.hpp.
#include "sys/confinement.hpp"

#include "sys/syscalls.hpp"

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <sys/utsname.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace agentjail::sys {

namespace {

// A filter of the caller's is on this process (SECCOMP_MODE_FILTER): one system
// call, which every run's host facts ask (seccomp_listener_taken).
bool under_seccomp_filter() { return ::prctl(PR_GET_SECCOMP, 0, 0, 0, 0) == 2; }

long read_number(const char* path) {
    std::ifstream in(path);
    long v = -1;
    if (!(in >> v)) return -1;
    return v;
}

bool exists(const char* path) { return ::access(path, F_OK) == 0; }

// The container this process is in, from what the runtimes leave behind.
std::string container_kind() {
    // A pod first: its runtime may be Docker's, but the fix is the pod's.
    if (const char* k = std::getenv("KUBERNETES_SERVICE_HOST"); k != nullptr && *k != '\0') return "kubernetes";
    if (exists("/.dockerenv")) return "docker";
    if (exists("/run/.containerenv")) return "podman";
    if (const char* c = std::getenv("container"); c != nullptr && *c != '\0') return c;
    // PID 1's environment, where this process may read it (systemd-nspawn, LXC).
    std::ifstream env("/proc/1/environ", std::ios::binary);
    std::string entry;
    while (std::getline(env, entry, '\0'))
        if (entry.rfind("container=", 0) == 0 && entry.size() > 10) return entry.substr(10);
    return "";
}

}  // namespace

Confinement confinement() {
    Confinement c;
    c.seccomp_filter = under_seccomp_filter();
    c.container = container_kind();
    struct utsname u{};
    if (::uname(&u) == 0) {
        std::sscanf(u.release, "%d.%d", &c.kernel_major, &c.kernel_minor);
        const std::string release = u.release;
        c.wsl = release.find("microsoft") != std::string::npos || release.find("Microsoft") != std::string::npos;
    }
    c.unprivileged_userns_clone = read_number("/proc/sys/kernel/unprivileged_userns_clone");
    c.max_user_namespaces = read_number("/proc/sys/user/max_user_namespaces");
    c.apparmor_restrict_userns = read_number("/proc/sys/kernel/apparmor_restrict_unprivileged_userns");
    return c;
}

Refusal namespace_refusal(const Confinement& c, int err) {
    const bool old_kernel = c.kernel_major > 0 && (c.kernel_major < 5 || (c.kernel_major == 5 && c.kernel_minor < 3));
    if (err == ENOSYS && old_kernel)
        return {"clone3 is missing: agentjail needs Linux 5.3 or newer (this is " + std::to_string(c.kernel_major) +
                    "." + std::to_string(c.kernel_minor) + ")",
                "run it on a newer kernel"};
    const std::string where = c.container.empty() ? std::string() : " (this is a " + c.container + " container)";
    if (c.seccomp_filter && (err == ENOSYS || err == EPERM)) {
        std::string fix;
        if (c.container == "kubernetes")
            fix = "give the pod securityContext.seccompProfile.type: Unconfined (and, where AppArmor confines "
                  "it, appArmorProfile.type: Unconfined), or a profile that allows clone3 and "
                  "unshare(CLONE_NEWUSER)";
        else
            fix = "start the container with --security-opt seccomp=unconfined (or a seccomp profile that allows "
                  "clone3 and unshare(CLONE_NEWUSER); and --security-opt apparmor=unconfined where AppArmor "
                  "confines it), or run agentjail outside it";
        return {std::string(err == ENOSYS ? "clone3" : "a new user namespace") +
                    " is refused by the seccomp filter agentjail was started under" + where +
                    ": a container runtime's default profile does this",
                fix};
    }
    if (c.unprivileged_userns_clone == 0)
        return {"unprivileged user namespaces are off (kernel.unprivileged_userns_clone=0)",
                c.container.empty() ? "sudo sysctl -w kernel.unprivileged_userns_clone=1"
                                    : "set kernel.unprivileged_userns_clone=1 on the host (a container cannot)"};
    if (c.max_user_namespaces == 0)
        return {"user namespaces are off (user.max_user_namespaces=0)",
                c.container.empty() ? "sudo sysctl -w user.max_user_namespaces=15000"
                                    : "set user.max_user_namespaces on the host, or in the container runtime"};
    if (c.apparmor_restrict_userns == 1)
        return {"AppArmor gives unprivileged user namespaces no capabilities "
                "(kernel.apparmor_restrict_unprivileged_userns=1)",
                "run `agentjail doctor` for the AppArmor profile that lets agentjail make them"};
    if (!c.container.empty())
        return {"the container" + where + " refuses new namespaces",
                "allow user namespaces in the container (its seccomp profile, AppArmor, capabilities), or run "
                "agentjail outside it; `agentjail doctor` says more"};
    return {"cannot create the sandbox's namespaces (user namespaces disabled or restricted?)",
            "run `agentjail doctor` for the fix"};
}

bool seccomp_listener_taken() {
    if (!under_seccomp_filter()) return false;
    const long pid = raw_fork();
    if (pid < 0) return false;  // the launch will say what the kernel says
    if (pid == 0) {
        sock_filter allow = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
        sock_fprog prog{1, &allow};
        if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) ::_exit(2);
        const long fd = ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
        ::_exit(fd < 0 && errno == EBUSY ? 1 : 0);
    }
    int st = 0;
    while (::waitpid(static_cast<pid_t>(pid), &st, 0) < 0 && errno == EINTR) {
    }
    return WIFEXITED(st) && WEXITSTATUS(st) == 1;
}

}  // namespace agentjail::sys
