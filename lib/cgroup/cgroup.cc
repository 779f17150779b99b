// SPDX-License-Identifier: Apache-2.0
// The cgroup front: reading this host's hierarchies (mountinfo, /proc/self/cgroup),
// choosing the v2 or v1 driver, the fail-closed message, cgroupfs file access.
#include "cgroup/internal.hpp"

#include "util/strings.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <ctime>

namespace agentjail::cgroup {

const char* kind_name(Kind k) {
    switch (k) {
        case Kind::v2: return "v2";
        case Kind::v2_delegated: return "v2-delegated";
        case Kind::v1: return "v1";
    }
    return "?";
}

const char* via_name(Via v) {
    switch (v) {
        case Via::root_slice: return "agentjail.slice";
        case Via::own_cgroup: return "own-cgroup";
        case Via::parent_cgroup: return "parent-cgroup";
        case Via::systemd_scope: return "systemd-scope";
        case Via::given_cgroup: return "given-cgroup";
    }
    return "?";
}

std::string Hierarchy::dir_of(const std::string& cgroup) const {
    if (mount.empty() || cgroup.empty() || cgroup[0] != '/') return {};
    if (root == "/" || root.empty()) return cgroup == "/" ? mount : mount + cgroup;
    if (cgroup == root) return mount;
    if (util::starts_with(cgroup, root) && cgroup.size() > root.size() && cgroup[root.size()] == '/')
        return mount + cgroup.substr(root.size());
    return {};
}

std::string Hierarchy::self_dir() const { return dir_of(self); }

bool Hierarchy::has(const std::string& controller) const {
    std::string list = controllers;
    std::replace(list.begin(), list.end(), ',', ' ');
    for (const auto& c : detail::words(list))
        if (c == controller) return true;
    return false;
}

const Hierarchy* Host::v1_for(const std::string& controller) const {
    for (const auto& h : v1)
        if (h.has(controller)) return &h;
    return nullptr;
}

namespace {

// mountinfo escapes space, tab, newline and backslash as \ooo.
std::string unescape(std::string_view s) {
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '\\' && s.size() - i >= 4 && s[i + 1] >= '0' && s[i + 1] <= '3') {
            out += static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
            i += 3;
        } else {
            out += s[i];
        }
    }
    return out;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
    std::vector<std::string_view> out;
    size_t i = 0;
    while (i <= s.size()) {
        size_t j = s.find(sep, i);
        if (j == std::string_view::npos) j = s.size();
        out.push_back(s.substr(i, j - i));
        i = j + 1;
    }
    return out;
}

bool same_set(std::string_view controllers, std::string_view superopts) {
    // Every controller of the /proc/self/cgroup line must be a mount option.
    auto opts = split(superopts, ',');
    for (auto c : split(controllers, ','))
        if (std::find(opts.begin(), opts.end(), c) == opts.end()) return false;
    return true;
}

}  // namespace

Host parse_host(const std::string& mountinfo, const std::string& proc_self_cgroup) {
    struct Mount {
        std::string root, point, fstype, superopts;
    };
    std::vector<Mount> mounts;
    for (auto line : split(mountinfo, '\n')) {
        if (line.empty()) continue;
        auto f = split(line, ' ');
        auto dash = std::find(f.begin(), f.end(), std::string_view("-"));
        if (f.size() < 5 || dash == f.end() || dash + 3 > f.end()) continue;
        Mount m{unescape(f[3]), unescape(f[4]), std::string(*(dash + 1)), std::string(*(dash + 3))};
        if (m.fstype == "cgroup" || m.fstype == "cgroup2") mounts.push_back(std::move(m));
    }
    Host host;
    for (auto line : split(proc_self_cgroup, '\n')) {
        if (line.empty()) continue;
        size_t a = line.find(':');
        size_t b = a == std::string_view::npos ? a : line.find(':', a + 1);
        if (b == std::string_view::npos) continue;
        std::string_view id = line.substr(0, a), ctrls = line.substr(a + 1, b - a - 1);
        std::string path(line.substr(b + 1));
        Hierarchy h;
        h.self = path;
        if (id == "0" && ctrls.empty()) {
            for (const auto& m : mounts)
                if (m.fstype == "cgroup2") {
                    h.mount = m.point;
                    h.root = m.root;
                    // Prefer a mount that shows our own cgroup (a bind of a subtree may not).
                    if (!h.self_dir().empty()) break;
                }
            if (!h.mount.empty()) host.v2 = h;
            continue;
        }
        h.controllers = std::string(ctrls);
        for (const auto& m : mounts)
            if (m.fstype == "cgroup" && same_set(ctrls, m.superopts)) {
                h.mount = m.point;
                h.root = m.root;
                if (!h.self_dir().empty()) break;
            }
        if (!h.mount.empty()) host.v1.push_back(std::move(h));
    }
    return host;
}

