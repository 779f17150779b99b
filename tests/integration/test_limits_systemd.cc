// SPDX-License-Identifier: Apache-2.0
// The systemd route to a cgroup: an ordinary user whose own cgroup is not delegated
// gets a transient scope with Delegate=yes from the user's systemd manager. Real only
// where such a manager runs and the v2 hierarchy has the controllers: the vm tier
// starts one in the guest (tests/vm/guest-user-manager.sh, AJVM_SYSTEMD_USER=1), and
// there nothing here may skip. Elsewhere each test says why it does not apply.
#include "common.hpp"
#include "record.hpp"

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <functional>
#include <nlohmann/json.hpp>

namespace {

using json = nlohmann::json;
using ajit::describe;
using ajit::record_of;
using ajit::helper;

// Inside the vm tier's user-manager pass: the scope path must be taken.
bool strict() {
    const char* v = std::getenv("AJVM_SYSTEMD_USER");
    return v && std::string(v) == "1";
}


// How agentjail gets a cgroup for this caller: the record's layers.cgroup_via, or why
// it could not.
struct ScopeMode {
    std::string via;
    std::string why;
};

const ScopeMode& mode() {
    static const ScopeMode m = [] {
        ScopeMode s;
        const auto& p = ajit::cgroup_probe();
        const auto& j = p.record;
        if (p.ok && j["layers"]["cgroup_via"].is_string()) {
            s.via = j["layers"]["cgroup_via"].get<std::string>();
            s.why = "agentjail got its cgroup via " + s.via + " (" + j["layers"]["cgroup"].get<std::string>() +
                    "), not from a systemd scope";
        } else {
            s.why = "no cgroup for uid " + std::to_string(getuid()) + " here: " + p.refusal;
        }
        return s;
    }();
    return m;
}

// Fails in the vm tier's user-manager pass, skips elsewhere, unless agentjail takes
// the scope path here.
#define NEED_SCOPE_PATH()                                                                              \
    do {                                                                                               \
        if (mode().via != "systemd-scope") {                                                           \
            if (strict()) FAIL() << "a systemd user manager runs (AJVM_SYSTEMD_USER=1) but " << mode().why; \
            GTEST_SKIP() << "the systemd-scope path does not apply: " << mode().why;                   \
        }                                                                                              \
    } while (0)

// Directories agentjail-<pid>-*.scope below the user manager's cgroup (or the whole
// v2 hierarchy), at most 8 levels down.
std::vector<std::string> scopes_of(pid_t pid) {
    const char* m = std::getenv("AJVM_USER_MANAGER_CGROUP");
    std::string top = m && *m ? m : "/sys/fs/cgroup";
    std::string prefix = "agentjail-" + std::to_string(pid) + "-";
    std::vector<std::string> out;
    std::function<void(const std::string&, int)> walk = [&](const std::string& dir, int depth) {
        DIR* d = opendir(dir.c_str());
        if (!d) return;
        while (dirent* e = readdir(d)) {
            if (e->d_type != DT_DIR) continue;
            std::string n = e->d_name;
            if (n == "." || n == "..") continue;
            std::string p = dir + "/" + n;
            if (n.rfind(prefix, 0) == 0 && n.size() > 6 && n.substr(n.size() - 6) == ".scope") out.push_back(p);
            if (depth < 8) walk(p, depth + 1);
        }
        closedir(d);
    };
    walk(top, 0);
    return out;
}

std::string comm_of(const std::string& pid) {
    return ajtest::trim(ajtest::exists("/proc/" + pid + "/comm") ? ajtest::read_file("/proc/" + pid + "/comm") : "");
}

// Polls systemctl --user until the unit is unloaded (CollectMode=inactive-or-failed).
std::string wait_unit_unloaded(const std::string& unit, int timeout_ms) {
    std::string state;
    for (int waited = 0;; waited += 200) {
        auto r = ajtest::run({"systemctl", "--user", "show", "-p", "LoadState", "--value", unit});
        state = ajtest::trim(r.out);
        if (r.status == 127 || state == "not-found" || waited >= timeout_ms) return state;
        ajtest::sleep_ms(200);
    }
}

class LimitsSystemdScope : public ajit::Sandbox {};

TEST_F(LimitsSystemdScope, ScopeHoldsThePidsLimitDuringTheRunAndIsGoneAfter) {
    NEED_SCOPE_PATH();
    std::string started = jail.ws() + "/started", go = jail.ws() + "/go";
    // Waits for the test's go, so that the scope can be looked at while the run is on.
    std::string script = jail.ws_dir().write(
        "bomb.sh", "touch " + started + "\ni=0\nwhile [ ! -e " + go + " ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i+1)); done\nexec " +
                       helper("hog") + " fork\n");
    std::vector<std::string> args{ajtest::agentjail_bin()};
    for (const auto& a : jail.base()) args.push_back(a);
    for (const char* a : {"--json", "--pids", "16", "--", "/bin/sh"}) args.push_back(a);
    args.push_back(script);
    ajtest::RunOptions opts;
    opts.env.push_back("HOME=" + jail.home());
    opts.timeout_ms = 240000;
    ajtest::Child c(args, opts);
    ASSERT_TRUE(ajtest::wait_for_file(started, 120000)) << "the command never started";

    // During the run: one scope named after this agentjail, holding the placeholder in
    // its leaf and the run's group with the limit.
    auto scopes = scopes_of(c.pid());
    ASSERT_EQ(scopes.size(), 1u) << "scopes of agentjail " << c.pid() << ": " << scopes.size();
    std::string scope = scopes[0];
    std::string unit = scope.substr(scope.rfind('/') + 1);
    std::string group = scope + "/agentjail-" + std::to_string(c.pid()) + "-1";
    EXPECT_TRUE(ajtest::exists(group)) << "no run group in " << scope;
    EXPECT_EQ(ajtest::trim(ajtest::exists(group + "/pids.max") ? ajtest::read_file(group + "/pids.max") : ""), "16");
    auto holders = ajtest::lines(ajtest::exists(scope + "/holder/cgroup.procs")
                                     ? ajtest::read_file(scope + "/holder/cgroup.procs")
                                     : "");
    ASSERT_EQ(holders.size(), 1u) << "the scope's holder leaf: " << holders.size() << " processes";
    std::string holder = holders[0];
    EXPECT_EQ(comm_of(holder), "aj-scope-hold");
    // Nothing but the leaf's placeholder and the run's group: the scope itself is empty.
    EXPECT_EQ(ajtest::trim(ajtest::read_file(scope + "/cgroup.procs")), "");
    // The sandbox is in the run's group.
    EXPECT_NE(ajtest::trim(ajtest::read_file(group + "/cgroup.procs")), "") << "the run's group is empty";
    if (strict()) {
        // As from a login session on a systemd host: the caller's cgroup and the scope
        // meet in a group that is not the caller's, so agentjail could not clone into
        // the scope and the manager moved the init (AttachProcessesToUnit).
        std::string self = ajtest::trim(ajtest::read_file("/proc/self/cgroup"));
        std::string common = "/sys/fs/cgroup" + self.substr(self.find("::") + 2);
        while (scope.rfind(common + "/", 0) != 0 && common.size() > std::string("/sys/fs/cgroup").size())
            common.resize(common.rfind('/'));
        EXPECT_NE(::access((common + "/cgroup.procs").c_str(), W_OK), 0)
            << common << " is writable: the manager's move of the init was not needed";
    }
    // agentjail itself stayed where it was started.
    EXPECT_FALSE(ajtest::contains(ajtest::read_file("/proc/" + std::to_string(c.pid()) + "/cgroup"), unit));

    jail.ws_dir().write("go", "");
    auto r = c.wait(240000);
    jail.record(r);
    EXPECT_EQ(r.status, 3) << describe(r);  // hog saw EAGAIN at pids.max
    EXPECT_TRUE(ajtest::contains(r.out, "errno=EAGAIN")) << r.out;
    auto j = record_of(r);
    ASSERT_TRUE(j.is_object()) << describe(r);
    EXPECT_EQ(j["status"], "PL") << r.out;
    EXPECT_GT(j["pids_max_hits"].get<int>(), 0) << r.out;
    EXPECT_LE(j["pids_peak"].get<int>(), 16) << r.out;
    EXPECT_EQ(j["limits"]["pids"], 16);
    EXPECT_EQ(j["layers"]["cgroup"], "v2-delegated") << r.out;
    EXPECT_EQ(j["layers"]["cgroup_via"], "systemd-scope") << r.out;
    EXPECT_EQ(j["layers"]["cgroup_unit"], unit) << r.out;
    EXPECT_TRUE(j["layers"]["degraded"].empty()) << r.out;

    // After: the scope's cgroup is gone (agentjail waits for systemd to remove it), the
    // placeholder too, and systemd forgets the unit.
    EXPECT_FALSE(ajtest::exists(scope)) << scope << " is still there";
    EXPECT_NE(comm_of(holder), "aj-scope-hold") << "the placeholder " << holder << " outlived the run";
    EXPECT_EQ(wait_unit_unloaded(unit, 15000), "not-found") << "systemd still knows " << unit;
}

TEST_F(LimitsSystemdScope, MemoryBombInTheScopeIsKilledAndReportedMl) {
    NEED_SCOPE_PATH();
    std::vector<std::string> args = jail.base();
    for (const char* a : {"--json", "-m", "32M", "--", "tail", "/dev/zero"}) args.push_back(a);
    ajtest::RunOptions opts;
    opts.timeout_ms = 240000;
    auto r = jail.run(args, opts);
    EXPECT_EQ(r.status, 137) << describe(r);
    auto j = record_of(r);
    ASSERT_TRUE(j.is_object()) << describe(r);
    EXPECT_EQ(j["status"], "ML") << r.out;
    EXPECT_GE(j["oom_kill_count"].get<int>(), 1) << r.out;
    EXPECT_LE(j["memory_peak_bytes"].get<std::uint64_t>(), 40ull << 20) << r.out;
    EXPECT_EQ(j["layers"]["cgroup_via"], "systemd-scope") << r.out;
    ASSERT_TRUE(j["layers"]["cgroup_unit"].is_string()) << r.out;
    std::string unit = j["layers"]["cgroup_unit"].get<std::string>();
    // The unit's name carries the pid of the agentjail that asked; none of its scopes
    // is left.
    pid_t owner = std::atoi(unit.c_str() + std::string("agentjail-").size());
    EXPECT_GT(owner, 0) << unit;
    EXPECT_TRUE(scopes_of(owner).empty()) << unit << " is still there";
}

TEST(LimitsSystemdScopeRefusal, NoManagerReachableRefusesAndSaysHowToGetAScope) {
    NEED_SCOPE_PATH();
    // The same caller, but pointed at a runtime directory without a manager.
    ajtest::TempDir empty("aj-xdg");
    ajtest::RunOptions opts;
    opts.env = {"XDG_RUNTIME_DIR=" + empty.path()};
    opts.unset_env = {"DBUS_SESSION_BUS_ADDRESS"};
    opts.timeout_ms = 120000;
    auto r = ajtest::agentjail_with({"--policy", "minimal", "--pids", "16", "--", "/bin/true"}, opts);
    EXPECT_EQ(r.status, 125) << describe(r);
    EXPECT_EQ(ajtest::lines(r.err).size(), 1u) << r.err;
    EXPECT_TRUE(ajtest::contains(r.err, "not delegated")) << r.err;
    EXPECT_TRUE(ajtest::contains(r.err, "no systemd user manager could be reached")) << r.err;
    EXPECT_TRUE(ajtest::contains(r.err, empty.path() + "/systemd/private")) << r.err;
    EXPECT_TRUE(ajtest::contains(r.err, "systemd-run --user --scope -p Delegate=yes")) << r.err;
    EXPECT_TRUE(ajtest::contains(r.err, "loginctl enable-linger")) << r.err;

    // allow_degraded: the run goes on with rlimits only, and the record says why.
    auto d = ajtest::agentjail_with(
        {"--policy", "minimal", "--allow-degraded", "--pids", "16", "--json", "--", "/bin/true"}, opts);
    ASSERT_EQ(d.status, 0) << describe(d);
    auto j = record_of(d);
    EXPECT_EQ(j["layers"]["cgroup"], "none");
    EXPECT_TRUE(j["layers"]["cgroup_via"].is_null());
    ASSERT_FALSE(j["layers"]["degraded"].empty()) << d.out;
    EXPECT_TRUE(ajtest::contains(j["layers"]["degraded"][0].get<std::string>(), "no systemd user manager")) << d.out;
}

}  // namespace
