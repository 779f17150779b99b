// SPDX-License-Identifier: Apache-2.0
// The cgroup v2 driver: as root a group under agentjail.slice at the top of the
// hierarchy; as an ordinary user a group under the caller's own delegated cgroup.
// The init is cloned straight into it (CLONE_INTO_CGROUP), so no process of the
// sandbox ever runs outside its limits.
#include "cgroup/internal.hpp"

#include "sys/fd.hpp"
#include "util/strings.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>

namespace agentjail::cgroup::detail {

namespace {

// Controllers we enable for statistics even when no limit needs them.
constexpr const char* wanted_controllers[] = {"memory", "pids", "cpu"};

std::string dirname(const std::string& p) {
    size_t slash = p.rfind('/');
    return slash == 0 ? "/" : p.substr(0, slash);
}

std::string basename(const std::string& p) { return p.substr(p.rfind('/') + 1); }

class V2Group final : public Group {
public:
    V2Group(Kind kind, std::string dir, sys::UniqueFd fd, Via via, std::string unit, std::unique_ptr<Anchor> anchor)
        : kind_(kind), via_(via), unit_(std::move(unit)), dir_(std::move(dir)), fd_(std::move(fd)),
          anchor_(std::move(anchor)) {}
    ~V2Group() override {
        if (!removed_) (void)remove();
        anchor_.reset();
    }

    Kind kind() const override { return kind_; }
    Via via() const override { return via_; }
    std::string unit() const override { return unit_; }
    int clone_fd() const override { return anchor_ && anchor_->needs_attach() ? -1 : fd_.get(); }
    // Entered at clone; only where that is not allowed (a systemd scope outside the
    // caller's reach), the init is moved before it runs anything.
    Result<void> attach(pid_t pid) override {
        if (anchor_ && anchor_->needs_attach()) return anchor_->attach(pid, basename(dir_));
        return {};
    }

    void kill_all() noexcept override {
        // cgroup.kill (5.14+) SIGKILLs every process of the subtree at once, with no
        // race against forks; without it, freeze first so nothing forks in between.
        if (exists(dir_ + "/cgroup.kill")) {
            (void)write_text(dir_ + "/cgroup.kill", "1");
            return;
        }
        bool frozen = write_text(dir_ + "/cgroup.freeze", "1").has_value();
        for (int round = 0; round < 20; ++round) {
            auto procs = read_procs(dir_);
            if (procs.empty()) break;
            for (pid_t p : procs) ::kill(p, SIGKILL);
            if (frozen) break;
            pause_ms(1);
        }
        if (frozen) (void)write_text(dir_ + "/cgroup.freeze", "0");
    }

    bool freeze(bool on) noexcept override {
        return write_text(dir_ + "/cgroup.freeze", on ? "1" : "0").has_value();
    }

    bool freezes_for_stop() const noexcept override { return true; }

    bool freeze_and_wait(bool on, int timeout_ms) noexcept override {
        if (!freeze(on)) return false;
        const std::uint64_t want = on ? 1 : 0;
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
        for (;;) {
            auto events = read_text(dir_ + "/cgroup.events");
            if (!events) return false;
            if (flat_value(*events, "frozen") == want) return true;
            if (std::chrono::steady_clock::now() >= deadline) return false;
            pause_ms(1);
        }
    }

    Stats stats() const override {
        Stats s;
        s.memory_peak_bytes = read_single(dir_, "memory.peak");
        s.oom_kill_count = read_flat(dir_, "memory.events", "oom_kill");
        s.pids_peak = read_single(dir_, "pids.peak");
        s.pids_max_hits = read_flat(dir_, "pids.events", "max");
        // One read of cpu.stat: its numbers then belong to the same moment.
        std::string cpu = read_text(dir_ + "/cpu.stat").value_or("");
        s.cpu_user_s = static_cast<double>(flat_value(cpu, "user_usec").value_or(0)) / 1e6;
        s.cpu_system_s = static_cast<double>(flat_value(cpu, "system_usec").value_or(0)) / 1e6;
        s.cpu_nr_throttled = flat_value(cpu, "nr_throttled").value_or(0);
        s.cpu_throttled_us = flat_value(cpu, "throttled_usec").value_or(0);
        return s;
    }

