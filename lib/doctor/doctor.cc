// SPDX-License-Identifier: Apache-2.0
// Host diagnostics: probes user namespaces, AppArmor's userns restriction,
// seccomp, cgroups and their delegation, Landlock, the new mount API and pidfds.
#include "doctor/doctor.hpp"

#include "sys/confinement.hpp"
#include "doctor/workspace.hpp"

#include "sys/fd.hpp"
#include "sys/syscalls.hpp"
#include "util/strings.hpp"

#include <fcntl.h>
#include <linux/landlock.h>
#include <linux/magic.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif
#ifndef CGROUP_SUPER_MAGIC
#define CGROUP_SUPER_MAGIC 0x27e0eb
#endif
#ifndef TMPFS_MAGIC
#define TMPFS_MAGIC 0x01021994
#endif
#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

namespace agentjail::doctor {

namespace {

using Status = Check::Status;

std::optional<std::string> read_text(const std::string& path) {
    std::ifstream f(path);
    if (!f) return std::nullopt;
    std::stringstream ss;
    ss << f.rdbuf();
    std::string s = ss.str();
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    return s;
}

std::vector<std::string> words(const std::string& s) {
    std::vector<std::string> out;
    std::istringstream in(s);
    for (std::string w; in >> w;) out.push_back(w);
    return out;
}

bool contains(const std::vector<std::string>& v, const std::string& w) {
    for (const auto& x : v)
        if (x == w) return true;
    return false;
}

std::string join(const std::vector<std::string>& v, const char* sep = ", ") {
    std::string out;
    for (const auto& x : v) {
        if (!out.empty()) out += sep;
        out += x;
    }
    return out;
}

// Forks a child that does what the launcher does first: a new user namespace,
// then a new mount namespace inside it. The second step is what AppArmor's
// userns restriction (Ubuntu 23.10+) breaks: unshare(CLONE_NEWUSER) succeeds
// but the namespace holds no capabilities. Returns {step, errno}; step 0: fine.
struct ProbeResult {
    int step = 0;
    int err = 0;
};

ProbeResult probe_userns() {
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0) return {-1, errno};
    sys::UniqueFd rd(p[0]), wr(p[1]);
    // A raw clone: no atfork handlers, so this is safe in a multi-threaded host;
    // the child makes only system calls.
    long pid = sys::raw_fork();
    if (pid < 0) return {-1, static_cast<int>(-pid)};
    if (pid == 0) {
        int msg[2] = {0, 0};
        if (unshare(CLONE_NEWUSER) != 0) {
            msg[0] = 1;
            msg[1] = errno;
        } else if (unshare(CLONE_NEWNS) != 0) {
            msg[0] = 2;
            msg[1] = errno;
        }
        ssize_t n = write(wr.get(), msg, sizeof msg);
        _exit(n == sizeof msg ? 0 : 1);
    }
    wr.reset();
    int msg[2] = {-1, 0};
    ssize_t n;
    do {
        n = read(rd.get(), msg, sizeof msg);
    } while (n < 0 && errno == EINTR);
    int st = 0;
    while (waitpid(static_cast<pid_t>(pid), &st, 0) < 0 && errno == EINTR) {
    }
    if (n != sizeof msg) return {-1, EPIPE};
    return {msg[0], msg[1]};
}

// The host's switches come from sys::confinement (read once for the whole doctor),
// which the launcher's refusal reads too.
Check check_userns(const sys::Confinement& conf) {
    Check c{"user namespaces", Status::ok, "", ""};
    std::vector<std::string> facts;
    if (conf.unprivileged_userns_clone >= 0)
        facts.push_back("kernel.unprivileged_userns_clone=" + std::to_string(conf.unprivileged_userns_clone));
    if (conf.max_user_namespaces >= 0)
        facts.push_back("user.max_user_namespaces=" + std::to_string(conf.max_user_namespaces));

    ProbeResult r = probe_userns();
    if (r.step == 0) {
        facts.insert(facts.begin(), "a new user namespace with a mount namespace works");
        c.detail = join(facts, "; ");
        return c;
    }
    c.status = Status::fail;
    std::string what = r.step == 1   ? "unshare(CLONE_NEWUSER) failed: "
                       : r.step == 2 ? "unshare(CLONE_NEWNS) inside a new user namespace failed: "
                                     : "the probe could not run: ";
    facts.insert(facts.begin(), what + util::errno_text(r.err));
    c.detail = join(facts, "; ");
    // The launcher's own diagnosis (sys/confinement.hpp): a container's seccomp
    // profile, the host's sysctls, AppArmor, each with the fix for where this runs.
    if (!conf.container.empty()) c.detail += "; in a " + conf.container + " container";
    if (conf.seccomp_filter) c.detail += "; started under a seccomp filter";
    if (r.step == 2)
        c.fix = "see the AppArmor check below: the namespace is created without capabilities";
    else if (r.step == 1 && r.err == EINVAL && !conf.seccomp_filter)
        c.fix = "the kernel needs CONFIG_USER_NS=y";
    else
        c.fix = sys::namespace_refusal(conf, r.err).fix;
    return c;
}

std::string self_exe() {
    char buf[4096];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n <= 0) return "/usr/local/bin/agentjail";
    return std::string(buf, static_cast<size_t>(n));
}

