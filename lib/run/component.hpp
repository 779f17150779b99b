// SPDX-License-Identifier: Apache-2.0
// A run's components: the one interface that each part of a run (the cgroup, the
// stdio relay, the proxy, the published ports, the workspace's run state, the guard,
// direct mode's check after the run) implements, and their ordered list, which the run
// (run.cc) drives through the stages of a launch. The facilities themselves know
// nothing of it: each is wrapped by a small adapter here in lib/run (parts.hpp).
#pragma once

#include "base/error.hpp"
#include "base/outcome.hpp"
#include "launch/launch.hpp"

#include <sys/types.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

namespace agentjail {
namespace plan {
struct Plan;
}

namespace run {

class Loop;

// What the components ask of the launch, filled in by their prepare().
struct Spawn {
    launch::Stdio stdio;  // the command's 0, 1, 2: the relay's pipes or pty
    int cgroup_fd = -1;   // clone the init straight into this cgroup (CLONE_INTO_CGROUP)
    // The sandbox's cgroup v1 freezer.state, open for writing (the Enforcer's; -1:
    // none): the guard watch's helper freezes every process of the sandbox with it
    // while it re-applies a guarded name's protection, and thaws them (also when
    // agentjail was killed meanwhile: a frozen init could not notice that and end the
    // sandbox).
    int freeze_fd = -1;
    // Freezes (true) or thaws (false) every process of the sandbox through its cgroup
    // and waits up to the milliseconds given (launch::Hooks::freeze_group); the
    // Enforcer's, where the group can (cgroup v2). null: none.
    std::function<bool(bool, int)> freeze_group;
    // The guard's watch on the host (launch::Hooks::watch), set by its prepare().
    launch::HostWatch* watch = nullptr;
    // A component's before_fork() has work to do: only then does the init wait for it
    // before forking the command (a wait that costs every other launch a round trip).
    bool before_fork = false;
    // The seccomp log, open (launch::Hooks::seccomp_log; -1: the plan's path, if any,
    // is opened by the launch).
    int seccomp_log = -1;
};

class Component {
public:
    virtual ~Component() = default;

    // Before clone, on the host: makes what the run needs and says in `spawn` what
    // the launch needs. An error ends the start (every component prepared before it
    // is abandoned, in reverse order); a component that fails leaves nothing behind.
    virtual Result<void> prepare(const plan::Plan& plan, Spawn& spawn) = 0;
    // After clone: the init's id maps are written and it has run nothing yet (it
    // waits to be released). An error aborts the launch.
    virtual Result<void> after_clone(pid_t init) {
        (void)init;
        return {};
    }
    // Once the init was released to build the root, before it forks the command (it
    // waits for this only where a prepare() set Spawn::before_fork): nothing of the
    // command has run yet. An error aborts the launch.
    virtual Result<void> before_fork(pid_t init) {
        (void)init;
        return {};
    }
    // The sandbox's setup is done (its root is built, the command was exec'd), inside
    // the launch, before it returns: what the run held only for the setup goes (the
    // guard's setup lock of the directories runs share).
    virtual void setup_done() {}
    // After the spawn, with what the init handed back (the proxy's and the gateways'
    // listeners, the publish socket, the pty master): starts its work on the run's
    // loop. An error ends the start (the sandbox is killed).
    virtual Result<void> attach(launch::Process& proc, Loop& loop) {
        (void)proc;
        (void)loop;
        return {};
    }
    // The supervisor kills the sandbox (the kill grace ran out, a guarded name could
    // not be covered again, the supervisor itself failed), beside SIGKILL to the init:
    // on the loop's thread, while the run goes on.
    virtual void kill() noexcept {}
    // Ends what it has waiting on the run's loop, while the loop still runs, and what
    // must end on every path once the sandbox is gone (the init was reaped): the
    // guard's placeholders. On every path (wait(), a Run dropped without it, a start
    // that failed); idempotent.
    virtual void end() {}
    // After the init was reaped and everything was ended: its part of the result.
    virtual void finish(RunResult& r) { (void)r; }
    // After every finish(): the files the run wrote aside for the caller (a log the
    // sandbox could have reached: sys::HostLog) go to their paths. An error is the
    // run's wait()'s, like a result file that cannot be written.
    virtual Result<void> hand_over() { return {}; }
    // The start failed after this prepare() succeeded: what it made on the host for
    // the run goes again (nothing ran there that is worth keeping). Not called once
    // the start succeeded: from then on the run's state is the user's.
    virtual void abandon() {}
};

// The run's components in their one order, which every stage follows (abandon and
// destruction go in reverse): see parts.cc for why the order is what it is.
class Components {
public:
    Components() = default;
    Components(Components&&) noexcept = default;
    Components& operator=(Components&&) noexcept = default;
    // Destroys the components in reverse order.
    ~Components();

    void add(std::unique_ptr<Component> c) { list_.push_back(std::move(c)); }

    // Prepares each in order. On the first error the ones prepared before it are
    // abandoned, in reverse order, and the error is returned: nothing is left
    // prepared.
    Result<void> prepare(const plan::Plan& plan, Spawn& spawn);
    // The launch's hooks, each calling the prepared components in order. They point
    // at this list: take them from it in its final place, and keep it alive until the
    // launched Process was destroyed.
    launch::Hooks hooks(const Spawn& spawn);
    // Attaches each in order; stops at the first error.
    Result<void> attach(launch::Process& proc, Loop& loop);
    void end();
    void finish(RunResult& r);
    // Each prepared component's hand_over(), all of them; the first error.
    Result<void> hand_over();
    // The start failed: abandons the prepared ones in reverse order (once).
    void abandon();

private:
    std::vector<std::unique_ptr<Component>> list_;
    std::size_t prepared_ = 0;  // list_[0, prepared_) prepared, not abandoned
};

}  // namespace run
}  // namespace agentjail