    Result<void> remove() override {
        if (removed_) return {};
        fd_.reset();
        // The init is reaped, so the pid namespace is being torn down; its last
        // processes leave the group within moments. Anything still there after
        // 300 ms is killed (something outside the pid namespace's reach).
        auto start = std::chrono::steady_clock::now();
        int delay = 1;
        bool killed = false;
        for (;;) {
            if (::rmdir(dir_.c_str()) == 0 || errno == ENOENT) {
                removed_ = true;
                // Then the parent may go (a systemd scope stops once its placeholder left).
                if (anchor_) {
                    auto r = anchor_->release();
                    anchor_.reset();
                    return r;
                }
                return {};
            }
            int e = errno;
            if (e != EBUSY)
                return Error(ErrorKind::setup, e, "remove cgroup " + dir_ + ": " + util::errno_text(e));
            auto waited = std::chrono::steady_clock::now() - start;
            if (!killed && waited > std::chrono::milliseconds(300)) {
                kill_all();
                killed = true;
            }
            if (waited > std::chrono::seconds(5))
                return Error(ErrorKind::setup, EBUSY,
                             "remove cgroup " + dir_ + ": still holds processes after 5 s");
            pause_ms(delay);
            delay = std::min(delay * 2, 20);
        }
    }

    std::vector<std::string> paths() const override { return {dir_}; }
    std::vector<std::string> notes() const override { return notes_; }
    std::vector<std::string> notes_;

private:
    Kind kind_;
    Via via_;
    std::string unit_;
    std::string dir_;
    sys::UniqueFd fd_;
    std::unique_ptr<Anchor> anchor_;
    bool removed_ = false;
};

// Enables the controllers in parent's cgroup.subtree_control that are not yet there.
Result<void> enable(const std::string& parent, const std::vector<std::string>& want) {
    auto have = words(read_text(parent + "/cgroup.subtree_control").value_or(""));
    std::string add;
    for (const auto& c : want)
        if (!contains(have, c)) add += (add.empty() ? "+" : " +") + c;
    if (add.empty()) return {};
    return write_text(parent + "/cgroup.subtree_control", add);
}

}  // namespace

Result<std::unique_ptr<Group>> make_v2_group(Kind kind, const std::string& parent, const limits::Settings& s, Via via,
                                             std::string unit, std::unique_ptr<Anchor> anchor) {
    // Stale groups of agentjails that were SIGKILLed go first: they hold nothing we
    // need, and a crashed run must not leave the tree growing.
    GcResult ignored;
    gc_dir(parent, true, ignored);

    std::string dir = parent + "/" + next_name();
    if (::mkdir(dir.c_str(), 0755) != 0) {
        int e = errno;
        return Error(ErrorKind::setup, e, "create cgroup " + dir + ": " + util::errno_text(e));
    }
    auto fail = [&](Error e) -> Result<std::unique_ptr<Group>> {
        ::rmdir(dir.c_str());
        return e;
    };
    std::vector<std::string> notes;
    if (s.memory_bytes) {
        if (auto r = write_text(dir + "/memory.max", std::to_string(*s.memory_bytes)); !r) return fail(r.error());
        // Swap defaults to none: otherwise a memory limit only moves the bomb to swap.
        std::uint64_t swap = s.swap_bytes.value_or(0);
        if (exists(dir + "/memory.swap.max")) {
            if (auto r = write_text(dir + "/memory.swap.max", std::to_string(swap)); !r) return fail(r.error());
        } else if (swap > 0) {
            notes.emplace_back("swap limit not enforced: the kernel has no swap accounting (memory.swap.max)");
        }
        // One OOM kill takes the whole sandbox: a half-killed build is worse than a
        // clear ML result, and no orphan keeps the memory.
        if (exists(dir + "/memory.oom.group"))
            if (auto r = write_text(dir + "/memory.oom.group", "1"); !r) return fail(r.error());
    }
    if (s.cpus) {
        auto quota = static_cast<std::uint64_t>(std::llround(*s.cpus * limits::cpu_period_us));
        if (auto r = write_text(dir + "/cpu.max", std::to_string(quota) + " " + std::to_string(limits::cpu_period_us)); !r)
            return fail(r.error());
    }
    if (s.pids)
        if (auto r = write_text(dir + "/pids.max", std::to_string(*s.pids)); !r) return fail(r.error());

    int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        return fail(Error(ErrorKind::setup, e, "open cgroup " + dir + ": " + util::errno_text(e)));
    }
    auto g = std::make_unique<V2Group>(kind, dir, sys::UniqueFd(fd), via, std::move(unit), std::move(anchor));
    g->notes_ = std::move(notes);
    return std::unique_ptr<Group>(std::move(g));
}

