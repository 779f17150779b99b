// SPDX-License-Identifier: Apache-2.0
// Unit tests of the run's component list (lib/run/component.hpp): every stage goes
// in the list's order, undoing goes in reverse, a component that fails in prepare
// leaves nothing prepared behind, and the launch's hooks call the list.
#include "launch/launch.hpp"
#include "plan/plan.hpp"
#include "run/component.hpp"
#include "run/loop.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace {

using agentjail::Error;
using agentjail::ErrorKind;
using agentjail::Result;
using agentjail::RunResult;
using agentjail::run::Component;
using agentjail::run::Components;
using agentjail::run::Spawn;

// A component that writes each call it gets into a shared log ("prepare a", ...)
// and fails in the stage it is told to.
class Probe : public Component {
public:
    Probe(std::string name, std::vector<std::string>& log, std::string fail_in = "")
        : name_(std::move(name)), log_(log), fail_in_(std::move(fail_in)) {}
    ~Probe() override { log_.push_back("destroy " + name_); }

    Result<void> prepare(const agentjail::plan::Plan&, Spawn& spawn) override {
        if (name_ == "forks") spawn.before_fork = true;
        return step("prepare");
    }
    Result<void> after_clone(pid_t) override { return step("after_clone"); }
    Result<void> before_fork(pid_t) override { return step("before_fork"); }
    void setup_done() override { log_.push_back("setup_done " + name_); }
    Result<void> attach(agentjail::launch::Process&, agentjail::run::Loop&) override {
        return step("attach");
    }
    void kill() noexcept override { log_.push_back("kill " + name_); }
    void end() override { log_.push_back("end " + name_); }
    void finish(RunResult& r) override {
        log_.push_back("finish " + name_);
        r.degraded.push_back(name_);
    }
    void abandon() override { log_.push_back("abandon " + name_); }

private:
    Result<void> step(const std::string& stage) {
        log_.push_back(stage + " " + name_);
        if (stage == fail_in_) return Error(ErrorKind::setup, EIO, name_ + " failed in " + stage);
        return {};
    }
    std::string name_;
    std::vector<std::string>& log_;
    std::string fail_in_;
};

using Log = std::vector<std::string>;

TEST(RunComponents, AFailedPrepareLeavesNothingPrepared) {
    Log log;
    {
        Components list;
        list.add(std::make_unique<Probe>("a", log));
        list.add(std::make_unique<Probe>("b", log));
        list.add(std::make_unique<Probe>("c", log, "prepare"));
        list.add(std::make_unique<Probe>("d", log));
        agentjail::plan::Plan plan;
        Spawn spawn;
        auto r = list.prepare(plan, spawn);
        ASSERT_FALSE(r);
        EXPECT_EQ(r.error().message(), "c failed in prepare");
        // The ones before it are undone, last first; it undid itself; d never began.
        EXPECT_EQ(log, (Log{"prepare a", "prepare b", "prepare c", "abandon b", "abandon a"}));
        // Nothing is left to end, finish or undo a second time (a Run's end calls them).
        log.clear();
        RunResult res;
        list.end();
        list.finish(res);
        list.abandon();
        EXPECT_TRUE(log.empty());
        EXPECT_TRUE(res.degraded.empty());
    }
    EXPECT_EQ(log, (Log{"destroy d", "destroy c", "destroy b", "destroy a"}));
}

TEST(RunComponents, EveryStageGoesInOrderAndUndoingInReverse) {
    Log log;
    {
        Components list;
        list.add(std::make_unique<Probe>("a", log));
        list.add(std::make_unique<Probe>("b", log));
        agentjail::plan::Plan plan;
        Spawn spawn;
        ASSERT_TRUE(list.prepare(plan, spawn));
        auto hooks = list.hooks(spawn);
        // No component asked for it: the init does not wait before it forks.
        EXPECT_FALSE(hooks.before_fork);
        ASSERT_TRUE(hooks.before_release);
        ASSERT_TRUE(hooks.before_release(42));
        ASSERT_TRUE(hooks.setup_done);
        hooks.setup_done();
        EXPECT_EQ(hooks.watch, nullptr);  // no component watches the host
        ASSERT_TRUE(hooks.on_kill);
        hooks.on_kill();
        agentjail::launch::Process proc(-1, agentjail::sys::UniqueFd(), agentjail::sys::UniqueFd());
        agentjail::run::Loop loop;
        ASSERT_TRUE(list.attach(proc, loop));
        list.end();
        RunResult res;
        list.finish(res);
        EXPECT_EQ(res.degraded, (std::vector<std::string>{"a", "b"}));
        list.abandon();
        list.abandon();  // once only
    }
    EXPECT_EQ(log,
              (Log{"prepare a", "prepare b", "after_clone a", "after_clone b", "setup_done a",
                   "setup_done b", "kill a", "kill b", "attach a", "attach b", "end a", "end b",
                   "finish a", "finish b", "abandon b", "abandon a", "destroy b", "destroy a"}));
}

TEST(RunComponents, AHookStopsAtTheFirstError) {
    Log log;
    Components list;
    list.add(std::make_unique<Probe>("forks", log));
    list.add(std::make_unique<Probe>("b", log, "before_fork"));
    list.add(std::make_unique<Probe>("c", log, "attach"));
    list.add(std::make_unique<Probe>("d", log));
    agentjail::plan::Plan plan;
    Spawn spawn;
    ASSERT_TRUE(list.prepare(plan, spawn));
    auto hooks = list.hooks(spawn);
    // A component asked for the wait before the fork.
    ASSERT_TRUE(hooks.before_fork);
    log.clear();
    auto r = hooks.before_fork(42);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().message(), "b failed in before_fork");
    agentjail::launch::Process proc(-1, agentjail::sys::UniqueFd(), agentjail::sys::UniqueFd());
    agentjail::run::Loop loop;
    EXPECT_FALSE(list.attach(proc, loop));
    EXPECT_EQ(log,
              (Log{"before_fork forks", "before_fork b", "attach forks", "attach b", "attach c"}));
}

}  // namespace
