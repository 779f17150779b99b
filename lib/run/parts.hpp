// SPDX-License-Identifier: Apache-2.0
// The run's components made from its plan: one small adapter per facility (the
// stdio relay, the proxy, the published ports, overlay and clone mode's run state,
// the guard, direct mode's check after the run; the cgroup's is the Enforcer), in
// the order every stage of the run follows.
#pragma once

#include "guard/leftovers.hpp"
#include "guard/placeholder.hpp"
#include "guard/shared_roots.hpp"
#include "guard/watch.hpp"
#include "launch/host_watch.hpp"
#include "run/component.hpp"
#include "run/options.hpp"
#include "tty/relay.hpp"

#include <memory>

namespace agentjail {
namespace policy {
struct Policy;
}

namespace run {

// The stdio relay: the command's stdio (pipes or a pty of its own), relayed; never
// the caller's files. The run's job control and terminal calls go to relay().
class StdioRelay : public Component {
public:
    explicit StdioRelay(const tty::Options& o) : options_(o) {}
    Result<void> prepare(const plan::Plan& plan, Spawn& spawn) override;
    Result<void> attach(launch::Process& proc, Loop& loop) override;
    // Everything the sandbox wrote reaches the caller, the terminal is given back.
    void end() override {
        if (relay_) relay_->finish();
    }
    void finish(RunResult& r) override;
    tty::Relay& relay() { return *relay_; }

private:
    tty::Options options_;
    std::unique_ptr<tty::Relay> relay_;
};

// The guard (lib/guard): an empty placeholder for each guarded name that does not
// exist, so the plan's mask or read-only bind has a mount point (removed after the
// run); the journal of what the run leaves on the host (those placeholders, the
// proxy's CA directory) for the next run to sweep after a killed launcher; the lock
// of the directories runs share (guard/shared_roots.hpp); and the watch that covers
// a hidden or protected name again when the host replaces it, which the supervisor
// serves as the launch's HostWatch.
class Guard : public Component, public launch::HostWatch {
public:
    // Every run that has guarded names, or a CA directory to write down.
    static bool wanted(const plan::Plan& plan);

    // Before the clone, in this order: the directories' setup locks, the journal, the
    // placeholders, the watch (parts.cc says why).
    Result<void> prepare(const plan::Plan& plan, Spawn& spawn) override;
    // The init waits to be released: the watch opens its namespaces now, while it is
    // still dumpable, and the journal names it (a sweep leaves the journal of a run
    // whose sandbox still lives).
    Result<void> after_clone(pid_t init) override;
    // The sandbox's root is built: other runs in these directories may go on.
    void setup_done() override { users_.setup_done(); }
    // The supervisor's launch::HostWatch, on the run's loop.
    int fd() const override { return watch_->fd(); }
    bool handle() override { return watch_->handle(); }
    // On every path once there was a sandbox (its init was reaped, its supervisor
    // joined: nothing inside can race the removals), after the proxy's end (its CA
    // directory is gone): the watch's outcome, the placeholders removed or handed over
    // to the runs still in their directories, then the journal that listed them.
    void end() override;
    // end()'s outcome added to the workspace's part of the result.
    void finish(RunResult& r) override;
    // The start failed before there was a sandbox (otherwise end() did it all): what
    // prepare made goes, newest first, while the setup locks are still held, so no
    // other run has seen it.
    void abandon() override;

private:
    // In the order they outlive each other: the locks outlive the removals, the
    // journal the placeholders it lists.
    guard::RootUsers users_;
    guard::Journal journal_;
    guard::Placeholders placeholders_;
    std::unique_ptr<guard::Watch> watch_;  // null: no guarded names
    int freeze_fd_ = -1;
    bool cloned_ = false;  // after_clone() passed: a sandbox existed
    bool ended_ = false;
    WorkspaceOutcome outcome_;  // end()'s, for finish()
};

// The components of a run of `plan`, in their order; `relay` is set to the one
// StdioRelay among them.
Components components_for(const plan::Plan& plan, const policy::Policy& policy,
                          const SpawnOptions& options, StdioRelay*& relay);

}  // namespace run
}  // namespace agentjail
