// SPDX-License-Identifier: Apache-2.0
// The supervisor, on the run's loop: one poll-shaped wait over the init's pidfd,
// the seccomp listener, the timers, the guarded names and the caller's commands. A refused call is answered from the registers the
// kernel captured (never from the sandbox's memory, so there is nothing to race:
// SYS-07), recorded, and counted.
#include "launch/supervisor.hpp"

#include "base/time.hpp"

#include "launch/child.hpp"

#include "sys/syscalls.hpp"
#include "util/strings.hpp"
#include "util/thread_guard.hpp"
#include "sys/json_lines.hpp"
#include "sys/poll_async.hpp"

#include <linux/seccomp.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <ctime>
#include <vector>

namespace agentjail::launch {

namespace {

// wait_next()'s fixed descriptors; the socket gate's follow.
constexpr size_t gate_fds_at = 5;

std::string action_text(const seccomp::Action& a) {
    switch (a.kind) {
    case seccomp::ActionKind::allow: return "allow";
    case seccomp::ActionKind::errno_ret: return "errno:" + util::errno_name(a.err);
    case seccomp::ActionKind::kill: return "kill";
    case seccomp::ActionKind::log: return "log";
    case seccomp::ActionKind::notify: return "notify";
    }
    return "?";
}

}  // namespace

Supervisor::Supervisor(Config c, boost::asio::io_context& io)
    : c_(std::move(c)), gate_(std::move(c_.gate)), poll_(std::make_unique<sys::AsyncPoll>(io)) {
    commands_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    // Linux 6.6+: a notified thread hands its CPU to the waiter and back, rather than
    // waking it elsewhere (the socket gate's connects are round trips); best effort.
    if (c_.listener.valid()) {
        constexpr unsigned long set_flags = _IOW('!', 4, std::uint64_t);  // SECCOMP_IOCTL_NOTIF_SET_FLAGS
        (void)::ioctl(c_.listener.get(), set_flags, std::uint64_t{1});    // SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
    }
    if (c_.timeout_s > 0) wall_deadline_ = util::monotonic_s() + c_.timeout_s;
    // The first wait, started here: a failure stops the sandbox at once.
    if (!util::run_or_stop("the supervisor", "supervisor.throw", c_.pidfd, failure_, [this] { wait_next(); }))
        give_up();
}

Supervisor::~Supervisor() { join(); }

void Supervisor::join() {
    if (!poll_) return;
    poll_->wait_idle();
    poll_.reset();
}

// One wait on the run's loop: the init's pidfd, the seccomp listener, the guarded
// names, the caller's commands and the init's freeze notes, until the nearer of the
// two deadlines (the wall clock or its grace, a stop's kill grace).
void Supervisor::wait_next() {
    std::vector<pollfd> fds = {{c_.pidfd, POLLIN, 0},
                               {c_.listener.get(), POLLIN, 0},
                               {c_.watch && !watch_failed_ ? c_.watch->fd() : -1, POLLIN, 0},
                               {commands_.get(), POLLIN, 0},
                               {c_.freeze_notes.get(), POLLIN, 0}};
    // The socket gate's connects under way, after the fixed five (handle()).
    gate_.add_wait_fds(fds);
    int timeout_ms = -1;
    double next = 0;
    for (double d : {wall_deadline_, kill_deadline_})
        if (d > 0 && (next == 0 || d < next)) next = d;
    if (next > 0) {
        // Rounded up: a round that ends before its deadline only waits again.
        double ms = std::ceil((next - util::monotonic_s()) * 1000.0);
        timeout_ms = ms <= 0 ? 0 : ms > 3.6e6 ? 3'600'000 : static_cast<int>(ms);
    }
    // A pending connect whose caller was interrupted or died is dropped within a second.
    if (gate_.has_pending() && (timeout_ms < 0 || timeout_ms > 1000)) timeout_ms = 1000;
    poll_->wait(std::move(fds), timeout_ms, [this](std::vector<pollfd>& ready) { on_ready(ready); });
}

// A sandbox left without its supervisor would wait forever on a notified call, or
// outlive its wall clock: a failure here stops it (util/thread_guard.hpp).
void Supervisor::on_ready(std::vector<pollfd>& fds) noexcept {
    bool more = false;
    if (!util::run_or_stop("the supervisor", nullptr, c_.pidfd, failure_, [&] {
            more = handle(fds);
            if (more) wait_next();
        })) {
        give_up();
        return;
    }
    if (more) return;
    if (c_.log.valid()) write_summaries(util::monotonic_s());
    end();
}

// The sandbox was killed (run_or_stop): the cgroup's processes too, and join() returns.
void Supervisor::give_up() noexcept {
    if (c_.on_kill) {
        try {
            c_.on_kill();
        } catch (...) {
        }
    }
    end();
}

// The supervisor waits no more (join() returns once this round is over), and
// nobody acknowledges a freeze any more.
void Supervisor::end() noexcept {
    std::lock_guard<std::mutex> lock(m_);
    done_ = true;
    cv_.notify_all();
}

void Supervisor::handle_notification() {
    // The kernel's sizes do not change while it runs: asked once.
    static const seccomp_notif_sizes sizes = [] {
        seccomp_notif_sizes s{};
        if (::syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &s) < 0) {
            s.seccomp_notif = sizeof(seccomp_notif);
            s.seccomp_notif_resp = sizeof(seccomp_notif_resp);
        }
        return s;
    }();
    // The kernel may know a larger struct than our headers: size buffers by its word.
    std::vector<char> req_buf(std::max<size_t>(sizes.seccomp_notif, sizeof(seccomp_notif)), 0);
    std::vector<char> resp_buf(
        std::max<size_t>(sizes.seccomp_notif_resp, sizeof(seccomp_notif_resp)), 0);
    auto* req = reinterpret_cast<seccomp_notif*>(req_buf.data());
    auto* resp = reinterpret_cast<seccomp_notif_resp*>(resp_buf.data());
    if (::ioctl(c_.listener.get(), SECCOMP_IOCTL_NOTIF_RECV, req) < 0) return;  // the caller died