namespace {
Result<std::unique_ptr<Group>> create_v2_own(const Hierarchy& h, const limits::Settings& s,
                                             const std::vector<std::string>& required,
                                             const std::vector<std::string>& want, std::string& why_not);
}  // namespace

Result<std::unique_ptr<Group>> create_v2(const Host& host, const limits::Settings& s, std::string& why_not) {
    const Hierarchy& h = *host.v2;
    auto required = required_controllers(s);
    auto top = words(read_text(h.mount + "/cgroup.controllers").value_or(""));
    std::vector<std::string> missing;
    for (const auto& c : required)
        if (!contains(top, c)) missing.push_back(c);
    if (!missing.empty()) {
        why_not = "the cgroup v2 hierarchy at " + h.mount + " has no " + join(missing) +
                  " controller" + (host.v1_for(missing.front()) ? " (this host keeps it in cgroup v1)" : "");
        return std::unique_ptr<Group>();
    }
    std::vector<std::string> want = required;
    for (const char* c : wanted_controllers)
        if (contains(top, c) && !contains(want, c)) want.emplace_back(c);

    // A placement the caller chose: below that group, or nowhere. Nothing is made
    // above it, no controller enabled and no process moved: the caller and the
    // groups a scheduler made stay as they are.
    if (s.placement != CgroupPlacement::automatic) {
        std::string parent = placed_parent(h, s, why_not);
        if (parent.empty()) return std::unique_ptr<Group>();
        if (!writable(parent, {"cgroup.procs"})) {
            why_not = "the cgroup " + parent + " is not writable by uid " + std::to_string(::geteuid());
            return std::unique_ptr<Group>();
        }
        auto enabled = words(read_text(parent + "/cgroup.subtree_control").value_or(""));
        missing.clear();
        for (const auto& c : required)
            if (!contains(enabled, c)) missing.push_back(c);
        if (!missing.empty()) {
            why_not = "the cgroup " + parent + " does not pass " + join(missing) + " to its children";
            if (s.placement == CgroupPlacement::caller)
                why_not += " (cgroup v2 lets no group that holds processes, as yours holds this one, pass "
                           "controllers down: name a group that does as the cgroup parent, such as the one "
                           "the scheduler made for the job)";
            return std::unique_ptr<Group>();
        }
        return make_v2_group(::geteuid() == 0 ? Kind::v2 : Kind::v2_delegated, parent, s,
                             s.placement == CgroupPlacement::caller ? Via::own_cgroup : Via::given_cgroup);
    }

    // As root (really root: able to write the hierarchy's top), under a parent that
    // agentjail owns; the top's own settings are never changed.
    if (::geteuid() == 0 && writable(h.mount, {"cgroup.procs"})) {
        auto enabled = words(read_text(h.mount + "/cgroup.subtree_control").value_or(""));
        missing.clear();
        for (const auto& c : required)
            if (!contains(enabled, c)) missing.push_back(c);
        if (!missing.empty()) {
            why_not = "the root cgroup " + h.mount + " does not pass " + join(missing) +
                      " to its children (enable with: echo +" + missing.front() + " > " + h.mount +
                      "/cgroup.subtree_control)";
            return std::unique_ptr<Group>();
        }
        std::vector<std::string> usable;
        for (const auto& c : want)
            if (contains(enabled, c)) usable.push_back(c);
        std::string parent = h.mount + "/" + v2_root_parent;
        if (::mkdir(parent.c_str(), 0755) != 0 && errno != EEXIST) {
            int e = errno;
            return Error(ErrorKind::setup, e, "create cgroup " + parent + ": " + util::errno_text(e));
        }
        if (auto r = enable(parent, usable); !r) return std::move(r).error();
        return make_v2_group(Kind::v2, parent, s, Via::root_slice);
    }

    // An ordinary user: the own (or parent) cgroup when delegated, else a scope from
    // the user's systemd manager.
    auto own = create_v2_own(h, s, required, want, why_not);
    if (!own || *own) return own;
    std::string why_scope;
    auto scope = create_systemd_scope(h, s, want, why_scope);
    if (!scope || *scope) return scope;
    why_not += "; " + why_scope;
    return std::unique_ptr<Group>();
}

