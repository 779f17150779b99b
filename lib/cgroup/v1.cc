// SPDX-License-Identifier: Apache-2.0
// The cgroup v1 driver, for hosts that keep memory, pids and cpu in v1 hierarchies:
// one agentjail-<pid>-<n> group under the caller's own cgroup in each of them (so
// the caller's own limits still hold over the sandbox), the init attached before it
// runs anything, killed through the freezer, removed once empty.
#include "cgroup/internal.hpp"

#include "sys/fd.hpp"
#include "util/strings.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>

namespace agentjail::cgroup::detail {

namespace {

// The hierarchies a run uses: the three that hold limits, cpuacct for the cpu times
// and freezer to stop every process before killing it.
constexpr const char* v1_controllers[] = {"memory", "pids", "cpu", "cpuacct", "freezer"};

struct Dir {
    std::string controllers;  // of the hierarchy, e.g. "cpu,cpuacct"
    std::string path;
};

class V1Group final : public Group {
public:
    V1Group(std::vector<Dir> dirs, Via via) : dirs_(std::move(dirs)), via_(via) {}
    ~V1Group() override {
        if (!removed_) (void)remove();
    }

    Kind kind() const override { return Kind::v1; }
    Via via() const override { return via_; }

    Result<void> attach(pid_t pid) override {
        // The init waits for our go before it does anything, so it is inside every
        // group before the first instruction of the sandbox runs.
        for (const auto& d : dirs_)
            if (auto r = write_text(d.path + "/cgroup.procs", std::to_string(pid)); !r) return r;
        return {};
    }

    void kill_all() noexcept override {
        const std::string* freezer = dir_for("freezer");
        bool frozen = false;
        if (freezer) {
            // A frozen group cannot fork between our reading its list and the kill.
            frozen = write_text(*freezer + "/freezer.state", "FROZEN").has_value();
            for (int i = 0; frozen && i < 100; ++i) {
                auto st = read_text(*freezer + "/freezer.state").value_or("");
                if (util::starts_with(st, "FROZEN")) break;
                pause_ms(1);
            }
        }
        const std::string* any = freezer ? freezer : (dirs_.empty() ? nullptr : &dirs_.front().path);
        for (int round = 0; any && round < 50; ++round) {
            auto procs = read_procs(*any);
            if (procs.empty()) break;
            for (pid_t p : procs) ::kill(p, SIGKILL);
            if (frozen) break;
            pause_ms(1);
        }
        // SIGKILL is delivered once thawed.
        if (frozen) (void)write_text(*freezer + "/freezer.state", "THAWED");
    }

    bool freeze(bool on) noexcept override {
        const std::string* freezer = dir_for("freezer");
        return freezer && write_text(*freezer + "/freezer.state", on ? "FROZEN" : "THAWED").has_value();
    }

    int freezer_fd() noexcept override {
        if (!freezer_fd_)
            if (const std::string* freezer = dir_for("freezer"))
                freezer_fd_.reset(
                    ::open((*freezer + "/freezer.state").c_str(), O_WRONLY | O_CLOEXEC));
        return freezer_fd_.get();
    }

    Stats stats() const override {
        Stats s;
        if (auto d = dir_for("memory")) {
            s.memory_peak_bytes = read_single(*d, "memory.max_usage_in_bytes");
            s.oom_kill_count = read_flat(*d, "memory.oom_control", "oom_kill");
        }
        if (auto d = dir_for("pids")) {
            s.pids_peak = read_single(*d, "pids.peak");
            s.pids_max_hits = read_flat(*d, "pids.events", "max");
        }
        if (auto d = dir_for("cpuacct")) {
            s.cpu_user_s = static_cast<double>(read_single(*d, "cpuacct.usage_user")) / 1e9;
            s.cpu_system_s = static_cast<double>(read_single(*d, "cpuacct.usage_sys")) / 1e9;
        }
        if (auto d = dir_for("cpu")) {
            std::string cpu = read_text(*d + "/cpu.stat").value_or("");
            s.cpu_nr_throttled = flat_value(cpu, "nr_throttled").value_or(0);
            s.cpu_throttled_us = flat_value(cpu, "throttled_time").value_or(0) / 1000;
        }
        return s;
    }

    Result<void> remove() override {
        if (removed_) return {};
        auto start = std::chrono::steady_clock::now();
        bool killed = false;
        int delay = 1;
        std::optional<Error> first;
        for (auto it = dirs_.begin(); it != dirs_.end();) {
            if (::rmdir(it->path.c_str()) == 0 || errno == ENOENT) {
                it = dirs_.erase(it);
                continue;
            }
            int e = errno;
            auto waited = std::chrono::steady_clock::now() - start;
            if (e != EBUSY || waited > std::chrono::seconds(5)) {
                if (!first)
                    first = Error(ErrorKind::setup, e,
                                  "remove cgroup " + it->path + ": " +
                                      (e == EBUSY ? std::string("still holds processes after 5 s") : util::errno_text(e)));
                ++it;
                continue;
            }
            if (!killed && waited > std::chrono::milliseconds(300)) {
                kill_all();
                killed = true;
            }
            pause_ms(delay);
            delay = std::min(delay * 2, 20);
        }
        removed_ = true;
        if (first) return *first;
        return {};
    }