Check check_apparmor(const sys::Confinement& conf) {
    Check c{"AppArmor userns restriction", Status::ok, "", ""};
    const long v = conf.apparmor_restrict_userns;
    if (v < 0) {
        c.detail = "kernel.apparmor_restrict_unprivileged_userns is not present";
        return c;
    }
    if (v == 0) {
        c.detail = "kernel.apparmor_restrict_unprivileged_userns=0";
        return c;
    }
    c.status = Status::warn;
    c.detail = "kernel.apparmor_restrict_unprivileged_userns=" + std::to_string(v) +
               ": unconfined programs get user namespaces without capabilities";
    // agentjail's Debian package installs its profile (packaging/apparmor/); loaded by
    // its postinst, unless AppArmor was off then.
    if (::access("/etc/apparmor.d/agentjail", R_OK) == 0) {
        const std::string exe = self_exe();
        c.fix = "sudo apparmor_parser -r /etc/apparmor.d/agentjail (the profile agentjail's package installed, "
                "for /usr/bin/agentjail" +
                (exe == "/usr/bin/agentjail" ? std::string() : "; this agentjail is " + exe + ", which it does not cover") +
                ")";
        return c;
    }
    c.fix =
        "sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0, or give agentjail "
        "an AppArmor profile: /etc/apparmor.d/agentjail containing 'abi <abi/4.0>, "
        "include <tunables/global> profile agentjail " +
        self_exe() +
        " flags=(unconfined) { userns, }' then sudo apparmor_parser -r /etc/apparmor.d/agentjail";
    return c;
}

Check check_seccomp() {
    Check c{"seccomp", Status::ok, "", ""};
    int mode = prctl(PR_GET_SECCOMP, 0, 0, 0, 0);
    if (mode < 0) {
        c.status = Status::fail;
        c.detail = "prctl(PR_GET_SECCOMP): " + util::errno_text(errno);
        c.fix = "the kernel needs CONFIG_SECCOMP=y and CONFIG_SECCOMP_FILTER=y";
        return c;
    }
    std::string mode_text = mode == 0
                                ? "not filtered now"
                                : "already under a filter (mode " + std::to_string(mode) + ")";
    auto actions = read_text("/proc/sys/kernel/seccomp/actions_avail");
    if (!actions) {
        c.status = Status::warn;
        c.detail =
            "prctl works (" + mode_text + "); /proc/sys/kernel/seccomp/actions_avail unreadable";
        return c;
    }
    auto have = words(*actions);
    std::vector<std::string> missing;
    for (const char* a : {"kill_process", "errno", "user_notif"})
        if (!contains(have, a)) missing.push_back(a);
    c.detail = "actions: " + *actions + " (" + mode_text + ")";
    if (!missing.empty()) {
        bool only_notif = missing.size() == 1 && missing[0] == "user_notif";
        c.status = only_notif ? Status::warn : Status::fail;
        c.detail += "; missing: " + join(missing);
        c.fix = only_notif
                    ? "denials cannot be reported to the supervisor; a newer kernel adds user_notif"
                    : "the kernel's seccomp lacks actions agentjail's filters use";
    }
    if (c.status == Status::ok && mode == 2 && sys::seccomp_listener_taken()) {
        c.status = Status::warn;
        c.detail += "; a filter of the ones above holds the notification listener (WSL2's init does): runs "
                    "refuse what the policy refuses without logging it, and refuse every Unix socket";
        c.fix = "run agentjail outside that filter for the log of refusals and the socket gate "
                "(docs/environments.md)";
    }
    return c;
}

// Where the cgroup v2 hierarchy is mounted ("" when nowhere) and the layout.
struct CgroupLayout {
    std::string kind;  // "v2", "hybrid", "v1", "none"
    std::string v2_root;
    std::vector<std::string> v1_controllers;
};

bool is_fs(const std::string& path, long magic) {
    struct statfs sf;
    return statfs(path.c_str(), &sf) == 0 && static_cast<long>(sf.f_type) == magic;
}

