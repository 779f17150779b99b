// SPDX-License-Identifier: Apache-2.0
// The run's components made from its plan: one small adapter per facility (the
// stdio relay, the proxy, the published ports, overlay and clone mode's run state,
// direct mode's check after the run; the cgroup's is the Enforcer), in the order
// every stage of the run follows.
#pragma once

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

// The components of a run of `plan`, in their order; `relay` is set to the one
// StdioRelay among them.
Components components_for(const plan::Plan& plan, const policy::Policy& policy,
                          const SpawnOptions& options, StdioRelay*& relay);

}  // namespace run
}  // namespace agentjail