    const auto& d = req->data;
    std::uint64_t args[6];
    for (int i = 0; i < 6; ++i) args[i] = d.args[i];
    seccomp::Decision dec = c_.program->decide(d.arch, d.nr, args);
    resp->id = req->id;
    bool refused = false;
    SocketGate::Outcome gated;
    if (dec.action.kind == seccomp::ActionKind::notify) {
        // The socket gate: the supervisor makes the call itself (and answers it).
        gated = gate_.make(c_.listener.get(), *req);
        if (!gated.refused) return;
        dec.action = seccomp::Action{seccomp::ActionKind::errno_ret, EACCES};
        refused = true;
    } else if (dec.action.kind == seccomp::ActionKind::errno_ret) {
        resp->error = -dec.action.err;
        refused = true;
    } else if (dec.action.kind == seccomp::ActionKind::kill) {
        // Should not arrive here (kill is compiled into the filter); refuse hard.
        resp->error = -EPERM;
        refused = true;
    } else {
        // log, or a notify rule whose decider allowed it: let the kernel run the call.
        resp->flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
    }
    if (!gated.refused) ::ioctl(c_.listener.get(), SECCOMP_IOCTL_NOTIF_SEND, resp);
    const bool recorded = refused || dec.action.kind == seccomp::ActionKind::log;
    if (!recorded) return;
    denials_.fetch_add(1);  // exact, whatever the log below writes
    const auto& rules = c_.program->rules();
    const bool has_rule = dec.rule >= 0 && static_cast<size_t>(dec.rule) < rules.size();
    if (gated.refused) {
        // Only an absolute path can be named in a policy (a relative one is the
        // caller's: the hint says what it is, not a line to copy).
        const bool absolute = !gated.path.empty() && gated.path[0] == '/';
        refusals_.add("socket", gated.path, gated.why, "--allow-socket " + gated.path,
                      absolute ? "filesystem.sockets" : "",
                      absolute ? nlohmann::json(gated.path).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
                               : "");
    } else if (refused) {
        const seccomp::RuleInfo* info = has_rule ? &rules[static_cast<size_t>(dec.rule)] : nullptr;
        const bool nested = info && info->unless_nested;
        refusals_.add("syscall", seccomp::syscall_name(d.arch, d.nr),
                      info ? info->why + " (" + info->where + ")" : std::string("the filter's default action"),
                      nested ? "[seccomp] nested_sandboxes = true in a policy of yours" : std::string(),
                      nested ? "seccomp.nested_sandboxes" : "", nested ? "true" : "");
    }
    if (!c_.log.valid()) return;