namespace {

Result<std::unique_ptr<Group>> create_v2_own(const Hierarchy& h, const limits::Settings& s,
                                             const std::vector<std::string>& required,
                                             const std::vector<std::string>& want, std::string& why_not) {
    std::vector<std::string> missing;

    // An ordinary user: the caller's own cgroup, when it was delegated (the directory
    // and its cgroup.procs and cgroup.subtree_control are writable by the caller).
    std::string self = h.self_dir();
    if (self.empty()) {
        why_not = "this process's cgroup v2 (" + h.self + ") is not visible under " + h.mount;
        return std::unique_ptr<Group>();
    }
    // An earlier run of this process already moved it into its leaf.
    if (basename(self) == self_leaf_name()) self = dirname(self);

    // The second choice: a delegated parent that already passes the controllers down,
    // with the run's group a sibling of our own cgroup (a user's shell sits in D/leaf of
    // a delegated D; the common ancestor D's cgroup.procs is then ours to write too).
    auto delegated_parent = [&](std::string& reason) -> std::string {
        std::string parent = dirname(self);
        if (self == h.mount || !util::path_within(parent, h.mount)) {
            reason = "and it has no parent inside the hierarchy";
            return {};
        }
        if (!writable(parent, {"cgroup.procs", "cgroup.subtree_control"})) {
            reason = "nor is its parent " + parent;
            return {};
        }
        auto passed = words(read_text(parent + "/cgroup.subtree_control").value_or(""));
        std::vector<std::string> lacking;
        for (const auto& c : required)
            if (!contains(passed, c)) lacking.push_back(c);
        if (!lacking.empty()) {
            reason = "and its delegated parent " + parent + " does not pass " + join(lacking) + " down";
            return {};
        }
        return parent;
    };
    auto own_failed = [&](const std::string& own) -> Result<std::unique_ptr<Group>> {
        std::string reason;
        std::string parent = delegated_parent(reason);
        if (!parent.empty()) return make_v2_group(Kind::v2_delegated, parent, s, Via::parent_cgroup);
        why_not = own + ", " + reason;
        return std::unique_ptr<Group>();
    };

    if (!writable(self, {"cgroup.procs", "cgroup.subtree_control"}))
        return own_failed("your cgroup v2 " + self + " is not delegated to you (not writable by uid " +
                          std::to_string(::geteuid()) + ")");
    auto avail = words(read_text(self + "/cgroup.controllers").value_or(""));
    missing.clear();
    for (const auto& c : required)
        if (!contains(avail, c)) missing.push_back(c);
    if (!missing.empty())
        return own_failed("your delegated cgroup " + self + " has no " + join(missing) +
                          " controller (its parent does not pass it down; Delegate=yes in systemd does)");
    std::vector<std::string> usable;
    for (const auto& c : want)
        if (contains(avail, c)) usable.push_back(c);
    auto enabled = words(read_text(self + "/cgroup.subtree_control").value_or(""));
    bool all = std::all_of(usable.begin(), usable.end(), [&](const std::string& c) { return contains(enabled, c); });
    if (!all) {
        // cgroup v2 lets a group pass controllers to children only while it holds no
        // processes itself: we move out of it into a leaf of our own first. Another
        // process in it (the user's shell) would have to move too, which is not ours
        // to do.
        auto procs = read_procs(self);
        pid_t me = ::getpid();
        std::vector<pid_t> others;
        for (pid_t p : procs)
            if (p != me) others.push_back(p);
        if (!others.empty())
            return own_failed("your delegated cgroup " + self + " holds other processes (pid " +
                              std::to_string(others.front()) +
                              (others.size() > 1 ? " and " + std::to_string(others.size() - 1) + " more" : "") +
                              "), so it cannot pass controllers down (cgroup v2's no-internal-processes rule)");
        std::string leaf;
        if (std::find(procs.begin(), procs.end(), me) != procs.end()) {
            leaf = self + "/" + self_leaf_name();
            if (::mkdir(leaf.c_str(), 0755) != 0 && errno != EEXIST) {
                int e = errno;
                return Error(ErrorKind::setup, e, "create cgroup " + leaf + ": " + util::errno_text(e));
            }
            if (auto r = write_text(leaf + "/cgroup.procs", "0"); !r) {
                ::rmdir(leaf.c_str());
                return std::move(r).error();
            }
        }
        if (auto r = enable(self, usable); !r) {
            // Undo the move so the caller is where it was.
            if (!leaf.empty()) {
                (void)write_text(self + "/cgroup.procs", "0");
                ::rmdir(leaf.c_str());
            }
            return std::move(r).error();
        }
    }
    return make_v2_group(Kind::v2_delegated, self, s, Via::own_cgroup);
}

}  // namespace

}  // namespace agentjail::cgroup::detail