Result<Host> probe_host() {
    auto mi = detail::read_text("/proc/self/mountinfo");
    auto cg = detail::read_text("/proc/self/cgroup");
    if (!mi || !cg)
        return Error(ErrorKind::unsupported, errno,
                     "cannot read /proc/self/mountinfo or /proc/self/cgroup: " + util::errno_text(errno));
    return parse_host(*mi, *cg);
}

pid_t owner_of(const std::string& name) {
    constexpr std::string_view prefix = "agentjail-";
    if (!util::starts_with(name, prefix)) return -1;
    size_t i = prefix.size();
    long pid = 0;
    size_t start = i;
    while (i < name.size() && name[i] >= '0' && name[i] <= '9' && i - start < 10) {
        pid = pid * 10 + (name[i] - '0');
        ++i;
    }
    if (i == start || i >= name.size() || name[i] != '-' || i + 1 == name.size()) return -1;
    for (size_t j = i + 1; j < name.size(); ++j)
        if (!((name[j] >= '0' && name[j] <= '9') || (name[j] >= 'a' && name[j] <= 'z'))) return -1;
    if (pid <= 0 || pid > 0x3fffffff) return -1;
    return static_cast<pid_t>(pid);
}

namespace detail {

std::optional<std::string> read_text(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return std::nullopt;
    std::string out;
    char buf[4096];
    for (;;) {
        ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            if (n < 0) {
                int e = errno;
                ::close(fd);
                errno = e;
                return std::nullopt;
            }
            break;
        }
        out.append(buf, static_cast<size_t>(n));
        if (out.size() > (1u << 22)) break;
    }
    ::close(fd);
    return out;
}

Result<void> write_text(const std::string& path, const std::string& text) {
    int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        return Error(ErrorKind::setup, e, "open " + path + ": " + util::errno_text(e));
    }
    ssize_t n;
    do {
        n = ::write(fd, text.data(), text.size());
    } while (n < 0 && errno == EINTR);
    int e = errno;
    ::close(fd);
    if (n != static_cast<ssize_t>(text.size())) {
        if (n >= 0) e = EIO;
        std::string shown = text;
        while (!shown.empty() && shown.back() == '\n') shown.pop_back();
        return Error(ErrorKind::setup, e,
                     "write '" + shown + "' to " + path + ": " + util::errno_text(e));
    }
    return {};
}

bool exists(const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0;
}

bool writable(const std::string& dir, const std::vector<std::string>& files) {
    if (::access(dir.c_str(), W_OK | X_OK) != 0) return false;
    for (const auto& f : files)
        if (::access((dir + "/" + f).c_str(), W_OK) != 0) return false;
    return true;
}

std::vector<pid_t> read_procs(const std::string& dir) {
    std::vector<pid_t> out;
    auto t = read_text(dir + "/cgroup.procs");
    if (!t) return out;
    for (const auto& w : words(*t)) {
        auto v = single_value(w);
        if (v && *v > 0) out.push_back(static_cast<pid_t>(*v));
    }
    return out;
}

