// SPDX-License-Identifier: Apache-2.0
// The C API with real sandboxes, as an embedder (a scheduler) uses it: spawn, wait,
// the result and its record, errors with their stage and errno, the caller's side of
// the run (identity, environment, descriptors), the root-caller rule, the fork rule
// and where the run's cgroup goes.
#include <agentjail/agentjail.h>

#include "capi_handles.hpp"
#include "sys/syscalls.hpp"
#include "test_support.hpp"
#include "util/fault.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

using ajtest::capi::Err;
using ajtest::capi::Pol;
using ajtest::capi::Res;
using ajtest::capi::Sb;
using ajtest::capi::spawn;

bool root() { return ::geteuid() == 0; }

// The defaults plus this process's own identity named explicitly: what a root
// embedder must do, and a no-op for a user.
aj_run_options own_identity() {
    aj_run_options o;
    EXPECT_EQ(aj_run_options_init(&o, AJ_RUN_OPTIONS_VERSION), AJ_OK);
    o.uid = ::getuid();
    o.gid = ::getgid();
    return o;
}

void load_in(Pol& pol, const ajtest::TempDir& ws, const char* name = "default") {
    Err err;
    ASSERT_EQ(aj_policy_load(&pol.p, name, err.out()), AJ_OK) << err.message();
    ASSERT_EQ(aj_policy_set_workspace(pol.p, ws.path().c_str(), err.out()), AJ_OK) << err.message();
}

// Runs argv to its end with stdout into a pipe; returns what it printed.
std::string run_out(const aj_policy* p, std::vector<const char*> argv, aj_run_options o,
                    int* status = nullptr, std::string* record = nullptr) {
    ajtest::Pipe out;
    o.stdout_fd = out.w;
    Sb sb;
    Err err;
    int rc = spawn(sb, p, std::move(argv), &o, err);
    EXPECT_EQ(rc, AJ_OK) << err.message();
    if (rc != AJ_OK) return "";
    out.close_write();
    std::string text = out.read_all();
    Res res;
    EXPECT_EQ(aj_sandbox_wait(&res.r, sb.s, err.out()), AJ_OK) << err.message();
    if (status != nullptr) *status = aj_result_exit_code(res.r);
    char* json = nullptr;
    if (record != nullptr && aj_result_json(&json, res.r, err.out()) == AJ_OK) *record = json;
    aj_string_free(json);
    return text;
}

std::string own_cgroups() { return ajtest::read_file("/proc/self/cgroup"); }

// A workspace, the default policy on it, and options that name this process's own
// identity (as a root embedder must).
class CApiRun : public ::testing::Test {
protected:
    void SetUp() override {
        load_in(pol, ws);
        o = own_identity();
    }
    ajtest::TempDir ws;
    Pol pol;
    aj_run_options o{};
    Sb sb;
    Err err;
};
using CgroupPlacementCApi = CApiRun;

TEST_F(CApiRun, SpawnWaitAndTheResult) {
    int code = -1;
    EXPECT_EQ(run_out(pol.p, {"/bin/sh", "-c", "echo hello; exit 3"}, o, &code), "hello\n");
    EXPECT_EQ(code, 3);

    ASSERT_EQ(spawn(sb, pol.p, {"/bin/sh", "-c", "kill -TERM $$"}, &o, err), AJ_OK)
        << err.message();
    Res res;
    ASSERT_EQ(aj_sandbox_wait(&res.r, sb.s, err.out()), AJ_OK) << err.message();
    EXPECT_EQ(aj_result_exited(res.r), 0);
    EXPECT_EQ(aj_result_signal(res.r), SIGTERM);
    EXPECT_EQ(aj_result_exit_status(res.r), 128 + SIGTERM);
    char* json = nullptr;
    ASSERT_EQ(aj_result_json(&json, res.r, err.out()), AJ_OK);
    EXPECT_NE(std::string(json).find("\"status\":\"SG\""), std::string::npos) << json;
    aj_string_free(json);
}

