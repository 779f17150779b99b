// SPDX-License-Identifier: Apache-2.0
// The user's stop of a run with limits (issue 24: "freeze the run's cgroup where there
// is one"): on cgroup v2 the sandbox is frozen through cgroup.freeze, so every process
// stops as it is and one an inner shell had stopped stays stopped when the run goes
// on. Without a cgroup the init stops and continues every process with signals, and
// the SIGCONT reaches that one too (docs/terminal.md): the second run here, which also
// shows that the probe tells the two apart. On a host whose cgroup is v1 (this one's
// limits) the v2 half skips, saying so; the vm tier (tests/vm) runs it on v2.
#include "test_support.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <signal.h>

#include <string>
#include <vector>

namespace {

class LimitsStop : public ::testing::Test {
protected:
    struct Outcome {
        std::string state;   // the inner stopped process's state after the resume
        std::string cgroup;  // the record's cgroup kind ("" without one)
        int status = -1;
        std::string err;
    };

    // Runs agentjail with `flags` in the background; inside, a process in a session
    // of its own (out of reach of the command's job, which the stop and the continue
    // signal as the user's shell would) is stopped with SIGSTOP; agentjail is stopped
    // (SIGTSTP) and continued (SIGCONT) from here; then the script says what state
    // the stopped process is in.
    Outcome stop_and_go(const std::vector<std::string>& flags) {
        const std::string sync = ws.path() + "/sync";
        ajtest::run({"rm", "-rf", sync});
        ajtest::run({"mkdir", sync});
        const std::string rec = state.path() + "/record.json";
        std::vector<std::string> argv{ajtest::agentjail_bin(), "-C", ws.path(), "--result-file", rec};
        argv.insert(argv.end(), flags.begin(), flags.end());
        for (const char* a : {"--", "/bin/sh", "-c"}) argv.emplace_back(a);
        argv.emplace_back(
            "setsid sleep 1000 & p=$!; "
            "while [ \"$(cat /proc/$p/comm)\" != sleep ]; do sleep 0.01; done; "  // in its own session
            "kill -STOP $p; touch sync/ready; "
            "while [ ! -e sync/resumed ]; do sleep 0.05; done; sleep 0.3; "
            "echo state=$(cut -d' ' -f3 /proc/$p/stat); kill -KILL $p");
        ajtest::RunOptions o;
        o.env = {"HOME=" + home.path(), "XDG_STATE_HOME=" + state.path()};
        o.cwd = ws.path();
        ajtest::Child run(argv, o);
        Outcome out;
        if (!ajtest::wait_for_file(sync + "/ready", 60000)) return out;
        ::kill(run.pid(), SIGTSTP);
        // agentjail stops itself once every process of the sandbox is stopped; in an
        // orphaned process group (the vm tier's) the kernel drops that stop, and
        // agentjail goes on at once: the sandbox was stopped and continued all the
        // same, which is what is looked at here.
        for (int i = 0; i < 80 && proc_state(run.pid()) != "T"; ++i) ajtest::sleep_ms(25);
        ajtest::sleep_ms(200);
        ::kill(run.pid(), SIGCONT);
        ajtest::run({"touch", sync + "/resumed"});
        auto r = run.wait(60000);
        out.status = r.status;
        out.err = r.err;
        for (const auto& l : ajtest::lines(r.out))
            if (l.rfind("state=", 0) == 0) out.state = l.substr(6);
        auto j = nlohmann::json::parse(ajtest::read_file(rec), nullptr, false);
        if (!j.is_discarded() && j.contains("layers") && j["layers"].contains("cgroup") &&
            j["layers"]["cgroup"].is_string())
            out.cgroup = j["layers"]["cgroup"];
        return out;
    }

    static std::string proc_state(pid_t pid) {
        std::string stat = ajtest::read_file("/proc/" + std::to_string(pid) + "/stat");
        auto close = stat.rfind(')');
        return close == std::string::npos || close + 2 >= stat.size() ? "" : stat.substr(close + 2, 1);
    }

    ajtest::TempDir ws{"aj-stopws"}, home{"aj-stophome"}, state{"aj-stopstate"};
};

TEST_F(LimitsStop, AStopThroughTheCgroupLeavesAnInnerStoppedProcessStopped) {
    // Without a cgroup: the init's signals; its SIGCONT continues the inner one too.
    auto plain = stop_and_go({});
    ASSERT_EQ(plain.status, 0) << plain.err;
    EXPECT_EQ(plain.cgroup, "none");
    EXPECT_EQ(plain.state, "S") << "without a cgroup the thaw is a SIGCONT to every process";

    auto limited = stop_and_go({"-m", "512M"});
    if (limited.status == 125 || limited.cgroup.empty() || limited.cgroup == "none")
        GTEST_SKIP() << "no cgroup for a run with limits here (" << limited.err << "); the vm tier runs this";
    if (limited.cgroup == "v1")
        GTEST_SKIP() << "the run's cgroup is v1 here: its freezer is the guard watch's, so the user's stop "
                        "goes through the init's signals; the vm tier (cgroup v2) runs this";
    ASSERT_EQ(limited.status, 0) << limited.err;
    EXPECT_EQ(limited.state, "T") << "the cgroup's thaw continued a process stopped inside (" << limited.cgroup
                                  << ")";
}

}  // namespace
