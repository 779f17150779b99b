// SPDX-License-Identifier: Apache-2.0
// The ordered list of a run's components through the stages of a launch (see
// component.hpp), and the launch's hooks built from it in this one place.
#include "run/component.hpp"

namespace agentjail::run {

Components::~Components() {
    while (!list_.empty()) list_.pop_back();
}

Result<void> Components::prepare(const plan::Plan& plan, Spawn& spawn) {
    for (prepared_ = 0; prepared_ < list_.size(); ++prepared_) {
        if (auto r = list_[prepared_]->prepare(plan, spawn); !r) {
            abandon();
            return r;
        }
    }
    return {};
}

launch::Hooks Components::hooks(const Spawn& spawn) {
    launch::Hooks h;
    h.cgroup_fd = spawn.cgroup_fd;
    h.seccomp_log = spawn.seccomp_log;
    h.watch = spawn.watch;
    h.freeze_group = spawn.freeze_group;
    h.before_release = [this](pid_t init) -> Result<void> {
        for (std::size_t i = 0; i < prepared_; ++i)
            if (auto r = list_[i]->after_clone(init); !r) return r;
        return {};
    };
    if (spawn.before_fork) {
        h.before_fork = [this](pid_t init) -> Result<void> {
            for (std::size_t i = 0; i < prepared_; ++i)
                if (auto r = list_[i]->before_fork(init); !r) return r;
            return {};
        };
    }
    h.setup_done = [this] {
        for (std::size_t i = 0; i < prepared_; ++i) list_[i]->setup_done();
    };
    h.on_kill = [this] {
        for (std::size_t i = 0; i < prepared_; ++i) list_[i]->kill();
    };
    return h;
}

Result<void> Components::attach(launch::Process& proc, Loop& loop) {
    for (std::size_t i = 0; i < prepared_; ++i)
        if (auto r = list_[i]->attach(proc, loop); !r) return r;
    return {};
}

void Components::end() {
    for (std::size_t i = 0; i < prepared_; ++i) list_[i]->end();
}

void Components::finish(RunResult& r) {
    for (std::size_t i = 0; i < prepared_; ++i) list_[i]->finish(r);
}

Result<void> Components::hand_over() {
    Result<void> first;
    for (std::size_t i = 0; i < prepared_; ++i)
        if (auto r = list_[i]->hand_over(); !r && first) first = std::move(r);
    return first;
}

void Components::abandon() {
    while (prepared_ > 0) list_[--prepared_]->abandon();
}

}  // namespace agentjail::run