TEST_F(CApiRun, ExecFailureCarriesStageAndErrno) {
    EXPECT_EQ(spawn(sb, pol.p, {"/no/such/command"}, &o, err), AJ_ENOTFOUND);
    EXPECT_EQ(sb.s, nullptr);
    EXPECT_EQ(aj_error_stage(err.e), AJ_STAGE_EXEC);
    EXPECT_EQ(aj_error_errno(err.e), ENOENT);
    EXPECT_STRNE(aj_error_step(err.e), "");
}

// A failure while the sandbox builds its root (an injected one: EIO at the mounts)
// comes back as that stage with its errno, not as a command's exit.
TEST_F(CApiRun, SandboxFailureCarriesStageAndErrno) {
    {
        agentjail::fault::arm("child.before-root", agentjail::fault::Action::fail);
        int rc = spawn(sb, pol.p, {"/bin/true"}, &o, err);
        agentjail::fault::disarm();
        EXPECT_EQ(rc, AJ_ESETUP);
        EXPECT_EQ(aj_error_stage(err.e), AJ_STAGE_SANDBOX);
        EXPECT_EQ(aj_error_errno(err.e), EIO);
        EXPECT_STREQ(aj_error_step(err.e), "mounting");
    }
    // Control: disarmed, the same spawn runs.
    int code = -1;
    run_out(pol.p, {"/bin/true"}, o, &code);
    EXPECT_EQ(code, 0);
}

TEST_F(CApiRun, RootCallerMustNameTheIdentity) {
    if (!root()) GTEST_SKIP() << "the rule is about a caller that is root";
    ASSERT_EQ(aj_run_options_init(&o, AJ_RUN_OPTIONS_VERSION), AJ_OK);  // no identity named
    EXPECT_EQ(spawn(sb, pol.p, {"/bin/true"}, &o, err), AJ_EINVAL);
    EXPECT_EQ(sb.s, nullptr);
    EXPECT_EQ(aj_error_stage(err.e), AJ_STAGE_PLAN);
    EXPECT_EQ(aj_error_errno(err.e), EPERM);
    EXPECT_NE(err.message().find("allow_root"), std::string::npos) << err.message();
    // NULL options are the defaults: refused the same.
    EXPECT_EQ(spawn(sb, pol.p, {"/bin/true"}, nullptr, err), AJ_EINVAL);

    // Controls: the policy that says root inside, and 0/0 named explicitly, run as root.
    Pol allow;
    std::string text = "extends = \"default\"\n[process]\nallow_root = true\n";
    ASSERT_EQ(aj_policy_load_text(&allow.p, text.c_str(), "allow.toml", err.out()), AJ_OK)
        << err.message();
    ASSERT_EQ(aj_policy_set_workspace(allow.p, ws.path().c_str(), err.out()), AJ_OK);
    EXPECT_EQ(run_out(allow.p, {"/usr/bin/id", "-u"}, o), "0\n");
    o.uid = 0;
    o.gid = 0;
    EXPECT_EQ(run_out(pol.p, {"/usr/bin/id", "-u"}, o), "0\n");
}

// A job's identity for the root-only tests below: the workspace and a home are its,
// and the options name it.
constexpr uid_t kJobUid = 23456;
constexpr gid_t kJobGid = 23457;

void as_job(aj_run_options& o, const ajtest::TempDir& ws, const ajtest::TempDir& home) {
    ASSERT_EQ(::chown(ws.path().c_str(), kJobUid, kJobGid), 0);
    ASSERT_EQ(::chown(home.path().c_str(), kJobUid, kJobGid), 0);
    o.uid = kJobUid;
    o.gid = kJobGid;
    o.home = home.path().c_str();
}

