// SPDX-License-Identifier: Apache-2.0
// The adapters that make each facility one of the run's components, and the list of
// them a plan asks for (parts.hpp).
#include "run/parts.hpp"

#include "launch/launch.hpp"
#include "net/proxy.hpp"
#include "net/publish.hpp"
#include "plan/plan.hpp"
#include "policy/policy.hpp"
#include "run/enforce.hpp"
#include "run/host_actions.hpp"
#include "run/loop.hpp"
#include "sys/host_file.hpp"
#include "util/fault.hpp"
#include "workspace/audit.hpp"
#include "workspace/clone.hpp"
#include "workspace/overlay_run.hpp"

#include <time.h>

#include <cerrno>

namespace agentjail::run {

Result<void> StdioRelay::prepare(const plan::Plan& plan, Spawn& spawn) {
    options_.have_devpts = false;
    for (const auto& m : plan.mounts)
        if (m.kind == plan::MountKind::devpts && m.dst == "/dev/pts") options_.have_devpts = true;
    auto relay = tty::Relay::prepare(options_);
    if (!relay) return std::move(relay).error();
    relay_ = std::move(*relay);
    const tty::ChildSide& side = relay_->child();
    launch::Stdio& stdio = spawn.stdio;
    stdio.in = side.fd[0];
    stdio.out = side.fd[1];
    stdio.err = side.fd[2];
    stdio.pty = side.pty;
    if (side.have_termios) stdio.pty_termios = &side.tio;
    if (side.have_winsize) stdio.pty_winsize = &side.ws;
    stdio.close_in_child = side.relay_fds;
    return {};
}

Result<void> StdioRelay::attach(launch::Process& proc, Loop& loop) {
    return relay_->start(proc.take_pty_master(), proc.pidfd(), loop.io());
}

void StdioRelay::finish(RunResult& r) {
    if (!relay_->failure().empty() && r.internal_error.empty())
        r.internal_error = relay_->failure();
}

bool Guard::wanted(const plan::Plan& plan) {
    return !plan.guards.empty() || (plan.net && !plan.net->ca_bundle_host.empty());
}

// The watch starts before the sandbox exists, so no host change is missed. What the
// run will make on the host is written down first, in the journal; then each
// placeholder is made under a name of the run's own, written down by inode, and
// renamed into place: no moment leaves on the host what no journal lists. Other runs
// in the same directories set up and end in turns with this one, and leave their
// placeholders while this one uses them. What fails leaves nothing (the locals go
// newest first: the watch, the placeholders, the journal, the locks).
Result<void> Guard::prepare(const plan::Plan& plan, Spawn& spawn) {
    if (fault::hit("launch.before-shared"))
        return Error(ErrorKind::setup, EIO,
                     "an injected fault before entering the shared directories");
    auto users = guard::RootUsers::enter(guard::guard_roots(plan), plan.setup_timeout_s);
    if (!users) return std::move(users).error();
    if (fault::hit("launch.shared-entered"))
        return Error(ErrorKind::setup, EIO,
                     "an injected fault after entering the shared directories");
    const std::string tag = guard::Journal::next_tag();
    auto wanted = guard::wanted_placeholders(plan, tag);
    if (!wanted) return std::move(wanted).error();
    std::vector<std::string> made_dirs;  // the proxy's CA directory is made after the clone
    if (plan.net && !plan.net->ca_bundle_host.empty())
        made_dirs.push_back(
            plan.net->ca_bundle_host.substr(0, plan.net->ca_bundle_host.rfind('/')));
    guard::Journal journal = guard::Journal::write(tag, *wanted, made_dirs);
    auto placeholders = guard::Placeholders::stage(*wanted);
    if (!placeholders) return std::move(placeholders).error();
    if (fault::hit("launch.placeholder-made"))
        return Error(ErrorKind::setup, EIO, "an injected fault after the placeholders were made");
    journal.record(*placeholders);
    // In rounds: a placeholder inside a placeholder directory of this run is made once
    // that directory is in place (it was another run's when this run's plan saw it).
    for (;;) {
        auto committed = placeholders->commit();
        if (!committed) return std::move(committed).error();
        if (*committed) journal.record(*placeholders);
        auto more = placeholders->stage_next();
        if (!more) return std::move(more).error();
        if (*more == 0) break;
        journal.record(*placeholders);
    }
    auto watch = guard::Watch::create(plan);
    if (!watch) return std::move(watch).error();
    users_ = std::move(*users);
    journal_ = std::move(journal);
    placeholders_ = std::move(*placeholders);
    watch_ = std::move(*watch);
    freeze_fd_ = spawn.freeze_fd;  // the Enforcer's, prepared before
    if (watch_) spawn.watch = this;
    return {};
}

Result<void> Guard::after_clone(pid_t init) {
    if (watch_)
        if (auto r = watch_->attach(init, freeze_fd_); !r) return r;
    journal_.set_init(init);
    if (watch_) watch_->journal_to(journal_.appender());
    cloned_ = true;
    return {};
}

void Guard::end() {
    if (!cloned_ || ended_) return;
    ended_ = true;
    if (watch_) watch_->finish(outcome_, !placeholders_.empty(), placeholders_);
    guard::release_placeholders(users_, placeholders_, journal_, outcome_);
    journal_.done();
}

void Guard::finish(RunResult& r) {
    WorkspaceOutcome& w = r.workspace;
    auto append = [](std::vector<std::string>& to, std::vector<std::string>& from) {
        to.insert(to.end(), std::make_move_iterator(from.begin()),
                  std::make_move_iterator(from.end()));
        from.clear();
    };
    append(w.placeholders_made, outcome_.placeholders_made);
    append(w.placeholders_removed, outcome_.placeholders_removed);
    append(w.placeholders_kept, outcome_.placeholders_kept);
    for (auto& x : outcome_.reapplied) w.reapplied.push_back(std::move(x));
    outcome_.reapplied.clear();
    w.reapplied_count += outcome_.reapplied_count;
    outcome_.reapplied_count = 0;
    if (!outcome_.stopped.empty()) w.stopped = std::move(outcome_.stopped);
}

void Guard::abandon() {
    if (cloned_) {
        end();
        return;
    }
    watch_.reset();
    placeholders_ = guard::Placeholders();
    journal_.done();
    users_ = guard::RootUsers();
}

namespace {

// The network proxy serving the sandbox (proxy mode).
class NetProxy : public Component {
public:
    // The proxy's log opens before clone, so a bad --net-log fails before anything runs.
    Result<void> prepare(const plan::Plan& plan, Spawn&) override {
        auto p = net::Proxy::create(*plan.net);
        if (!p) return std::move(p).error();
        proxy_ = std::move(*p);
        return {};
    }
    // The interception CA is made after clone and before the child runs: its key is
    // then in no memory the sandbox was copied from.
    Result<void> after_clone(pid_t) override { return proxy_->prepare_ca(); }
    // Set up on the loop's thread: nothing of the proxy's runs before it is ready.
    // Without the proxy the sandbox would run with no way out and no word why: a
    // failure here ends the launch.
    Result<void> attach(launch::Process& proc, Loop& loop) override {
        return loop.run_here([&] {
            return proxy_->serve(loop.io(), proc.take_proxy_socket(), proc.take_gateway_sockets());
        });
    }
    // The command is gone: its connections end (each is logged) and are counted.
    void end() override { counters_ = proxy_->stop(); }
    Result<void> hand_over() override { return proxy_->put_log_in_place(); }
    void finish(RunResult& r) override {
        r.network_denials = counters_.denied;
        r.network_allowed = counters_.allowed;
        r.refusals.insert(r.refusals.begin(), counters_.refusals.begin(), counters_.refusals.end());
        r.refusals_more += counters_.refusals_more;
        // The proxy failed during the run (the sandbox lost its way out): the record
        // says so rather than only showing fewer connections.
        if (!counters_.failure.empty()) r.degraded.push_back(counters_.failure);
    }

private:
    std::unique_ptr<net::Proxy> proxy_;
    net::Counters counters_;
};

// The seccomp log, opened before clone so that a bad --seccomp-log fails before
// anything runs; one in a folder the sandbox writes is kept aside until the end
// (sys::HostLog).
class SeccompLog : public Component {
public:
    Result<void> prepare(const plan::Plan& plan, Spawn& spawn) override {
        auto log = sys::HostLog::open(plan.seccomp_log, sys::HostWrite::truncate, plan.host_files, "seccomp log");
        if (!log) return std::move(log).error();
        log_ = std::move(*log);
        spawn.seccomp_log = log_.fd();
        return {};
    }
    Result<void> hand_over() override { return log_.put_in_place(); }

private:
    sys::HostLog log_;
};

// Published ports' listeners on the host.
class PublishedPorts : public Component {
public:
    // They listen before anything is cloned: a port in use is an error before the
    // command starts.
    Result<void> prepare(const plan::Plan& plan, Spawn&) override {
        auto pub = net::Publisher::bind(plan.publish);
        if (!pub) return std::move(pub).error();
        publisher_ = std::move(*pub);
        return {};
    }
    // On the loop's thread, like the proxy.
    Result<void> attach(launch::Process& proc, Loop& loop) override {
        return loop.run_here(
            [&] { return publisher_->serve(loop.io(), proc.take_publish_socket()); });
    }
    void end() override { publisher_->stop(); }  // the host port is free again

private:
    std::unique_ptr<net::Publisher> publisher_;
};

// Overlay mode: the run's directory and layers exist before clone; a start that fails
// removes them again, one that succeeds keeps them (also when the Run is dropped
// without wait()).
class OverlayState : public Component {
public:
    explicit OverlayState(std::vector<std::string> protect) : protect_(std::move(protect)) {}
    Result<void> prepare(const plan::Plan& plan, Spawn&) override {
        auto ov = workspace::OverlayRun::start(plan, protect_);
        if (!ov) return std::move(ov).error();
        overlay_ = std::move(*ov);
        return {};
    }
    // Nothing of the sandbox is left: its upper layer is what it wrote.
    void finish(RunResult& r) override { overlay_->finish(r.workspace); }
    void abandon() override { overlay_->abandon(); }

private:
    std::vector<std::string> protect_;
    std::unique_ptr<workspace::OverlayRun> overlay_;
};

// Clone mode: the clone is made here, on the host, where the plan binds the workspace
// from; `explain` prints the same plan but never comes here.
class CloneState : public Component {
public:
    explicit CloneState(const workspace::CloneOptions& o) : options_(o) {}
    // Started and dropped without wait(): the run's state is kept, and run.json says
    // so (no git runs).
    ~CloneState() override {
        if (clone_) clone_->launched();
    }
    Result<void> prepare(const plan::Plan& plan, Spawn&) override {
        auto c = workspace::CloneRun::prepare(plan, options_);
        if (!c) return std::move(c).error();
        clone_ = std::move(*c);
        return {};
    }
    // Nothing of the sandbox is left (its pid namespace died with its init): only now
    // is the clone looked at and its work brought back.
    void finish(RunResult& r) override {
        clone_->launched();
        // The guard's part (the watch's re-applications) is added after this one.
        r.workspace = clone_->finish();
    }
    // Nothing ran: the clone and its state go.
    void abandon() override { clone_.reset(); }

private:
    workspace::CloneOptions options_;
    std::unique_ptr<workspace::CloneRun> clone_;
};

// Direct mode with a writable workspace: what the run left there that would run on
// the host is looked for after it (lib/workspace/audit.hpp).
class DirectAudit : public Component {
public:
    // `protect`: the policy's patterns (workspace::protect_patterns).
    explicit DirectAudit(std::vector<std::string> protect) { audit_.protect = std::move(protect); }
    // Taken before the clone (this component is prepared last): whatever the run
    // writes has a later ctime. The coarse clock the kernel stamps files with lags
    // this one by up to a tick.
    Result<void> prepare(const plan::Plan& plan, Spawn&) override {
        audit_.workspace = plan.workspace;
        ::clock_gettime(CLOCK_REALTIME, &audit_.since);
        // 50 ms: several ticks at any HZ.
        if (audit_.since.tv_nsec >= 50'000'000) {
            audit_.since.tv_nsec -= 50'000'000;
        } else {
            audit_.since.tv_sec -= 1;
            audit_.since.tv_nsec += 950'000'000;
        }
        // Neither a protected name (read-only) nor a hidden one (masked) can be
        // written from inside: a newer one is the host's (another run's placeholder).
        for (const auto& g : plan.guards) audit_.protected_paths.push_back(g.host);
        audit_.before = plan.workspace_scan;
        kept_ = KeptWalkOf(plan);
        return {};
    }
    // Through the view, only what the sandbox could write is the run's: a protected
    // name changed during the run is the host's (view::Server::could_write).
    Result<void> attach(launch::Process& proc, Loop& loop) override {
        (void)loop;
        if (const view::Server* v = proc.view())
            audit_.could_write = [v](const std::string& rel, const std::vector<std::pair<dev_t, ino_t>>& chain) {
                return v->could_write(rel, chain);
            };
        return {};
    }
    // Every process of the sandbox is gone: nothing can change the workspace under
    // the audit but the user. Its walk is the next run's start.
    void finish(RunResult& r) override {
        sys::Scan walked;
        audit_.walked = &walked;
        r.workspace.audit = workspace::audit_direct(audit_);
        (void)keep_walk(kept_, walked);
    }

private:
    workspace::AuditOptions audit_;
    KeptWalkOf kept_;
};

// The plan's walk of the workspace kept for the next run where no check after the
// run walks it again (overlay and clone mode, a read-only workspace): the sandbox
// did not write the workspace, so what the plan read holds.
class KeptWalk : public Component {
public:
    Result<void> prepare(const plan::Plan& plan, Spawn&) override {
        kept_ = KeptWalkOf(plan);
        return {};
    }
    void finish(RunResult&) override {
        if (kept_.plan_walk) (void)keep_walk(kept_, *kept_.plan_walk);
    }

private:
    KeptWalkOf kept_;
};

}  // namespace

// The order is every stage's (abandon and destruction go in reverse):
// - the cgroup first: it exists before anything else of the run, its finish() starts
//   the record's degraded list that the others add to, and it reads the statistics
//   before the workspace's end runs programs of its own (clone mode's git);
// - the relay, then the proxy and the published ports: what the sandbox wrote
//   reaches the caller and the terminal is given back, then their connections drain
//   on the loop (the loop itself ends after them, in run.cc);
// - the workspace's run state, finished once nothing of the sandbox is left;
// - the guard: prepared after those, just before the clone (the setup lock of the
//   directories runs share is held no longer than it must be), ended after the proxy
//   (its journal lists the proxy's CA directory), so every finish, direct mode's
//   check among them, runs with the placeholders gone; its part of the result is
//   added to the workspace state's (which clone mode's finish replaces);
// - direct mode's check last, so that its clock is read as late before clone as can be.
Components components_for(const plan::Plan& plan, const policy::Policy& policy,
                          const SpawnOptions& options, StdioRelay*& relay) {
    Components list;
    list.add(std::make_unique<Enforcer>());
    tty::Options ro;
    ro.fds = {options.stdin_fd, options.stdout_fd, options.stderr_fd};
    ro.mode =
        options.terminal == SpawnOptions::Terminal::pipes ? tty::Mode::pipes : tty::Mode::automatic;
    ro.raw_output = options.tty_raw;
    ro.filter_pipes = options.filter_pipes;
    auto stdio = std::make_unique<StdioRelay>(ro);
    relay = stdio.get();
    list.add(std::move(stdio));
    if (plan.seccomp && !plan.seccomp_log.empty()) list.add(std::make_unique<SeccompLog>());
    if (plan.net) list.add(std::make_unique<NetProxy>());
    if (!plan.publish.empty()) list.add(std::make_unique<PublishedPorts>());
    if (plan.workspace_mode == policy::WorkspaceMode::overlay)
        list.add(std::make_unique<OverlayState>(workspace::protect_patterns(policy)));
    if (plan.workspace_mode == policy::WorkspaceMode::clone) {
        workspace::CloneOptions co;
        co.commit_uncommitted = policy.workspace_commit_uncommitted.value;
        list.add(std::make_unique<CloneState>(co));
    }
    if (Guard::wanted(plan)) list.add(std::make_unique<Guard>());
    if (plan.workspace_mode == policy::WorkspaceMode::direct && !plan.workspace.empty() &&
        policy.workspace.value == policy::WorkspaceAccess::rw)
        list.add(std::make_unique<DirectAudit>(workspace::protect_patterns(policy)));
    else if (!plan.kept_scan.name.empty() && plan.workspace_scan)
        list.add(std::make_unique<KeptWalk>());
    return list;
}

}  // namespace agentjail::run