CgroupLayout cgroup_layout() {
    CgroupLayout l;
    const std::string root = "/sys/fs/cgroup";
    struct statfs sf;
    if (statfs(root.c_str(), &sf) != 0) {
        l.kind = "none";
        return l;
    }
    if (static_cast<long>(sf.f_type) == CGROUP2_SUPER_MAGIC) {
        l.kind = "v2";
        l.v2_root = root;
        return l;
    }
    if (static_cast<long>(sf.f_type) != TMPFS_MAGIC) {
        l.kind = "none";
        return l;
    }
    // A tmpfs holding one mount per v1 hierarchy, maybe with a v2 "unified" one.
    for (const char* sub : {"cpu", "cpuacct", "cpuset", "memory", "pids", "blkio", "devices",
                            "freezer", "io", "net_cls", "hugetlb", "perf_event"}) {
        if (is_fs(root + "/" + sub, CGROUP_SUPER_MAGIC)) l.v1_controllers.push_back(sub);
    }
    if (is_fs(root + "/unified", CGROUP2_SUPER_MAGIC)) l.v2_root = root + "/unified";
    if (!l.v1_controllers.empty())
        l.kind = l.v2_root.empty() ? "v1" : "hybrid";
    else
        l.kind = l.v2_root.empty() ? "none" : "v2";
    return l;
}

std::vector<std::string> missing_of(const std::vector<std::string>& have) {
    std::vector<std::string> missing;
    for (const char* c : {"memory", "cpu", "pids"})
        if (!contains(have, c)) missing.push_back(c);
    return missing;
}

Check check_cgroup_version(const CgroupLayout& l) {
    Check c{"cgroup version", Status::ok, "", ""};
    const std::string boot_fix =
        "boot with systemd.unified_cgroup_hierarchy=1 (cgroup v2 only) for memory/cpu/pids limits";
    if (l.kind == "none") {
        c.status = Status::warn;
        c.detail = "no cgroup filesystem at /sys/fs/cgroup";
        c.fix = "mount cgroup2 at /sys/fs/cgroup; resource limits are unavailable without it";
        return c;
    }
    if (l.kind == "v1") {
        c.status = Status::warn;
        c.detail = "cgroup v1 only (" + join(l.v1_controllers) + ")";
        c.fix = boot_fix;
        return c;
    }
    auto ctl = read_text(l.v2_root + "/cgroup.controllers");
    auto v2 = ctl ? words(*ctl) : std::vector<std::string>{};
    std::string v2_list = v2.empty() ? "no controllers" : "controllers: " + join(v2, " ");
    auto missing = missing_of(v2);
    if (l.kind == "hybrid") {
        c.status = Status::warn;
        c.detail = "hybrid: v1 hierarchies (" + join(l.v1_controllers) + ") and v2 at " +
                   l.v2_root + " with " + v2_list;
        if (!missing.empty()) c.detail += "; missing from v2: " + join(missing);
        c.fix = boot_fix;
        return c;
    }
    c.detail = "cgroup v2 at " + l.v2_root + ", " + v2_list;
    if (!missing.empty()) {
        c.status = Status::warn;
        c.detail += "; missing from v2: " + join(missing);
        c.fix = "enable the missing controllers in the kernel (or hand them back from v1)";
    }
    return c;
}

Check check_cgroup_delegation(const CgroupLayout& l) {
    Check c{"cgroup delegation", Status::ok, "", ""};
    if (l.v2_root.empty()) {
        c.status = Status::warn;
        c.detail = "no cgroup v2 hierarchy, nothing to delegate";
        c.fix = "limits need cgroup v2";
        return c;
    }
    // The caller's own cgroup: the "0::/path" line of /proc/self/cgroup.
    std::string rel;
    if (auto text = read_text("/proc/self/cgroup")) {
        std::istringstream in(*text);
        for (std::string line; std::getline(in, line);)
            if (util::starts_with(line, "0::")) rel = line.substr(3);
    }
    if (rel.empty()) {
        c.status = Status::warn;
        c.detail = "no cgroup v2 entry in /proc/self/cgroup";
        c.fix = "run agentjail from a session with a cgroup v2 cgroup";
        return c;
    }
    std::string dir = util::normalize_path(l.v2_root + "/" + rel);
    bool writable = access(dir.c_str(), W_OK) == 0 &&
                    access((dir + "/cgroup.procs").c_str(), W_OK) == 0 &&
                    access((dir + "/cgroup.subtree_control").c_str(), W_OK) == 0;
    auto ctl = read_text(dir + "/cgroup.controllers");
    auto have = ctl ? words(*ctl) : std::vector<std::string>{};
    auto missing = missing_of(have);
    c.detail = "own cgroup " + rel + (writable ? " is writable" : " is not writable") + "; " +
               (have.empty() ? "no controllers" : "controllers: " + join(have, " "));
    if (!missing.empty()) c.detail += "; not delegated: " + join(missing);
    if (!writable || !missing.empty()) {
        c.status = Status::warn;
        c.fix =
            "run inside a delegated scope: systemd-run --user --scope -p Delegate=yes agentjail "
            "...";
    }
    return c;
}