// Root runs the job as the job's uid/gid: its files, no group of root's, and what
// only root may read stays unreadable.
TEST_F(CApiRun, RootRunsTheCommandAsTheGivenIdentity) {
    if (!root()) GTEST_SKIP() << "only root may run the command as another identity";
    const uid_t uid = kJobUid;
    const gid_t gid = kJobGid;
    ajtest::TempDir home;
    ASSERT_NO_FATAL_FAILURE(as_job(o, ws, home));
    std::string secret = ws.write("root-only", "secret\n", 0600);  // root's file
    std::string out =
        run_out(pol.p,
                {"/bin/sh", "-c",
                 "id -u; id -g; id -G; echo \"$HOME\"; touch made; cat root-only 2>/dev/null || "
                 "echo refused"},
                o);
    EXPECT_EQ(out, std::to_string(uid) + "\n" + std::to_string(gid) + "\n" + std::to_string(gid) +
                       "\n" + home.path() + "\nrefused\n");
    struct stat st {};
    ASSERT_EQ(::stat((ws.path() + "/made").c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, uid);
    EXPECT_EQ(st.st_gid, gid);
    // Control: as root (0/0 named), the same file reads. (Root inside holds no
    // capability over files of an identity its namespace does not map: the
    // workspace, 23456's and mode 0700, must let others in for that.)
    ASSERT_EQ(::chmod(ws.path().c_str(), 0755), 0);
    o.uid = 0;
    o.gid = 0;
    EXPECT_EQ(run_out(pol.p, {"/bin/cat", "root-only"}, o), "secret\n");
}

// The same through the mounts view (aj_policy_set_workspace_view): the test above runs
// through the default view, whose server runs as root; what the command makes goes to
// the command's identity either way, not the server's.
TEST_F(CApiRun, RootRunsTheCommandAsTheGivenIdentityThroughEitherView) {
    if (!root()) GTEST_SKIP() << "only root may run the command as another identity";
    const uid_t uid = kJobUid;
    const gid_t gid = kJobGid;
    ajtest::TempDir home;
    ASSERT_NO_FATAL_FAILURE(as_job(o, ws, home));
    Err e;
    EXPECT_EQ(aj_policy_set_workspace_view(pol.p, "fusee", e.out()), AJ_EINVAL);
    EXPECT_NE(e.message().find("expected \"mounts\" or \"fuse\", got \"fusee\""), std::string::npos) << e.message();
    ASSERT_EQ(aj_policy_set_workspace(pol.p, ws.path().c_str(), e.out()), AJ_OK) << e.message();
    for (const char* view : {"mounts", "fuse"}) {
        ASSERT_EQ(aj_policy_set_workspace_view(pol.p, view, e.out()), AJ_OK) << e.message();
        EXPECT_EQ(run_out(pol.p, {"/bin/sh", "-c", "rm -rf made dir link; touch made && mkdir dir && ln -s made link && id -u"}, o),
                  std::to_string(uid) + "\n")
            << view;
        for (const char* name : {"made", "dir", "link"}) {
            struct stat st {};
            ASSERT_EQ(::lstat((ws.path() + "/" + name).c_str(), &st), 0) << name;
            EXPECT_EQ(st.st_uid, uid) << view << " " << name;
            EXPECT_EQ(st.st_gid, gid) << view << " " << name;
        }
    }
}

TEST_F(CApiRun, OnlyRootMayNameAnotherIdentity) {
    if (root()) GTEST_SKIP() << "root may; RootRunsTheCommandAsTheGivenIdentity covers it";
    o.uid = 0;
    o.gid = 0;
    EXPECT_EQ(spawn(sb, pol.p, {"/bin/true"}, &o, err), AJ_EINVAL);
    EXPECT_EQ(aj_error_errno(err.e), EPERM);
    EXPECT_NE(err.message().find("only root"), std::string::npos) << err.message();
    // Control: the caller's own identity runs.
    EXPECT_EQ(run_out(pol.p, {"/usr/bin/id", "-u"}, own_identity()),
              std::to_string(::getuid()) + "\n");
}

TEST_F(CApiRun, PassedDescriptorsReachTheCommandOthersDoNot) {
    ajtest::Pipe extra(0);  // not close-on-exec: only the option decides
    ASSERT_GE(extra.w, 3);
    const std::string script =
        "echo via-fd >&" + std::to_string(extra.w) + " 2>/dev/null; echo done";
    // Control first: not passed, the descriptor is closed in the command.
    EXPECT_EQ(run_out(pol.p, {"/bin/sh", "-c", script.c_str()}, o), "done\n");
    int fds[] = {extra.w};
    o.pass_fds = fds;
    o.n_pass_fds = 1;
    EXPECT_EQ(run_out(pol.p, {"/bin/sh", "-c", script.c_str()}, o), "done\n");
    extra.close_write();
    EXPECT_EQ(extra.read_all(), "via-fd\n");

    int bad[] = {2};
    o.pass_fds = bad;
    EXPECT_EQ(spawn(sb, pol.p, {"/bin/true"}, &o, err), AJ_EINVAL);
    EXPECT_NE(err.message().find("below 3"), std::string::npos) << err.message();
}

// A passed descriptor of a file outside the sandbox's tree, reopened by name
// (/proc/self/fd/N), lies outside every Landlock rule of the tree: it gets what its
// open mode gave (docs/landlock.md), so writing to it by name works and reading a
// write-only one back does not. Control: without Landlock the reopen reads.
TEST_F(CApiRun, APassedFileKeepsItsOpenModeUnderLandlock) {
    if (agentjail::sys::landlock_abi() < 2)
        GTEST_SKIP() << "this kernel has no Landlock ABI 2 (docs/landlock.md): the layer is not applied here";
    ajtest::TempDir dir("aj-passfile");
    const std::string file = dir.write("log", "earlier\n");
    const int fd = ::open(file.c_str(), O_WRONLY | O_APPEND);  // not close-on-exec: passed
    ASSERT_GE(fd, 3);
    const std::string n = std::to_string(fd);
    const std::string script = "echo by-name >> /proc/self/fd/" + n + " && echo wrote; cat /proc/self/fd/" + n +
                               " >/dev/null 2>&1; echo read=$?";
    int fds[] = {fd};
    o.pass_fds = fds;
    o.n_pass_fds = 1;
    EXPECT_EQ(run_out(pol.p, {"/bin/sh", "-c", script.c_str()}, o), "wrote\nread=1\n");
    Pol off;
    const std::string text = "extends = \"default\"\n[isolation]\nlandlock = \"off\"\n";
    ASSERT_EQ(aj_policy_load_text(&off.p, text.c_str(), "off.toml", err.out()), AJ_OK) << err.message();
    ASSERT_EQ(aj_policy_set_workspace(off.p, ws.path().c_str(), err.out()), AJ_OK);
    EXPECT_EQ(run_out(off.p, {"/bin/sh", "-c", script.c_str()}, o), "wrote\nread=0\n");
    ::close(fd);
    EXPECT_EQ(ajtest::read_file(file), "earlier\nby-name\nby-name\n");
}

// Version 4's filter_pipes (issue 26): the command's output pipe filtered as a
// terminal is, for an embedder whose pipe ends on one; a version 3 caller's struct
// (without the field) still runs, unfiltered.
TEST_F(CApiRun, FilterPipesDropsWhatActsOnTheUsersTerminal) {
    const char* script = "printf 'A\\033]52;c;SGVsbG8=\\007B\\033[31mred\\033[0m\\n'";
    // Control: by default a pipe carries the bytes as they are.
    EXPECT_EQ(run_out(pol.p, {"/bin/sh", "-c", script}, o), "A\x1b]52;c;SGVsbG8=\x07" "B\x1b[31mred\x1b[0m\n");
    o.filter_pipes = 1;
    EXPECT_EQ(run_out(pol.p, {"/bin/sh", "-c", script}, o), "AB\x1b[31mred\x1b[0m\n");
    o.tty_raw = 1;
    EXPECT_EQ(spawn(sb, pol.p, {"/bin/true"}, &o, err), AJ_EINVAL);
    EXPECT_NE(err.message().find("filter_pipes and tty_raw"), std::string::npos) << err.message();
    // A caller built against version 3: its struct ends before filter_pipes.
    aj_run_options v3 = own_identity();
    v3.version = 3;
    v3.filter_pipes = 1;  // past the caller's bytes: never read
    EXPECT_EQ(run_out(pol.p, {"/bin/sh", "-c", script}, v3), "A\x1b]52;c;SGVsbG8=\x07" "B\x1b[31mred\x1b[0m\n");
}

TEST_F(CApiRun, TheCallersEnvironmentIsTheOneGiven) {
    ASSERT_EQ(aj_policy_pass_env(pol.p, "AJ_JOB_VAR", err.out()), AJ_OK);
    ASSERT_EQ(aj_policy_pass_env(pol.p, "AJ_PROCESS_VAR", err.out()), AJ_OK);
    ::setenv("AJ_PROCESS_VAR", "from-process", 1);
    const char* env[] = {"AJ_JOB_VAR=from-job", "PATH=/usr/bin:/bin", nullptr};
    const char* script = "echo \"${AJ_JOB_VAR:-unset} ${AJ_PROCESS_VAR:-unset}\"";
    // Control: this process's environment by default.
    EXPECT_EQ(run_out(pol.p, {"/bin/sh", "-c", script}, o), "unset from-process\n");
    o.envp = env;
    EXPECT_EQ(run_out(pol.p, {"/bin/sh", "-c", script}, o), "from-job unset\n");
    // Cleared: nothing passes, what is set after still does.
    ASSERT_EQ(aj_policy_clear_env(pol.p, err.out()), AJ_OK);
    ASSERT_EQ(aj_policy_set_env(pol.p, "AJ_SET", "yes", err.out()), AJ_OK);
    EXPECT_EQ(run_out(pol.p, {"/bin/sh", "-c", "echo ${AJ_JOB_VAR:-unset} ${AJ_SET}"}, o),
              "unset yes\n");
    ::unsetenv("AJ_PROCESS_VAR");
}

TEST_F(CApiRun, TheCallersDirectoryIsTheDefaultWorkspace) {
    ws.write("marker", "here\n");
    aj_policy_free(pol.p);  // the fixture's names the workspace; this one must not
    pol.p = nullptr;
    ASSERT_EQ(aj_policy_load(&pol.p, "default", err.out()), AJ_OK);
    o.cwd = ws.path().c_str();
    EXPECT_EQ(run_out(pol.p, {"/bin/sh", "-c", "pwd; cat marker"}, o), ws.path() + "\nhere\n");
}

TEST_F(CApiRun, TheResultRecordIsWrittenWhereAsked) {
    ajtest::TempDir out;
    std::string path = out.path() + "/result.json";
    o.result_path = path.c_str();
    int code = -1;
    run_out(pol.p, {"/bin/sh", "-c", "exit 4"}, o, &code);
    EXPECT_EQ(code, 4);
    std::string record = ajtest::read_file(path);
    EXPECT_NE(record.find("\"status\": \"RE\""), std::string::npos) << record;

    // Inside what the sandbox writes too: written once the sandbox is gone, renamed
    // over what the command left there (a fake record).
    std::string inside = ws.path() + "/result.json";
    o.result_path = inside.c_str();
    const std::string forge = "echo '{\"status\": \"OK\"}' > " + inside + "; exit 5";
    run_out(pol.p, {"/bin/sh", "-c", forge.c_str()}, o, &code);
    EXPECT_EQ(code, 5);
    record = ajtest::read_file(inside);
    EXPECT_NE(record.find("\"exit_code\": 5"), std::string::npos) << record;

    // A spawn that fails after the checks leaves its XX record.
    std::string failed = out.path() + "/failed.json";
    o.result_path = failed.c_str();
    EXPECT_EQ(spawn(sb, pol.p, {"/no/such/command"}, &o, err), AJ_ENOTFOUND);
    EXPECT_NE(ajtest::read_file(failed).find("\"status\": \"XX\""), std::string::npos);
}

TEST_F(CApiRun, LogCallbackHearsThePlan) {
    std::vector<std::pair<int, std::string>> heard;
    o.log = [](void* payload, int level, const char* message) {
        static_cast<std::vector<std::pair<int, std::string>>*>(payload)->emplace_back(level,
                                                                                      message);
    };
    o.log_payload = &heard;
    run_out(pol.p, {"/bin/true"}, o);
    bool plan = false;
    for (const auto& [level, text] : heard)
        if (level == AJ_LOG_PLAN && text.find(ws.path()) != std::string::npos) plan = true;
    EXPECT_TRUE(plan);
}

// The fork rule: a child of fork() that frees the parent's handle forgets it; the
// parent's sandbox runs on, and the parent still owns it.
TEST_F(CApiRun, AForkedChildFreeingTheHandleLeavesTheSandboxAlone) {
    ASSERT_EQ(spawn(sb, pol.p, {"/bin/sleep", "30"}, &o, err), AJ_OK) << err.message();
    const pid_t init = aj_sandbox_pid(sb.s);
    pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        aj_error* e = nullptr;
        int kill_rc = aj_sandbox_kill(sb.s, SIGKILL, &e);
        aj_error_free(e);
        aj_sandbox_free(sb.s);
        ::_exit(kill_rc == AJ_EINVAL ? 0 : 1);
    }
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
        << "the child's kill was not refused";
    ajtest::sleep_ms(100);
    EXPECT_EQ(::kill(init, 0), 0) << "the parent's sandbox died with the child's free";
    // Control: the owner's free does kill it.
    aj_sandbox_free(sb.s);
    sb.s = nullptr;
    EXPECT_NE(::kill(init, 0), 0);
}

