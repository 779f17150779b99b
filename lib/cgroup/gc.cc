// SPDX-License-Identifier: Apache-2.0
// Stale groups: an agentjail that was SIGKILLed cannot remove its cgroups. Their
// names carry its pid; once that pid is gone, the next run (or `agentjail gc`)
// kills whatever is still inside and removes them. Only names agentjail gives
// (agentjail-<pid>-<n>) are ever touched.
#include "cgroup/internal.hpp"

#include "util/strings.hpp"

#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>

namespace agentjail::cgroup {
namespace detail {

namespace {

bool pid_gone(pid_t pid) {
    // EPERM means it exists (another user's): not stale. Only ESRCH is proof.
    return ::kill(pid, 0) != 0 && errno == ESRCH;
}

std::vector<std::string> subdirs(const std::string& dir) {
    std::vector<std::string> out;
    DIR* d = ::opendir(dir.c_str());
    if (!d) return out;
    while (dirent* e = ::readdir(d)) {
        if (e->d_type != DT_DIR) continue;
        std::string n = e->d_name;
        if (n == "." || n == "..") continue;
        out.push_back(n);
    }
    ::closedir(d);
    return out;
}

void kill_group(const std::string& dir, bool v2) {
    if (v2 && exists(dir + "/cgroup.kill")) {
        (void)write_text(dir + "/cgroup.kill", "1");
        return;
    }
    // A v1 freezer group of a run killed while it was freezing stays frozen, and a
    // frozen process does not die of SIGKILL until thawed.
    if (exists(dir + "/freezer.state")) (void)write_text(dir + "/freezer.state", "THAWED");
    if (v2 && exists(dir + "/cgroup.freeze")) (void)write_text(dir + "/cgroup.freeze", "0");
    for (int round = 0; round < 20; ++round) {
        auto procs = read_procs(dir);
        if (procs.empty()) return;
        for (pid_t p : procs) ::kill(p, SIGKILL);
        pause_ms(2);
    }
}

// Removes dir and everything below it (children first), killing what is inside.
Result<void> remove_tree(const std::string& dir, bool v2) {
    for (const auto& sub : subdirs(dir))
        if (auto r = remove_tree(dir + "/" + sub, v2); !r) return r;
    kill_group(dir, v2);
    auto start = std::chrono::steady_clock::now();
    for (;;) {
        if (::rmdir(dir.c_str()) == 0 || errno == ENOENT) return {};
        int e = errno;
        if (e != EBUSY || std::chrono::steady_clock::now() - start > std::chrono::seconds(2))
            return Error(ErrorKind::setup, e, util::errno_text(e));
        pause_ms(5);
    }
}

}  // namespace

void gc_dir(const std::string& dir, bool v2, GcResult& out) {
    pid_t me = ::getpid();
    for (const auto& name : subdirs(dir)) {
        pid_t owner = owner_of(name);
        if (owner <= 0 || owner == me || !pid_gone(owner)) continue;
        std::string path = dir + "/" + name;
        if (auto r = remove_tree(path, v2); r)
            out.removed.push_back(path);
        else
            out.failed.push_back(path + ": " + r.error().message());
    }
}

std::vector<std::pair<std::string, bool>> gc_locations(const Host& host) {
    std::vector<std::pair<std::string, bool>> out;
    auto add = [&](const std::string& d, bool v2) {
        if (d.empty() || !exists(d)) return;
        for (const auto& o : out)
            if (o.first == d) return;
        out.emplace_back(d, v2);
    };
    if (host.v2) {
        add(host.v2->mount + "/" + v2_root_parent, true);
        std::string self = host.v2->self_dir();
        // Inside our own leaf (a delegated run moved us there): its parent holds the groups.
        if (!self.empty() && owner_of(self.substr(self.rfind('/') + 1)) > 0)
            self = self.substr(0, self.rfind('/'));
        add(self, true);
        // A delegated parent holds the groups made beside our own cgroup; only when it is
        // ours to write (never scan, let alone clean, a parent we were not handed).
        if (!self.empty() && self != host.v2->mount) {
            std::string parent = self.substr(0, self.rfind('/'));
            if (util::path_within(parent, host.v2->mount) && parent != host.v2->mount &&
                writable(parent, {"cgroup.procs", "cgroup.subtree_control"}))
                add(parent, true);
        }
    }
    for (const char* c : {"memory", "pids", "cpu", "cpuacct", "freezer"})
        if (const Hierarchy* h = host.v1_for(c)) add(h->self_dir(), false);
    return out;
}

}  // namespace detail

GcResult gc() {
    GcResult out;
    auto host = probe_host();
    if (!host) {
        out.failed.push_back(host.error().message());
        return out;
    }
    for (const auto& [dir, v2] : detail::gc_locations(*host)) detail::gc_dir(dir, v2, out);
    return out;
}

}  // namespace agentjail::cgroup