    // A flood of refused calls writes a few lines of each kind (the same call
    // with the same arguments, rule and action) and counts the rest, so the log
    // and the time spent on it stay bounded; the summaries say how many were left out.
    auto arr = nlohmann::json::array();
    for (int i = 0; i < 6; ++i) {
        char hex[24];
        std::snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(d.args[i]));
        arr.push_back(hex);
    }
    nlohmann::json kind;
    kind["syscall"] = seccomp::syscall_name(d.arch, d.nr);
    kind["nr"] = d.nr;
    kind["arch"] = seccomp::arch_name(d.arch);
    kind["args"] = arr;
    kind["rule"] = has_rule ? rules[static_cast<size_t>(dec.rule)].where : std::string("default");
    kind["action"] = action_text(dec.action);
    if (gated.refused) kind["socket"] = gated.path;
    const double now = util::monotonic_s();
    const bool admitted = limiter_.admit(kind.dump(), now);
    if (limiter_.summary_due(now)) write_summaries(now);
    if (!admitted) return;

    nlohmann::json j;
    j["time"] = base::iso8601_now();
    j["pid"] = req->pid;
    j["syscall"] = kind["syscall"];
    j["nr"] = d.nr;
    j["arch"] = kind["arch"];
    j["args"] = arr;
    if (has_rule) {
        j["rule"] = rules[static_cast<size_t>(dec.rule)].where;
        j["why"] = rules[static_cast<size_t>(dec.rule)].why;
        j["text"] = rules[static_cast<size_t>(dec.rule)].text;
    } else {
        j["rule"] = "default";
    }
    j["action"] = kind["action"];
    if (gated.refused) {
        j["socket"] = gated.path;
        j["why"] = gated.why;
    }
    write_line(j);
}

void Supervisor::write_line(const nlohmann::json& j) {
    (void)sys::write_json_line(c_.log.get(), j.dump(-1, ' ', true, nlohmann::json::error_handler_t::replace));
}

void Supervisor::write_summaries(double now) {
    nlohmann::json base;
    base["time"] = base::iso8601_now();
    util::write_summaries(limiter_, now, base, [this](const nlohmann::json& s) { write_line(s); });
}

bool Supervisor::freeze(int timeout_ms) {
    std::unique_lock<std::mutex> lock(m_);
    if (done_) return true;  // nothing is left to run
    held_ = true;
    // Through the cgroup where it can: every process stops as it is (one an inner
    // shell stopped stays stopped on the thaw); otherwise the init's signals. The
    // kernel's confirmation is waited for without the lock the loop takes.
    if (c_.freeze_group) {
        // First the init passes on what it was sent (the command's job's stop), then
        // the cgroup stops everything where it is.
        const std::uint64_t synced = acks_ + 1;
        if (sys::pidfd_send_signal(c_.pidfd, c_.sync_sig) == 0 &&
            cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] { return done_ || acks_ >= synced; })) {
            if (done_) return true;
            lock.unlock();
            const bool frozen = c_.freeze_group(true, timeout_ms);
            lock.lock();
            if (frozen) {
                group_frozen_ = true;
                return true;
            }
            if (done_) return true;
        }
    }
    const std::uint64_t want = acks_ + 1;
    if (sys::pidfd_send_signal(c_.pidfd, c_.freeze_sig) < 0) return false;
    return cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] { return done_ || acks_ >= want; });
}

void Supervisor::thaw() {
    {
        std::lock_guard<std::mutex> lock(m_);
        thaw_asked_ = true;
    }
    std::uint64_t one = 1;
    (void)!::write(commands_.get(), &one, sizeof one);
}

void Supervisor::stop() {
    {
        std::lock_guard<std::mutex> lock(m_);
        ++stops_asked_;
    }
    std::uint64_t one = 1;
    (void)!::write(commands_.get(), &one, sizeof one);
}

void Supervisor::kill_all() {
    sys::pidfd_send_signal(c_.pidfd, SIGKILL);
    if (c_.on_kill) c_.on_kill();
}