// The cgroup rule: by default a run with limits goes below the caller's own cgroup
// or fails, saying so; it never takes the job elsewhere and never moves the caller.
TEST_F(CgroupPlacementCApi, ByDefaultBelowTheCallersCgroupOrNowhere) {
    ASSERT_EQ(aj_policy_set_limit(pol.p, "pids", "64", err.out()), AJ_OK);
    const std::string before = own_cgroups();
    ajtest::Pipe out;
    o.stdout_fd = out.w;
    int rc = spawn(sb, pol.p, {"/bin/cat", "/proc/self/cgroup"}, &o, err);
    if (rc == AJ_OK) {
        out.close_write();
        EXPECT_NE(out.read_all(), "");
        Res res;
        ASSERT_EQ(aj_sandbox_wait(&res.r, sb.s, err.out()), AJ_OK);
        char* json = nullptr;
        ASSERT_EQ(aj_result_json(&json, res.r, err.out()), AJ_OK);
        std::string record = json;
        aj_string_free(json);
        EXPECT_NE(record.find("\"cgroup_via\":\"own-cgroup\""), std::string::npos) << record;
        EXPECT_EQ(record.find("agentjail.slice"), std::string::npos) << record;
        EXPECT_EQ(record.find("systemd-scope"), std::string::npos) << record;
    } else {
        EXPECT_EQ(rc, AJ_EUNSUPPORTED) << err.message();
        EXPECT_NE(err.message().find("below the caller's own cgroup"), std::string::npos)
            << err.message();
        EXPECT_EQ(aj_error_stage(err.e), AJ_STAGE_PREPARE);
    }
    EXPECT_EQ(own_cgroups(), before) << "the caller was moved";
}

