// SPDX-License-Identifier: Apache-2.0
// One run in order: the plan (built once, checked, shown), the workspace's run
// state, the stdio relay, the cgroup, the proxy and published ports, the launch,
// then at wait() the result assembled once (exit, limits, network, workspace) and
// its record. The C++ API (lib/api) and through it the C API are thin over this.
#include "run/run.hpp"

#include "run/enforce.hpp"
#include "run/host_actions.hpp"
#include "policy/policy.hpp"
#include "run/loop.hpp"
#include "run/record.hpp"
#include "sys/host_file.hpp"
#include "launch/launch.hpp"
#include "net/proxy.hpp"
#include "net/publish.hpp"
#include "fs/leftovers.hpp"
#include "plan/plan.hpp"
#include "policy/policy.hpp"
#include "tty/relay.hpp"
#include "util/fault.hpp"
#include "workspace/overlay_run.hpp"
#include "workspace/clone.hpp"
#include "workspace/runs.hpp"
#include "workspace/audit.hpp"
#include "util/strings.hpp"

#include <time.h>

#include <fcntl.h>
#include <stdlib.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <optional>
#include <string_view>

namespace agentjail::run {

namespace {

// Ends what waits on the run's loop, then the loop, in the one order that lets each
// finish: the relay (what the sandbox wrote reaches the caller, the terminal is given
// back), the proxy and the published ports (their connections drain on the loop),
// then the loop itself; the sandbox is gone by then, its supervisor done. On every
// path: wait(), a sandbox dropped without it, a start that failed.
void end_on_loop(std::unique_ptr<tty::Relay>& relay, std::unique_ptr<net::Proxy>& proxy,
                 std::unique_ptr<net::Publisher>& publisher, std::unique_ptr<Loop>& loop, bool release) {
    if (relay) relay->finish();
    if (proxy) (void)proxy->stop();
    if (publisher) publisher->stop();
    if (loop) loop->finish();
    if (release) {
        proxy.reset();
        publisher.reset();
    }
}

}  // namespace

// The state of a run: the launched process and, once waited for, its result (so a
// second wait() answers the same instead of failing).
struct Run::State {
public:
    State(std::unique_ptr<Loop> lp, Enforcer e, std::unique_ptr<tty::Relay> r, launch::Process p)
        : loop(std::move(lp)), enforcer(std::move(e)), relay(std::move(r)), proc(std::move(p)) {}
    // The run's event loop, which the supervisor, the relay, the proxy and the
    // published ports wait on: declared first, so it outlives all of them.
    std::unique_ptr<Loop> loop;
    // Declared before proc: the Process (and its supervisor, which may call the
    // cgroup's kill hook) goes first, then the cgroup.
    Enforcer enforcer;
    std::unique_ptr<tty::Relay> relay;
    launch::Process proc;
    std::optional<RunResult> result;
    // The network proxy serving the sandbox (proxy mode only).
    std::unique_ptr<net::Proxy> proxy;
    // Published ports' listeners on the host (closed when the run ends).
    std::unique_ptr<net::Publisher> publisher;
    bool shares_host_network = false;
    // Overlay mode: the run's state (upper layer, start snapshot), finished in wait().
    std::unique_ptr<workspace::OverlayRun> overlay;
    // Clone mode: the run's clone, audited and fetched back by wait(), only once the
    // sandbox is gone. Dropped without wait(), it only marks run.json (no git runs).
    std::unique_ptr<workspace::CloneRun> clone;
    // Direct mode with a writable workspace: what the run left there that would run
    // on the host is looked for after it (lib/workspace/audit.hpp).
    std::optional<workspace::AuditOptions> audit;
    // SpawnOptions::result_file, written by wait() under the plan's rules.
    std::string result_file;
    sys::HostFileRules result_rules;
    std::chrono::system_clock::time_point start;
    int stop_signal = 0;  // Sandbox::stop's first signal