void pause_ms(int ms) {
    timespec ts{ms / 1000, (ms % 1000) * 1000000L};
    while (::nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

std::string next_name() {
    static std::atomic<unsigned> counter{0};
    return "agentjail-" + std::to_string(::getpid()) + "-" + std::to_string(++counter);
}

std::string self_leaf_name() { return "agentjail-" + std::to_string(::getpid()) + "-self"; }

std::string placed_parent(const Hierarchy& h, const limits::Settings& s, std::string& why_not) {
    if (s.placement == CgroupPlacement::caller) {
        std::string dir = h.self_dir();
        if (dir.empty()) why_not = "this process's cgroup (" + h.self + ") is not visible under " + h.mount;
        return dir;
    }
    // A path as /proc/self/cgroup shows it: absolute, no "." or ".." component, so it
    // can only name a group inside this hierarchy.
    const std::string& p = s.parent;
    bool ok = !p.empty() && p[0] == '/' && p.find("//") == std::string::npos && p.find('\0') == std::string::npos;
    for (size_t at = 0; ok && at < p.size();) {
        size_t next = p.find('/', at + 1);
        std::string part = p.substr(at + 1, next == std::string::npos ? std::string::npos : next - at - 1);
        if (part == "." || part == "..") ok = false;
        at = next == std::string::npos ? p.size() : next;
    }
    if (!ok) {
        why_not = "cgroup parent '" + p + "' is not a cgroup path (absolute, as /proc/self/cgroup shows it, without . or ..)";
        return {};
    }
    std::string dir = h.dir_of(p == "/" ? p : (p.back() == '/' ? p.substr(0, p.size() - 1) : p));
    struct stat st {};
    if (dir.empty())
        why_not = "cgroup parent " + p + " is not visible under " + h.mount;
    else if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
        why_not = "cgroup parent " + dir + " does not exist";
    else
        return dir;
    return {};
}

std::vector<std::string> required_controllers(const limits::Settings& s) {
    std::vector<std::string> out;
    if (s.memory_bytes || s.swap_bytes) out.emplace_back("memory");
    if (s.cpus) out.emplace_back("cpu");
    if (s.pids) out.emplace_back("pids");
    return out;
}

}  // namespace detail

Result<std::unique_ptr<Group>> create(const limits::Settings& settings) {
    auto host = probe_host();
    if (!host) return std::move(host).error();
    std::vector<std::string> reasons;
    std::string why;
    // v2 first: a controller lives in one hierarchy only, and where the v2 one has
    // what we need it is the better interface (atomic entry, cgroup.kill, oom.group).
    if (host->v2) {
        auto g = detail::create_v2(*host, settings, why);
        if (!g) return std::move(g).error();
        if (*g) return std::move(*g);
        reasons.push_back(why);
    } else {
        reasons.emplace_back("no cgroup v2 hierarchy is mounted");
    }
    why.clear();
    auto g = detail::create_v1(*host, settings, why);
    if (!g) return std::move(g).error();
    if (*g) return std::move(*g);
    reasons.push_back(why);

    std::string asked;
    for (const auto& c : detail::required_controllers(settings)) asked += (asked.empty() ? "" : ", ") + c;
    std::string msg = "the limits asked for (" + asked + ") need a cgroup, and none can be made here: ";
    for (size_t i = 0; i < reasons.size(); ++i) msg += (i ? "; " : "") + reasons[i];
    if (settings.placement != CgroupPlacement::automatic) {
        msg += ". The run's cgroup goes only below " +
               std::string(settings.placement == CgroupPlacement::caller ? "the caller's own cgroup"
                                                                        : "the cgroup parent given") +
               ": name a cgroup that passes these controllers down as the parent, choose the automatic "
               "placement (agentjail.slice as root, a delegated cgroup or a systemd scope as a user), or "
               "set `[limits] allow_degraded = true` to run with rlimits only";
        return Error(ErrorKind::unsupported, EPERM, msg);
    }
    msg += ". To fix: run as root, or start agentjail in a delegated cgroup v2 subtree "
           "(systemd-run --user --scope -p Delegate=yes agentjail ...), or have a systemd user "
           "manager running that agentjail can ask for one (log in, or loginctl enable-linger), or set "
           "`[limits] allow_degraded = true` in the policy to run with rlimits only";
    return Error(ErrorKind::unsupported, EPERM, msg);
}

}  // namespace agentjail::cgroup