Check check_landlock() {
    Check c{"Landlock", Status::ok, "", ""};
    const long abi = sys::landlock_abi();
    if (abi >= 2) {
        // What runs get of it (docs/landlock.md).
        c.detail = "ABI " + std::to_string(abi) + ": every run restricts itself to the plan's writable places, a "
                   "second wall behind the mounts, proven by a probe";
        if (abi < 6) c.detail += "; signals and abstract sockets are not scoped (that is ABI 6, Linux 6.12)";
        return c;
    }
    c.status = Status::warn;
    if (abi == 1) {
        c.detail = "ABI 1: not used (it refuses every rename across directories); runs go on without it "
                   "and say so, [isolation] landlock = \"required\" refuses them";
        c.fix = "Linux 5.19 or newer has ABI 2";
        return c;
    }
    const int e = static_cast<int>(-abi);
    if (e == EOPNOTSUPP) {
        c.detail = "built into the kernel but disabled: runs go on without it and say so";
        c.fix = "add landlock to the lsm= kernel boot parameter";
    } else if (e == ENOSYS) {
        c.detail = "not in this kernel (ENOSYS): runs go on without it and say so";
        c.fix = "a kernel with CONFIG_SECURITY_LANDLOCK=y adds a second filesystem barrier";
    } else {
        c.detail = "landlock_create_ruleset: " + util::errno_text(e);
    }
    return c;
}

// A syscall that is present answers a bad call with EBADF/EINVAL/ENOENT; a
// missing one with ENOSYS; one a seccomp filter of our caller blocks usually
// with EPERM.
std::string probe_result(long r, int e) {
    if (r >= 0) return "present";
    if (e == ENOSYS) return "missing (ENOSYS)";
    if (e == EPERM) return "blocked (EPERM)";
    return "present";
}

Check check_mount_api() {
    Check c{"mount API", Status::ok, "", ""};
    long r1 = ::syscall(SYS_mount_setattr, -1, "", 0, nullptr, 0);
    int e1 = errno;
    long r2 = ::syscall(SYS_open_tree, -1, "", 0);
    int e2 = errno;
    if (r2 >= 0) ::close(static_cast<int>(r2));
    std::string ms = probe_result(r1, e1), ot = probe_result(r2, e2);
    c.detail = "mount_setattr " + ms + " (" + (r1 < 0 ? util::errno_name(e1) : "0") +
               "), open_tree " + ot + " (" + (r2 < 0 ? util::errno_name(e2) : "0") + ")";
    if (ms != "present" || ot != "present") {
        c.status = Status::fail;
        c.fix =
            "agentjail needs open_tree/move_mount/mount_setattr; a kernel with the new mount API "
            "(or a container runtime that allows these calls)";
    }
    return c;
}

Check check_pidfd() {
    Check c{"pidfd_open", Status::ok, "", ""};
    long fd = ::syscall(SYS_pidfd_open, getpid(), 0);
    if (fd >= 0) {
        ::close(static_cast<int>(fd));
        c.detail = "works";
        return c;
    }
    int e = errno;
    c.status = Status::fail;
    c.detail = "pidfd_open: " + util::errno_text(e);
    c.fix = "agentjail waits on the sandbox through a pidfd; a kernel with pidfd_open is needed";
    return c;
}

}  // namespace

const char* status_label(Check::Status s) {
    switch (s) {
    case Check::Status::ok: return "ok";
    case Check::Status::warn: return "warn";
    case Check::Status::fail: return "FAIL";
    }
    return "?";
}

std::vector<Check> run_checks(const sys::Confinement& env) {
    std::vector<Check> out;
    out.push_back(check_userns(env));
    out.push_back(check_apparmor(env));
    out.push_back(check_seccomp());
    CgroupLayout l = cgroup_layout();
    out.push_back(check_cgroup_version(l));
    out.push_back(check_cgroup_delegation(l));
    out.push_back(check_landlock());
    out.push_back(check_mount_api());
    out.push_back(check_pidfd());
    out.push_back(check_direct_mode());
    out.push_back(check_overlay());
    out.push_back(check_fuse());
    return out;
}

std::vector<Check> run_checks() { return run_checks(sys::confinement()); }

}  // namespace agentjail::doctor