    // Dropped without wait(): the sandbox is killed and reaped while the loop still
    // runs (its supervisor ends there), then the rest ends in order.
    ~State() {
        proc.kill_and_reap();
        end_on_loop(relay, proxy, publisher, loop, false);
    }
};

namespace {

Error invalid(const char* what, const std::string& message) {
    return Error(ErrorKind::invalid_input, EINVAL, std::string("api: ") + what + ": " + message);
}

// The stage a failure is reported at, unless a deeper layer already said.
Error staged(Error e, ErrorStage stage) {
    e.at(stage);
    return e;
}

// The caller's side of the run from the options, in place of this process's: its
// identity, environment, home and directory. Fails closed on a root caller that
// names no identity when it must (the C API), before anything is planned.
Result<void> apply_caller(const SpawnOptions& o, const policy::Policy& p, plan::HostFacts& host) {
    if (o.uid.has_value() != o.gid.has_value())
        return invalid("spawn", "give both the uid and the gid to run the command as, or neither");
    if (o.environ) host.environ = *o.environ;
    if (!o.cwd.empty()) {
        if (o.cwd[0] != '/') return invalid("spawn", "the caller's directory '" + o.cwd + "' is not absolute");
        char* real = ::realpath(o.cwd.c_str(), nullptr);
        if (real == nullptr) {
            int e = errno;
            return Error(ErrorKind::invalid_input, e, "api: spawn: the caller's directory " + o.cwd + ": " +
                                                          util::errno_text(e));
        }
        host.cwd = real;
        ::free(real);
    }
    if (o.uid) return host.run_as_identity(*o.uid, *o.gid, o.home);
    if (o.root_needs_identity && host.uid == 0 && !p.allow_root.value)
        return Error(ErrorKind::invalid_input, EPERM,
                     "the caller is root and the policy does not allow root inside: give the uid and gid to "
                     "run the command as, or set [process] allow_root = true in the policy");
    if (!o.home.empty()) return host.run_as_identity(host.uid, host.gid, o.home);
    return {};
}

// The caller's descriptors for the command: each open now and above 2 (0-2 are
// the relayed stdio), so the launch's own descriptors, opened later, never share
// their numbers.
Result<void> check_pass_fds(const std::vector<int>& fds) {
    for (size_t i = 0; i < fds.size(); ++i) {
        int fd = fds[i];
        if (fd < 3) return invalid("pass_fds", std::to_string(fd) + " is below 3 (0, 1 and 2 are the stdio options)");
        if (::fcntl(fd, F_GETFD) < 0)
            return Error(ErrorKind::invalid_input, EBADF,
                         "api: pass_fds: " + std::to_string(fd) + " is not an open descriptor");
        if (std::find(fds.begin(), fds.begin() + static_cast<std::ptrdiff_t>(i), fd) != fds.begin() + static_cast<std::ptrdiff_t>(i))
            return invalid("pass_fds", std::to_string(fd) + " is named twice");
    }
    return {};
}

}  // namespace


Run::Run(std::unique_ptr<State> s) : l_(std::move(s)) {}
// State owns the launch::Process, whose destructor kills a sandbox still running.
Run::~Run() = default;

Result<std::unique_ptr<Run>> Run::start(const policy::Policy& policy, const std::vector<std::string>& argv,
                                        const SpawnOptions& options) {
    if (argv.empty() || argv[0].empty())
        return Error(ErrorKind::invalid_input, EINVAL, "spawn: no command given");
    // Overrides may have broken a cross-field rule: check before anything is planned.
    if (auto v = policy::validate(policy); !v) return staged(std::move(v).error(), ErrorStage::policy);
    // What runs whose launcher was killed left on the host (fs/leftovers.hpp), gone
    // before this run looks at the host: its plan must not build on their placeholders.
    (void)fs::sweep_journals();
    const auto start = std::chrono::system_clock::now();
    auto host = plan::HostFacts::current();
    if (!host) return staged(std::move(host).error(), ErrorStage::plan);
    if (auto r = apply_caller(options, policy, *host); !r) return staged(std::move(r).error(), ErrorStage::plan);
    if (auto r = check_pass_fds(options.pass_fds); !r) return staged(std::move(r).error(), ErrorStage::plan);
    if (options.cgroup == CgroupPlacement::under && options.cgroup_parent.empty())
        return invalid("cgroup", "the placement under a given cgroup needs the cgroup parent").at(ErrorStage::plan);
    if (!options.result_file.empty() && options.result_file[0] != '/')
        return invalid("result_file", "'" + options.result_file + "' is not an absolute path").at(ErrorStage::plan);
    auto plan = plan::build(policy, argv, *host);
    if (!plan) return staged(std::move(plan).error(), ErrorStage::plan);
    plan->pass_fds = options.pass_fds;
    plan->limits.placement = options.cgroup;
    plan->limits.parent = options.cgroup_parent;
    // Clone and overlay modes keep the run's state in the user's home, made by this
    // process: as root for another uid it would be root's, in a tree that user controls.
    if (plan->set_ids && plan->workspace_mode != policy::WorkspaceMode::direct)
        return invalid("spawn", "workspace modes clone and overlay are not available for a run as another uid (" +
                                    std::to_string(plan->uid) + "); use mode \"direct\"")
            .at(ErrorStage::plan);
    // The result file obeys the plan's rules like the logs (never where the sandbox
    // writes, never through a link): refused now, before anything runs.
    if (!options.result_file.empty())
        if (auto r = sys::check_host_file(options.result_file, plan->host_files, "result file"); !r)
            return staged(std::move(r).error(), ErrorStage::plan);
    if (options.check_plan)
        if (auto r = options.check_plan(*plan); !r) return staged(std::move(r).error(), ErrorStage::plan);
    if (options.on_plan) options.on_plan(plan::to_text(*plan), plan->notes);
    // What the plan lists to make on the host (the agent's state, the placeholder
    // key): the planner made none of it, so explain and this run share one plan.
    if (auto r = carry_out(*plan, plan->warnings); !r) return staged(std::move(r).error(), ErrorStage::prepare);
    if (options.on_warning)
        for (const auto& w : plan->warnings) options.on_warning(w);
    // Overlay mode: the run's directory and layers exist before clone; a launch that
    // fails from here on removes them again (the guard), one that succeeds keeps them.
    std::unique_ptr<workspace::OverlayRun> overlay;
    struct AbandonGuard {
        std::unique_ptr<workspace::OverlayRun>* run;
        ~AbandonGuard() {
            if (*run) (*run)->abandon();
        }
    } abandon_guard{&overlay};
    if (plan->workspace_mode == policy::WorkspaceMode::overlay) {
        auto ov = workspace::OverlayRun::start(*plan, workspace::protect_patterns(policy));
        if (!ov) return staged(std::move(ov).error(), ErrorStage::prepare);
        overlay = std::move(*ov);
    }
    // Clone mode: the clone is made here, on the host, where the plan binds the
    // workspace from; `explain` prints the same plan but never comes here.
    std::unique_ptr<workspace::CloneRun> clone;
    if (plan->workspace_mode == policy::WorkspaceMode::clone) {
        workspace::CloneOptions co;
        co.commit_uncommitted = policy.workspace_commit_uncommitted.value;
        auto c = workspace::CloneRun::prepare(*plan, co);
        if (!c) return staged(std::move(c).error(), ErrorStage::prepare);
        clone = std::move(*c);
    }
    // The command's stdio: pipes or a pty of its own, relayed; never the caller's files.
    tty::Options ro;
    ro.fds = {options.stdin_fd, options.stdout_fd, options.stderr_fd};
    ro.mode = options.terminal == SpawnOptions::Terminal::pipes ? tty::Mode::pipes : tty::Mode::automatic;
    ro.raw_output = options.tty_raw;
    ro.filter_pipes = options.filter_pipes;
    ro.have_devpts = false;
    for (const auto& m : plan->mounts)
        if (m.kind == plan::MountKind::devpts && m.dst == "/dev/pts") ro.have_devpts = true;
    auto relay = tty::Relay::prepare(ro);
    if (!relay) return staged(std::move(relay).error(), ErrorStage::prepare);
    const tty::ChildSide& side = (*relay)->child();
    launch::Stdio stdio;
    stdio.in = side.fd[0];
    stdio.out = side.fd[1];
    stdio.err = side.fd[2];
    stdio.pty = side.pty;
    if (side.have_termios) stdio.pty_termios = &side.tio;
    if (side.have_winsize) stdio.pty_winsize = &side.ws;
    stdio.close_in_child = side.relay_fds;
    // The cgroup exists before clone, so the init is inside it from its first instruction.
    auto enforcer = run::Enforcer::prepare(*plan);
    if (!enforcer) return staged(std::move(enforcer).error(), ErrorStage::prepare);
    // The proxy's log opens before clone, so a bad --net-log fails before anything runs.
    std::unique_ptr<net::Proxy> proxy;
    if (plan->net) {
        auto p = net::Proxy::create(*plan->net);
        if (!p) return staged(std::move(p).error(), ErrorStage::prepare);
        proxy = std::move(*p);
    }
    // Published ports listen on the host before anything is cloned: a port in use is
    // an error before the command starts.
    std::unique_ptr<net::Publisher> publisher;
    if (!plan->publish.empty()) {
        auto pub = net::Publisher::bind(plan->publish);
        if (!pub) return staged(std::move(pub).error(), ErrorStage::prepare);
        publisher = std::move(*pub);
    }
    launch::Hooks hooks = enforcer->hooks();
    if (proxy) {
        // The interception CA is made after clone and before the child runs: its
        // key is then in no memory the sandbox was copied from.
        hooks.before_release = [prev = std::move(hooks.before_release), px = proxy.get()](pid_t pid) -> Result<void> {
            if (prev)
                if (auto r = prev(pid); !r) return r;
            return px->prepare_ca();
        };
    }
    // Taken before the clone: whatever the run writes has a later ctime. The coarse
    // clock the kernel stamps files with lags this one by up to a tick.
    std::optional<workspace::AuditOptions> audit;
    if (plan->workspace_mode == policy::WorkspaceMode::direct && !plan->workspace.empty() &&
        policy.workspace.value == policy::WorkspaceAccess::rw) {
        audit.emplace();
        audit->workspace = plan->workspace;
        ::clock_gettime(CLOCK_REALTIME, &audit->since);
        // 50 ms: several ticks at any HZ.
        if (audit->since.tv_nsec >= 50'000'000) {
            audit->since.tv_nsec -= 50'000'000;
        } else {
            audit->since.tv_sec -= 1;
            audit->since.tv_nsec += 950'000'000;
        }
        // Neither a protected name (read-only) nor a hidden one (masked) can be
        // written from inside: a newer one is the host's (another run's placeholder).
        for (const auto& g : plan->guards) audit->protected_paths.push_back(g.host);
    }
    // The run's loop, which everything of the run waits on from the spawn on; on a
    // failure from here on, what waits on it ends before it does, and it ends before
    // any of them is destroyed.
    auto loop = std::make_unique<Loop>();
    struct EndOnLoop {
        std::unique_ptr<tty::Relay>& relay;
        std::unique_ptr<net::Proxy>& proxy;
        std::unique_ptr<net::Publisher>& publisher;
        std::unique_ptr<Loop>& loop;
        // Declared before the Process: it is gone (killed and reaped) by now.
        ~EndOnLoop() { end_on_loop(relay, proxy, publisher, loop, true); }
    } end_on_failure{*relay, proxy, publisher, loop};
    loop->start();
    auto proc = launch::spawn(*plan, stdio, loop->io(), hooks);
    if (!proc) return staged(std::move(proc).error(), ErrorStage::launch);
    loop->stops(proc->pidfd());
    // Set up on the loop's thread: nothing of theirs runs before they are ready.
    if (proxy) {
        // Without the proxy the sandbox would run with no way out and no word why:
        // a failure here ends the launch (the Process's destructor kills it).
        auto served = loop->run_here(
            [&] { return proxy->serve(loop->io(), proc->take_proxy_socket(), proc->take_gateway_sockets()); });
        if (!served) return staged(std::move(served).error(), ErrorStage::launch);
    }
    if (publisher) {
        auto served = loop->run_here([&] { return publisher->serve(loop->io(), proc->take_publish_socket()); });
        if (!served) return staged(std::move(served).error(), ErrorStage::launch);
    }
    if (auto r = (*relay)->start(proc->take_pty_master(), proc->pidfd(), loop->io()); !r)
        return staged(std::move(r).error(), ErrorStage::launch);
    if (fault::hit("run.after-spawn"))
        return Error(ErrorKind::setup, EIO, "an injected fault after the spawn").at(ErrorStage::launch);
    auto launched = std::make_unique<State>(std::move(loop), std::move(*enforcer), std::move(*relay), std::move(*proc));
    launched->proxy = std::move(proxy);
    launched->publisher = std::move(publisher);
    launched->shares_host_network = plan->net_mode == policy::NetMode::host;
    launched->overlay = std::move(overlay);
    if (clone) {
        clone->launched();
        launched->clone = std::move(clone);
    }
    launched->audit = std::move(audit);
    launched->result_file = options.result_file;
    launched->result_rules = plan->host_files;
    launched->start = start;
    return std::unique_ptr<Run>(new Run(std::move(launched)));
}

pid_t Run::pid() const noexcept { return l_ ? l_->proc.pid() : -1; }

int Run::pidfd() const noexcept { return l_ ? l_->proc.pidfd() : -1; }

Result<void> Run::kill(int sig) {
    if (sig < 0 || sig >= 65)
        return Error(ErrorKind::invalid_input, EINVAL, "kill: bad signal " + std::to_string(sig));
    // After wait() the init is gone and its pid may be reused: never signal it again.
    if (l_->result) return Error(ErrorKind::invalid_input, ESRCH, "kill: the sandbox has exited");
    return l_->proc.kill(sig);
}

Result<void> Run::stop(int sig) {
    if (sig <= 0 || sig >= 65)
        return Error(ErrorKind::invalid_input, EINVAL, "stop: bad signal " + std::to_string(sig));
    if (l_->result) return Error(ErrorKind::invalid_input, ESRCH, "stop: the sandbox has exited");
    if (l_->stop_signal == 0) l_->stop_signal = sig;
    auto r = l_->proc.kill(sig);
    l_->proc.stop();
    return r;
}

Result<RunResult> Run::wait() {
    if (l_->result) return *l_->result;
    auto r = l_->proc.wait();
    if (r) r->stop_signal = l_->stop_signal;
    // Everything the sandbox wrote reaches the caller before wait() returns.
    if (l_->relay) l_->relay->finish();
    if (!r) return staged(std::move(r).error(), ErrorStage::wait);
    if (l_->relay && !l_->relay->failure().empty() && r->internal_error.empty())
        r->internal_error = l_->relay->failure();
    l_->enforcer.finish(*r);
    if (l_->publisher) l_->publisher->stop();  // the host port is free again
    if (l_->proxy) {
        // The command is gone: end its connections (each is logged) and count them.
        net::Counters c = l_->proxy->stop();
        r->network_denials = c.denied;
        r->network_allowed = c.allowed;
        // The proxy failed during the run (the sandbox lost its way out): the
        // record says so rather than only showing fewer connections.
        if (!c.failure.empty()) r->degraded.push_back(c.failure);
    }
    end_on_loop(l_->relay, l_->proxy, l_->publisher, l_->loop, false);  // nothing waits on it any more
    if (auto f = l_->loop->failure(); !f.empty()) r->degraded.push_back(f);
    l_->proc.journal_done();  // the placeholders and the CA directory are gone
    if (l_->shares_host_network)
        r->degraded.push_back("net-ns: the sandbox shares the host's network ([network] mode = \"host\")");
    // Nothing of the sandbox is left: its upper layer is what it wrote.
    if (l_->overlay) l_->overlay->finish(r->workspace);
    // Nothing of the sandbox is left (its pid namespace died with its init):
    // only now is the clone looked at and its work brought back.
    if (l_->clone) {
        // What the guard watch recorded for the hidden names stays beside the clone's.
        WorkspaceOutcome w = l_->clone->finish();
        w.reapplied = std::move(r->workspace.reapplied);
        w.reapplied_count = r->workspace.reapplied_count;
        w.stopped = std::move(r->workspace.stopped);
        r->workspace = std::move(w);
    }
    // Every process of the sandbox is gone: nothing can change the workspace under
    // the audit but the user.
    if (l_->audit) r->workspace.audit = workspace::audit_direct(*l_->audit);
    l_->result = *r;
    // Renamed over the target from a fresh name (sys/host_file.hpp): a reader never
    // sees half a record. A record that cannot be written is this wait's error; the
    // result stays, and a second wait() answers it.
    if (!l_->result_file.empty())
        if (auto w = sys::replace_host_file(l_->result_file, run::record_json(*r, l_->start, 2) + "\n",
                                            l_->result_rules, "result file");
            !w)
            return staged(std::move(w).error(), ErrorStage::wait);
    return *r;
}

int Run::job_fd() const noexcept { return l_ ? l_->proc.events_fd() : -1; }

std::optional<JobChange> Run::next_job_change() {
    if (!l_ || l_->result) return std::nullopt;
    auto c = l_->proc.next_job_change();
    if (!c) return std::nullopt;
    JobChange j;
    j.stopped = c->stopped;
    j.sig = c->sig;
    j.by_user = c->stopped && l_->relay && l_->relay->take_user_suspend();
    return j;
}

bool Run::has_terminal() const noexcept { return l_ && l_->relay && l_->relay->uses_pty(); }

void Run::terminal_resized() {
    if (l_ && l_->relay) l_->relay->resize();
}

bool Run::suspend() {
    if (!l_ || l_->result) return false;
    const bool frozen = l_->proc.freeze();
    suspend_terminal();
    return frozen;
}

void Run::resume() {
    if (!l_ || l_->result) return;
    resume_terminal();
    l_->proc.thaw();
}

void Run::suspend_terminal() {
    if (l_ && l_->relay) l_->relay->suspend_terminal();
}

void Run::resume_terminal() {
    if (l_ && l_->relay) l_->relay->resume_terminal();
}

}  // namespace agentjail::run