// Before anything inside runs again: what the host did to the guarded names while
// the run was stopped is dealt with (inotify kept the events), then the init
// continues every process it stopped.
void Supervisor::resume_after_stop() {
    if (c_.watch && !watch_failed_ && !c_.watch->handle()) {
        watch_failed_ = true;
        kill_all();
        return;
    }
    bool group = false;
    {
        std::lock_guard<std::mutex> lock(m_);
        group = group_frozen_;
        group_frozen_ = false;
    }
    // A thaw that does not go through leaves the sandbox frozen, supervised: nothing
    // inside runs unsupervised, but nothing runs at all; kill it rather than hang.
    if (group) {
        if (!c_.freeze_group(false, 1000)) kill_all();
        return;
    }
    sys::pidfd_send_signal(c_.pidfd, c_.thaw_sig);
}

void Supervisor::freeze_note(char note) {
    if (note == freeze_asked) {
        std::lock_guard<std::mutex> lock(m_);
        ++acks_;
        cv_.notify_all();
        return;
    }
    // The init froze the sandbox because agentjail was stopped (SIGSTOP); the loop
    // runs again, so agentjail was continued. A freeze the caller holds waits for thaw().
    bool held;
    {
        std::lock_guard<std::mutex> lock(m_);
        held = held_;
    }
    if (!held) resume_after_stop();
}

void Supervisor::commands() {
    std::uint64_t n = 0;
    (void)!::read(commands_.get(), &n, sizeof n);
    bool thaw = false;
    unsigned stops = 0;
    {
        std::lock_guard<std::mutex> lock(m_);
        thaw = thaw_asked_;
        thaw_asked_ = false;
        if (thaw) held_ = false;
        stops = stops_asked_;
    }
    if (thaw) resume_after_stop();
    if (stops == stops_done_) return;
    if (stops_done_ == 0 && stops == 1) {
        // The command was told; whatever is still inside after the grace is killed.
        kill_deadline_ = util::monotonic_s() + c_.grace_s;
    } else {
        // A second request: at once.
        stop_killed_ = true;
        kill_all();
        kill_deadline_ = 0;
    }
    stops_done_ = stops;
}

bool Supervisor::handle(std::vector<pollfd>& fds) {
    // The socket gate's connects that were waiting (before a notification adds more).
    if (gate_.has_pending() && c_.listener.valid())
        gate_.finish(c_.listener.get(), fds.data() + gate_fds_at, fds.size() - gate_fds_at);
    if (fds[1].revents & POLLIN) handle_notification();
    if (fds[1].revents & (POLLHUP | POLLERR | POLLNVAL))
        c_.listener.reset();  // no filtered task left
    const double now = util::monotonic_s();
    if (wall_deadline_ > 0 && now >= wall_deadline_) {
        if (!term_sent_) {
            // Every process, not only the command: a daemon that double-forked or
            // called setsid is still in our pid namespace.
            timed_out_ = true;
            term_sent_ = true;
            sys::pidfd_send_signal(c_.pidfd, c_.broadcast_sig);
            wall_deadline_ = now + c_.grace_s;
        } else {
            kill_all();
            wall_deadline_ = 0;
        }
    }
    // The watch before the freeze notes: a thaw comes after the host's changes.
    if ((fds[2].revents & POLLIN) && !watch_failed_ && !c_.watch->handle()) {
        // A hidden or protected name lies open and could not be covered again:
        // the sandbox must not go on using it (the record says why).
        watch_failed_ = true;
        kill_all();
    }
    if (fds[4].revents & POLLIN) {
        char notes[64];
        ssize_t r = ::read(c_.freeze_notes.get(), notes, sizeof notes);
        for (ssize_t i = 0; i < r; ++i) freeze_note(notes[i]);
    } else if (fds[4].revents & (POLLHUP | POLLERR)) {
        c_.freeze_notes.reset();  // the init is gone
    }
    if (fds[3].revents & POLLIN) commands();
    if (kill_deadline_ > 0 && util::monotonic_s() >= kill_deadline_) {
        stop_killed_ = true;
        kill_all();
        kill_deadline_ = 0;
    }
    return fds[0].revents == 0;  // the init exited: the sandbox is gone
}

}  // namespace agentjail::launch