    std::vector<std::string> paths() const override {
        std::vector<std::string> out;
        for (const auto& d : dirs_) out.push_back(d.path);
        return out;
    }
    std::vector<std::string> notes() const override { return notes_; }
    std::vector<std::string> notes_;

private:
    const std::string* dir_for(const std::string& controller) const {
        for (const auto& d : dirs_) {
            std::string list = d.controllers;
            std::replace(list.begin(), list.end(), ',', ' ');
            for (const auto& c : words(list))
                if (c == controller) return &d.path;
        }
        return nullptr;
    }

    std::vector<Dir> dirs_;
    Via via_ = Via::own_cgroup;
    sys::UniqueFd freezer_fd_;
    bool removed_ = false;
};

}  // namespace

Result<std::unique_ptr<Group>> create_v1(const Host& host, const limits::Settings& s, std::string& why_not) {
    auto required = required_controllers(s);
    struct Pick {
        const Hierarchy* h;
        std::string parent;
    };
    std::vector<Pick> picks;
    for (const char* c : v1_controllers) {
        bool needed = std::find(required.begin(), required.end(), c) != required.end();
        const Hierarchy* h = host.v1_for(c);
        std::string problem;
        // Every placement but a named parent is the caller's own groups in v1, which
        // has no rule against a group with processes passing controllers down.
        std::string parent;
        if (h && s.placement == CgroupPlacement::under) {
            parent = placed_parent(*h, s, problem);
        } else if (h) {
            parent = h->self_dir();
            if (parent.empty())
                problem = std::string("this process's ") + c + " cgroup (" + h->self + ") is not visible under " + h->mount;
        }
        if (!h)
            problem = std::string("no cgroup v1 hierarchy has the ") + c + " controller";
        else if (problem.empty() && !writable(parent, {"cgroup.procs"}))
            problem = "the cgroup v1 " + std::string(c) + " group " + parent + " is not writable by uid " +
                      std::to_string(::geteuid()) + " (cgroup v1 cannot be delegated safely: only root may use it)";
        if (!problem.empty()) {
            if (needed) {
                why_not = problem;
                return std::unique_ptr<Group>();
            }
            continue;  // optional: statistics or the freezer
        }
        bool seen = std::any_of(picks.begin(), picks.end(), [&](const Pick& p) { return p.h->mount == h->mount; });
        if (!seen) picks.push_back({h, parent});
    }

    // One name for all hierarchies, so that the groups of a run are easy to match.
    std::string name = next_name();
    std::vector<Dir> dirs;
    auto undo = [&](Error e) -> Result<std::unique_ptr<Group>> {
        for (auto it = dirs.rbegin(); it != dirs.rend(); ++it) ::rmdir(it->path.c_str());
        return e;
    };
    for (const auto& p : picks) {
        GcResult ignored;
        gc_dir(p.parent, false, ignored);
        std::string dir = p.parent + "/" + name;
        if (::mkdir(dir.c_str(), 0755) != 0) {
            int e = errno;
            return undo(Error(ErrorKind::setup, e, "create cgroup " + dir + ": " + util::errno_text(e)));
        }
        dirs.push_back({p.h->controllers, dir});
    }
    auto group = std::make_unique<V1Group>(
        dirs, s.placement == CgroupPlacement::under ? Via::given_cgroup : Via::own_cgroup);
    auto dir_of = [&](const char* c) -> std::string {
        for (const auto& p : picks)
            if (p.h->has(c)) return p.parent + "/" + name;
        return {};
    };
    auto set = [&](const char* c, const char* file, const std::string& value) -> Result<void> {
        return write_text(dir_of(c) + "/" + file, value);
    };

    if (s.memory_bytes) {
        std::string d = dir_of("memory");
        if (auto r = set("memory", "memory.limit_in_bytes", std::to_string(*s.memory_bytes)); !r)
            return undo(std::move(r).error());
        // memsw is memory + swap: equal to the memory limit means no swap at all.
        std::uint64_t swap = s.swap_bytes.value_or(0);
        if (exists(d + "/memory.memsw.limit_in_bytes")) {
            if (auto r = set("memory", "memory.memsw.limit_in_bytes", std::to_string(*s.memory_bytes + swap)); !r)
                return undo(std::move(r).error());
        } else {
            struct sysinfo si {};
            if (::sysinfo(&si) == 0 && si.totalswap > 0)
                group->notes_.emplace_back(
                    "swap not limited: the kernel has no swap accounting (memory.memsw.*; boot with swapaccount=1)");
        }
    }
    if (s.pids)
        if (auto r = set("pids", "pids.max", std::to_string(*s.pids)); !r) return undo(std::move(r).error());
    if (s.cpus) {
        auto quota = static_cast<std::uint64_t>(std::llround(*s.cpus * limits::cpu_period_us));
        if (auto r = set("cpu", "cpu.cfs_period_us", std::to_string(limits::cpu_period_us)); !r)
            return undo(std::move(r).error());
        if (auto r = set("cpu", "cpu.cfs_quota_us", std::to_string(quota)); !r) return undo(std::move(r).error());
    }
    return std::unique_ptr<Group>(std::move(group));
}

}  // namespace agentjail::cgroup::detail
