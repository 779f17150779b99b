// SPDX-License-Identifier: Apache-2.0
// One run in order: the plan (built once, checked, shown), its host actions, then
// the run's components (run/component.hpp: the cgroup, the stdio relay, the proxy
// and published ports, the workspace's run state, the guard, direct mode's check; run/parts.cc
// makes them from the plan), each prepared before the clone, called by the launch's
// hooks, attached to the run's loop after the spawn; at wait() each ended and each
// finishing its part of the result, in order, and the record. The C++ API (lib/api) and through it the
// C API are thin over this.
#include "run/run.hpp"

#include "guard/leftovers.hpp"
#include "launch/launch.hpp"
#include "plan/plan.hpp"
#include "policy/policy.hpp"
#include "run/component.hpp"
#include "run/host_actions.hpp"
#include "run/loop.hpp"
#include "run/parts.hpp"
#include "run/record.hpp"
#include "sys/host_file.hpp"
#include "util/fault.hpp"
#include "util/strings.hpp"

#include <fcntl.h>
#include <stdlib.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <optional>

namespace agentjail::run {

// The state of a run: its components, the launched process and, once waited for, its
// result (so a second wait() answers the same instead of failing).
struct Run::State {
    // The run's event loop, which the supervisor and the components wait on: declared
    // first, so it outlives all of them.
    Loop loop;
    // Declared before proc: the Process (and its supervisor, which may call the
    // components' kill(): the cgroup's, and serves the guard's watch) goes first, then
    // the components, in reverse order.
    Components parts;
    StdioRelay* relay = nullptr;  // one of parts: job control and the terminal go to it
    std::optional<launch::Process> proc;
    bool started = false;  // start() returned it: the components' state is the run's
    std::optional<RunResult> result;
    // SpawnOptions::result_file, written by wait() under the plan's rules.
    std::string result_file;
    sys::HostFileRules result_rules;
    std::chrono::system_clock::time_point start;
    int stop_signal = 0;  // Sandbox::stop's first signal

    // Ends what waits on the run's loop, then the loop, in the one order that lets each
    // finish: the relay (what the sandbox wrote reaches the caller, the terminal is
    // given back), the proxy and the published ports (their connections drain on the
    // loop), the guard (the placeholders and the journal go), then the loop itself; the
    // sandbox is gone by then, its supervisor done.
    // On every path: wait(), a sandbox dropped without it, a start that failed.
    void end_on_loop() {
        parts.end();
        loop.finish();
    }