// An explicit parent: the run's group goes below it (a scheduler's job cgroup).
TEST_F(CgroupPlacementCApi, UnderTheGivenParent) {
    if (!root()) GTEST_SKIP() << "making a parent cgroup to name needs root";
    // The pids controller's hierarchy: v1's own, or v2's when it has pids.
    std::string mount;
    bool v2 = false;
    std::ifstream mi("/proc/self/mountinfo");
    for (std::string line; std::getline(mi, line);) {
        std::istringstream in(line);
        std::vector<std::string> w;
        for (std::string x; in >> x;) w.push_back(x);
        if (w.size() < 5 || w[3] != "/") continue;
        const std::string super = line.substr(line.find(" - ") + 3);
        if (super.rfind("cgroup ", 0) == 0 && super.find("pids") != std::string::npos) mount = w[4];
        if (super.rfind("cgroup2 ", 0) == 0 &&
            ajtest::read_file(w[4] + "/cgroup.controllers").find("pids") != std::string::npos) {
            mount = w[4];
            v2 = true;
            break;
        }
    }
    if (mount.empty()) GTEST_SKIP() << "no cgroup hierarchy with the pids controller";
    const std::string name = "aj-test-parent-" + std::to_string(::getpid());
    const std::string dir = mount + "/" + name;
    ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0) << dir;
    // v2: an empty group may pass controllers down (a scheduler's job group does),
    // where the hierarchy's top passes them to it.
    if (v2) {
        std::ofstream(dir + "/cgroup.subtree_control") << "+pids";
        if (ajtest::read_file(dir + "/cgroup.subtree_control").find("pids") == std::string::npos) {
            ::rmdir(dir.c_str());
            GTEST_SKIP() << "the top of " << mount << " does not pass pids down, so no parent can";
        }
    }
    ASSERT_EQ(aj_policy_set_limit(pol.p, "pids", "64", err.out()), AJ_OK);
    o.cgroup = AJ_CGROUP_UNDER;
    const std::string parent = "/" + name;
    o.cgroup_parent = parent.c_str();
    const std::string before = own_cgroups();
    // The run's group appears below the parent while the command runs.
    auto runs_below = [&] {
        for (const auto& e : ajtest::dir_entries(dir))
            if (e.rfind("agentjail-", 0) == 0) return true;
        return false;
    };
    EXPECT_FALSE(runs_below());  // control: nothing there before
    Sb running;
    ASSERT_EQ(spawn(running, pol.p, {"/bin/sleep", "30"}, &o, err), AJ_OK) << err.message();
    EXPECT_TRUE(runs_below()) << "no group below " << dir;
    EXPECT_EQ(aj_sandbox_kill(running.s, SIGKILL, err.out()), AJ_OK);
    Res res;
    ASSERT_EQ(aj_sandbox_wait(&res.r, running.s, err.out()), AJ_OK) << err.message();
    char* json = nullptr;
    ASSERT_EQ(aj_result_json(&json, res.r, err.out()), AJ_OK);
    EXPECT_NE(std::string(json).find("\"cgroup_via\":\"given-cgroup\""), std::string::npos) << json;
    aj_string_free(json);
    EXPECT_EQ(own_cgroups(), before) << "the caller was moved";
    EXPECT_FALSE(runs_below()) << "the run's group was left below " << dir;
    EXPECT_EQ(::rmdir(dir.c_str()), 0) << dir;

    // Refused without a parent, and with one that is not a cgroup path.
    o.cgroup_parent = nullptr;
    EXPECT_EQ(spawn(sb, pol.p, {"/bin/true"}, &o, err), AJ_EINVAL);
    o.cgroup_parent = "/../..";
    EXPECT_NE(spawn(sb, pol.p, {"/bin/true"}, &o, err), AJ_OK);
    EXPECT_NE(err.message().find("not a cgroup path"), std::string::npos) << err.message();
}

}  // namespace
