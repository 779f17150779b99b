// SPDX-License-Identifier: Apache-2.0
// launch::spawn of a plan a test changed before its launch, with what a run adds for
// the plan's guarded names (run::Guard: placeholders, their journal, the directories'
// locks, the watch), driven through the stages a run drives it through.
#pragma once

#include "launch/launch.hpp"
#include "plan/plan.hpp"
#include "run/component.hpp"
#include "run/parts.hpp"

#include <memory>
#include <optional>

namespace ajtest {

class GuardedLaunch {
public:
    GuardedLaunch() { parts_.add(std::make_unique<agentjail::run::Guard>()); }
    // As a run dropped without its wait: the sandbox killed and reaped, the guard ended.
    ~GuardedLaunch() {
        if (proc_) proc_->kill_and_reap();
        parts_.end();
        if (!proc_) parts_.abandon();
    }
    GuardedLaunch(const GuardedLaunch&) = delete;
    GuardedLaunch& operator=(const GuardedLaunch&) = delete;

    agentjail::Result<void> spawn(const agentjail::plan::Plan& plan,
                                  const agentjail::launch::Stdio& stdio,
                                  boost::asio::io_context& io) {
        agentjail::run::Spawn sp;
        if (auto r = parts_.prepare(plan, sp); !r) return r;
        auto p = agentjail::launch::spawn(plan, stdio, io, parts_.hooks(sp));
        if (!p) return std::move(p).error();
        proc_.emplace(std::move(*p));
        return {};
    }
    agentjail::launch::Process& process() { return *proc_; }
    // The wait, then the guard's end and its part of the result.
    agentjail::Result<agentjail::RunResult> wait() {
        auto r = proc_->wait();
        if (!r) return r;
        parts_.end();
        parts_.finish(*r);
        return r;
    }

private:
    agentjail::run::Components parts_;  // outlives the Process, whose hooks point at it
    std::optional<agentjail::launch::Process> proc_;
};

}  // namespace ajtest