    // Dropped without wait(), or a start that failed: the sandbox is killed and reaped
    // while the loop still runs (its supervisor ends there), then the rest ends in
    // order; a start that failed undoes what its components made.
    ~State() {
        if (proc) proc->kill_and_reap();
        end_on_loop();
        if (!started) parts.abandon();
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
    // What runs whose launcher was killed left on the host (guard/leftovers.hpp), gone
    // before this run looks at the host: its plan must not build on their placeholders.
    (void)guard::sweep_journals();
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
    // The result file: never through a link, refused now, before anything runs. It
    // may lie where the sandbox writes (CI's `--result-file result.json` in the
    // checkout): written once every process of the sandbox is gone, under a fresh
    // name renamed over the path, whatever the sandbox left there is replaced, not
    // written through (result_file_rules).
    if (!options.result_file.empty())
        if (auto r = sys::check_replaceable_host_file(options.result_file, result_file_rules(plan->host_files), "result file");
            !r)
            return staged(std::move(r).error(), ErrorStage::plan);
    if (options.check_plan)
        if (auto r = options.check_plan(*plan); !r) return staged(std::move(r).error(), ErrorStage::plan);
    if (options.on_plan) options.on_plan(plan::to_text(*plan), plan->notes);
    // What the plan lists to make on the host (the agent's state, the placeholder
    // key): the planner made none of it, so explain and this run share one plan.
    if (auto r = carry_out(*plan, plan->warnings); !r) return staged(std::move(r).error(), ErrorStage::prepare);
    if (options.on_warning)
        for (const auto& w : plan->warnings) options.on_warning(w);
    auto run = std::make_unique<State>();
    run->start = start;
    run->result_file = options.result_file;
    run->result_rules = result_file_rules(plan->host_files);
    run->parts = components_for(*plan, policy, options, run->relay);
    // From here on a start that fails returns with `run` destroyed: its ~State ends and
    // undoes what was made, in order.
    Spawn spawn;
    if (auto r = run->parts.prepare(*plan, spawn); !r)
        return staged(std::move(r).error(), ErrorStage::prepare);
    // The run's loop, which everything of the run waits on from the spawn on.
    run->loop.start();
    auto proc = launch::spawn(*plan, spawn.stdio, run->loop.io(), run->parts.hooks(spawn));
    if (!proc) return staged(std::move(proc).error(), ErrorStage::launch);
    run->proc.emplace(std::move(*proc));
    run->loop.stops(run->proc->pidfd());
    if (auto r = run->parts.attach(*run->proc, run->loop); !r)
        return staged(std::move(r).error(), ErrorStage::launch);
    if (fault::hit("run.after-spawn"))
        return Error(ErrorKind::setup, EIO, "an injected fault after the spawn").at(ErrorStage::launch);
    run->started = true;
    return std::unique_ptr<Run>(new Run(std::move(run)));
}

pid_t Run::pid() const noexcept { return l_ ? l_->proc->pid() : -1; }

int Run::pidfd() const noexcept { return l_ ? l_->proc->pidfd() : -1; }

Result<void> Run::kill(int sig) {
    if (sig < 0 || sig >= 65)
        return Error(ErrorKind::invalid_input, EINVAL, "kill: bad signal " + std::to_string(sig));
    // After wait() the init is gone and its pid may be reused: never signal it again.
    if (l_->result) return Error(ErrorKind::invalid_input, ESRCH, "kill: the sandbox has exited");
    return l_->proc->kill(sig);
}

Result<void> Run::stop(int sig) {
    if (sig <= 0 || sig >= 65)
        return Error(ErrorKind::invalid_input, EINVAL, "stop: bad signal " + std::to_string(sig));
    if (l_->result) return Error(ErrorKind::invalid_input, ESRCH, "stop: the sandbox has exited");
    if (l_->stop_signal == 0) l_->stop_signal = sig;
    auto r = l_->proc->kill(sig);
    l_->proc->stop();
    return r;
}

Result<RunResult> Run::wait() {
    if (l_->result) return *l_->result;
    auto r = l_->proc->wait();
    if (!r) {
        // Everything the sandbox wrote reaches the caller before wait() returns; the
        // rest ends with the Run.
        l_->relay->end();
        return staged(std::move(r).error(), ErrorStage::wait);
    }
    r->stop_signal = l_->stop_signal;
    // Nothing waits on the loop any more, and what the run made on the host for the
    // sandbox (the placeholders, the CA directory, their journal) is gone.
    l_->end_on_loop();
    // Nothing of the sandbox is left: each component writes its part, in order.
    l_->parts.finish(*r);
    if (auto f = l_->loop.failure(); !f.empty()) r->degraded.push_back(f);
    l_->result = *r;
    // The logs kept aside (in a folder the sandbox wrote) go where they were asked
    // for; one that cannot is this wait's error, after the record is written.
    auto handed = l_->parts.hand_over();
    // Renamed over the target from a fresh name (sys/host_file.hpp): a reader never
    // sees half a record. A record that cannot be written is this wait's error; the
    // result stays, and a second wait() answers it.
    if (!l_->result_file.empty())
        if (auto w = sys::replace_host_file(l_->result_file, run::record_json(*r, l_->start, 2) + "\n",
                                            l_->result_rules, "result file");
            !w)
            return staged(std::move(w).error(), ErrorStage::wait);
    if (!handed) return staged(std::move(handed).error(), ErrorStage::wait);
    return *r;
}

int Run::job_fd() const noexcept { return l_ ? l_->proc->events_fd() : -1; }

std::optional<JobChange> Run::next_job_change() {
    if (!l_ || l_->result) return std::nullopt;
    auto c = l_->proc->next_job_change();
    if (!c) return std::nullopt;
    JobChange j;
    j.stopped = c->stopped;
    j.sig = c->sig;
    j.by_user = c->stopped && l_->relay->relay().take_user_suspend();
    return j;
}

bool Run::has_terminal() const noexcept { return l_ && l_->relay->relay().uses_pty(); }

void Run::terminal_resized() {
    if (l_) l_->relay->relay().resize();
}

bool Run::suspend() {
    if (!l_ || l_->result) return false;
    const bool frozen = l_->proc->freeze();
    suspend_terminal();
    return frozen;
}

void Run::resume() {
    if (!l_ || l_->result) return;
    resume_terminal();
    l_->proc->thaw();
}

void Run::suspend_terminal() {
    if (l_) l_->relay->relay().suspend_terminal();
}

void Run::resume_terminal() {
    if (l_) l_->relay->relay().resume_terminal();
}

}  // namespace agentjail::run
