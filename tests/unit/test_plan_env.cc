// SPDX-License-Identifier: Apache-2.0
// Unit tests of the plan's process side: cwd rules, environment allow/deny,
// exec candidates, ids and namespaces, host facts, and the explain forms.
#include "test_plan_fixture.hpp"
#include "base/text.hpp"

#include <sched.h>
#include <sys/stat.h>
#include <nlohmann/json.hpp>

#include <climits>
#include <cstdlib>

using namespace ajplantest;
namespace plan = agentjail::plan;
using agentjail::ErrorKind;
using agentjail::policy::Located;

namespace {
Policy with_cwd(Policy pol, const std::string& cwd) {
    pol.cwd = Located<std::string>{cwd, at("p.toml", 14, 7, "process.cwd")};
    return pol;
}
}  // namespace

// --- cwd ------------------------------------------------------------------------

TEST(PlanCwd, DefaultsToTheWorkspaceOrRoot) {
    PlanTree t;
    auto r = plan::build(t.defaults(), {"/x"}, t.host());
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_EQ(r->cwd, t.proj());
    r = plan::build(t.minimal(), {"/x"}, t.host());
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_EQ(r->cwd, "/");
}

TEST(PlanCwd, ExpandedAndInsideTheWorkspace) {
    PlanTree t;
    auto r = plan::build(with_cwd(t.defaults(), "{workspace}/src"), {"/x"}, t.host());
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_EQ(r->cwd, t.proj() + "/src");
    r = plan::build(with_cwd(t.defaults(), "~"), {"/x"}, t.host());
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_EQ(r->cwd, t.home());
    r = plan::build(with_cwd(t.minimal(), "/dev"), {"/x"}, t.host());
    ASSERT_TRUE(r) << r.error().message();
}

TEST(PlanCwd, ProcIsRefusedBeforeClone) {
    // CVE-2024-21626: a cwd of /proc/self/fd/N is a leaked host directory.
    PlanTree t;
    for (const char* cwd : {"/proc/self/fd/3", "/proc", "/proc/1/cwd", "/dev/fd/3", "/dev/stdin"}) {
        auto r = plan::build(with_cwd(t.defaults(), cwd), {"/x"}, t.host());
        ASSERT_FALSE(r) << cwd;
        EXPECT_EQ(r.error().kind(), ErrorKind::invalid_input);
        EXPECT_NE(r.error().message().find("p.toml:14:7 (process.cwd)"), std::string::npos)
            << r.error().message();
        EXPECT_NE(r.error().message().find("/proc"), std::string::npos) << r.error().message();
    }
}

TEST(PlanCwd, ThroughAWorkspaceSymlinkIntoProcIsRefused) {
    PlanTree t;
    ASSERT_EQ(symlink("/proc/self/fd", (t.proj() + "/fds").c_str()), 0);
    auto r = plan::build(with_cwd(t.defaults(), "{workspace}/fds/3"), {"/x"}, t.host());
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message().find("is under /proc"), std::string::npos) << r.error().message();
}

TEST(PlanCwd, MustBeAbsoluteAndInsideSomeMount) {
    PlanTree t;
    auto r = plan::build(with_cwd(t.defaults(), "src"), {"/x"}, t.host());
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message().find("p.toml:14:7"), std::string::npos) << r.error().message();
    EXPECT_NE(r.error().message().find("not absolute"), std::string::npos) << r.error().message();

    r = plan::build(with_cwd(t.defaults(), "/nowhere/at/all"), {"/x"}, t.host());
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message().find("p.toml:14:7"), std::string::npos) << r.error().message();
    EXPECT_NE(r.error().message().find("outside every mount"), std::string::npos)
        << r.error().message();

    r = plan::build(with_cwd(t.defaults(), "{workspace}/missing"), {"/x"}, t.host());
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message().find("p.toml:14:7"), std::string::npos) << r.error().message();

    r = plan::build(with_cwd(t.defaults(), "/"), {"/x"}, t.host());
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_EQ(r->cwd, "/");
}

TEST(PlanCwd, InsideAHiddenPathIsRefused) {
    PlanTree t;
    t.tmp.mkdir("home/u/proj/.envs/x");
    auto r = plan::build(with_cwd(t.defaults(), "{workspace}/.envs/x"), {"/x"}, t.host());
    ASSERT_FALSE(r);
    EXPECT_NE(r.error().message().find("hidden"), std::string::npos) << r.error().message();
}

// --- environment ------------------------------------------------------------------

TEST(PlanEnv, AllowDenyAndExactNames) {
    PlanTree t;
    HostFacts h = t.host();
    // PATH inside is the caller's, less what is no directory inside.
    std::erase_if(h.environ, [](const std::string& kv) { return kv.rfind("PATH=", 0) == 0; });
    h.environ.push_back("PATH=" + t.sys("usr/bin") + ":/nonexistent/bin:relative/bin::" + t.sys("usr/bin"));
    auto r = plan::build(t.defaults(), {"/x"}, h);
    ASSERT_TRUE(r) << r.error().message();
    const Plan& p = *r;
    EXPECT_EQ(env_of(p, "PATH"), t.sys("usr/bin"));
    EXPECT_TRUE(std::any_of(p.notes.begin(), p.notes.end(), [](const std::string& n) {
        return n.find("less what the sandbox does not have: /nonexistent/bin, relative/bin, an empty entry") !=
               std::string::npos;
    })) << plan::to_text(p);
    EXPECT_EQ(env_of(p, "TERM"), "xterm-256color");
    EXPECT_EQ(env_of(p, "LANG"), "C.UTF-8");
    EXPECT_EQ(env_of(p, "LC_ALL"), "C");  // glob allow
    EXPECT_EQ(env_of(p, "EDITOR"), "vim");
    EXPECT_EQ(env_of(p, "GITHUB_TOKEN"), "<unset>");
    EXPECT_EQ(env_of(p, "OPENAI_API_KEY"), "<unset>");
    EXPECT_EQ(env_of(p, "SSH_AUTH_SOCK"), "<unset>");
    EXPECT_EQ(env_of(p, "TMPDIR"), "<unset>");  // not allowed at all

    // A broad allow does not beat the deny list; an exact name does.
    Policy pol = t.defaults();
    pol.env_allow.push_back({"*", {}});
    pol.env_allow.push_back({"GITHUB_TOKEN", flag("-e")});
    r = plan::build(pol, {"/x"}, t.host());
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_EQ(env_of(*r, "GITHUB_TOKEN"), "AJ-CANARY-gh");
    EXPECT_EQ(env_of(*r, "OPENAI_API_KEY"), "<unset>");
    EXPECT_EQ(env_of(*r, "MY_SECRET_THING"), "<unset>");
    EXPECT_EQ(env_of(*r, "TMPDIR"), t.p("tmpdir"));
}

// A deny pattern matches whatever the case: LC_github_token passes the LC_* allow
// and npm_config__authToken an "*" allow, and both are tokens all the same. Allow
// patterns and the exact-name exception keep their case.
TEST(PlanEnv, DenyPatternsIgnoreCase) {
    PlanTree t;
    HostFacts h = t.host();
    for (const char* kv : {"LC_github_token=AJ-CANARY-lc", "LC_Api_Key=AJ-CANARY-lckey", "lc_all=C",
                           "npm_config__authToken=AJ-CANARY-npm", "My_Secret_Thing=AJ-CANARY-s2",
                           "ssh_auth_sock=/run/other.sock", "Editor=nano"})
        h.environ.emplace_back(kv);
    Policy pol = t.defaults();
    pol.env_deny.push_back({"*TOKEN*", {}});
    auto r = plan::build(pol, {"/x"}, h);
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_EQ(env_of(*r, "LC_github_token"), "<unset>");
    EXPECT_EQ(env_of(*r, "LC_Api_Key"), "<unset>");
    EXPECT_EQ(env_of(*r, "LC_ALL"), "C");        // allowed and no secret
    EXPECT_EQ(env_of(*r, "lc_all"), "<unset>");  // allow patterns keep their case
    EXPECT_EQ(env_of(*r, "Editor"), "<unset>");

    pol.env_allow.push_back({"*", {}});
    r = plan::build(pol, {"/x"}, h);
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_EQ(env_of(*r, "npm_config__authToken"), "<unset>");
    EXPECT_EQ(env_of(*r, "My_Secret_Thing"), "<unset>");
    EXPECT_EQ(env_of(*r, "ssh_auth_sock"), "<unset>");
    EXPECT_EQ(env_of(*r, "LC_github_token"), "<unset>");
    EXPECT_EQ(env_of(*r, "lc_all"), "C");  // now allowed by "*", and no secret
    EXPECT_EQ(env_of(*r, "Editor"), "nano");

    // The exact name still beats the deny, in its own spelling only.
    pol.env_allow.push_back({"LC_github_token", flag("-e")});
    r = plan::build(pol, {"/x"}, h);
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_EQ(env_of(*r, "LC_github_token"), "AJ-CANARY-lc");
    EXPECT_EQ(env_of(*r, "LC_Api_Key"), "<unset>");
}

// explain redacts by the same case-insensitive patterns.
TEST(PlanEnv, ExplainRedactsWhateverTheCase) {
    PlanTree t;
    Policy pol = t.defaults();
    pol.env_set.push_back({"LC_github_token", "AJ-CANARY-set", flag("-e")});
    pol.env_set.push_back({"my_session_cookie", "AJ-CANARY-cookie", flag("-e")});
    auto r = plan::build(pol, {"/x"}, t.host());
    ASSERT_TRUE(r) << r.error().message();
    std::string text = plan::to_text(*r) + plan::to_json(*r);
    EXPECT_EQ(text.find("AJ-CANARY-set"), std::string::npos) << text;
    EXPECT_EQ(text.find("AJ-CANARY-cookie"), std::string::npos) << text;
    EXPECT_NE(text.find("LC_github_token"), std::string::npos) << text;
}

TEST(PlanEnv, SetHomePathUserAndOrder) {
    PlanTree t;
    Policy pol = t.defaults();
    pol.env_set.push_back({"EDITOR", "nano", flag("-e")});
    pol.env_set.push_back({"NEW_ONE", "1", flag("-e")});
    pol.env_set.push_back({"HOME", "/elsewhere", flag("-e")});
    HostFacts h = t.host();
    std::erase_if(h.environ, [](const std::string& kv) { return kv.rfind("PATH=", 0) == 0; });
    auto r = plan::build(pol, {"/x"}, h);
    ASSERT_TRUE(r) << r.error().message();
    const Plan& p = *r;
    EXPECT_EQ(env_of(p, "EDITOR"), "nano");
    EXPECT_EQ(env_of(p, "NEW_ONE"), "1");
    EXPECT_EQ(env_of(p, "HOME"), t.home());  // always the sandbox's home
    // No PATH, and none of the system's directories inside this scratch plan: the system's.
    EXPECT_EQ(env_of(p, "PATH"), "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
    EXPECT_EQ(env_of(p, "USER"), "u");  // from the host facts, not $USER
    EXPECT_EQ(env_of(p, "LOGNAME"), "u");
    EXPECT_TRUE(
        std::is_sorted(p.env.begin(), p.env.end(), [](const std::string& a, const std::string& b) {
            return a.substr(0, a.find('=')) < b.substr(0, b.find('='));
        }));

    // USER and LOGNAME only when the allowlist has them.
    r = plan::build(t.minimal(), {"/x"}, t.host());
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_EQ(env_of(*r, "USER"), "<unset>");
    EXPECT_EQ(env_of(*r, "LOGNAME"), "<unset>");
    EXPECT_EQ(env_of(*r, "HOME"), t.home());
}

// --- command ------------------------------------------------------------------------

TEST(PlanExec, NoCommand) {
    PlanTree t;
    auto r = plan::build(t.defaults(), {}, t.host());
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().kind(), ErrorKind::invalid_input);
    EXPECT_EQ(r.error().message(),
              "no command given (usage: agentjail [OPTIONS] -- COMMAND [ARGS...])");
}

TEST(PlanExec, CandidatesFromTheSandboxPath) {
    PlanTree t;
    Policy pol = t.defaults();
    pol.env_set.push_back({"PATH", "/opt/bin::relative/bin:/usr/bin/:/usr/bin", flag("-e")});
    auto r = plan::build(pol, {"claude", "--help"}, t.host());
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_EQ(r->argv, (std::vector<std::string>{"claude", "--help"}));
    EXPECT_EQ(r->exec_candidates, (std::vector<std::string>{"/opt/bin/claude", "/usr/bin/claude"}));
}

TEST(PlanExec, PathsWithASlash) {
    PlanTree t;
    auto r = plan::build(with_cwd(t.defaults(), "{workspace}/src"), {"../run.sh"}, t.host());
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_EQ(r->exec_candidates, std::vector<std::string>{t.proj() + "/run.sh"});
    r = plan::build(t.defaults(), {"/usr/bin/env", "x"}, t.host());
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_EQ(r->exec_candidates, std::vector<std::string>{"/usr/bin/env"});
}

// --- ids, namespaces -------------------------------------------------------------------

TEST(PlanIds, MapsFlagsHostname) {
    PlanTree t;
    auto r = plan::build(t.defaults(), {"/x"}, t.host());
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_EQ(r->uid, 1000u);
    EXPECT_EQ(r->gid, 1001u);
    EXPECT_EQ(r->uid_map, "1000 1000 1\n");
    EXPECT_EQ(r->gid_map, "1001 1001 1\n");
    const std::uint64_t all = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET |
                              CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP;
    EXPECT_EQ(r->clone_flags, all);
    EXPECT_EQ(r->hostname, "agentjail");
    EXPECT_TRUE(r->die_with_parent);

    Policy pol = t.defaults();
    pol.ns_net = {false, {}};
    pol.ns_uts = {false, {}};
    pol.die_with_parent = {false, {}};
    pol.hostname = {"box", {}};
    r = plan::build(pol, {"/x"}, t.host());
    ASSERT_TRUE(r) << r.error().message();
    EXPECT_EQ(r->clone_flags, all & ~std::uint64_t{CLONE_NEWNET | CLONE_NEWUTS});
    EXPECT_EQ(r->hostname, "");  // no uts namespace: never rename the host
    EXPECT_FALSE(r->die_with_parent);
}

// --- host facts ----------------------------------------------------------------------

TEST(PlanHostFacts, Current) {
    auto h = plan::HostFacts::current();
    ASSERT_TRUE(h) << h.error().message();
    EXPECT_EQ(h->uid, getuid());
    EXPECT_EQ(h->gid, getgid());
    char buf[PATH_MAX];
    ASSERT_NE(realpath(".", buf), nullptr);
    EXPECT_EQ(h->cwd, buf);
    ASSERT_FALSE(h->home.empty());
    EXPECT_EQ(h->home[0], '/');
    ASSERT_NE(realpath(h->home.c_str(), buf), nullptr);
    EXPECT_EQ(h->home, buf);  // canonical
    EXPECT_FALSE(h->user.empty());
    EXPECT_FALSE(h->environ.empty());
}

// --- explain -----------------------------------------------------------------------

TEST(PlanJson, StableKeysAndRedactedSecrets) {
    PlanTree t;
    Policy pol = t.defaults();
    pol.env_allow.push_back({"GITHUB_TOKEN", flag("-e")});
    pol.env_set.push_back({"CORP_THING", "AJ-CANARY-corp", flag("-e")});
    pol.env_deny.push_back({"CORP_*", {}});
    auto r = plan::build(pol, {"tool", "a b"}, t.host());
    ASSERT_TRUE(r) << r.error().message();
    auto j = nlohmann::json::parse(plan::to_json(*r));
    for (const char* key :
         {"policy", "layers", "argv", "exec_candidates", "env", "uid_map", "gid_map", "namespaces",
          "hostname", "workspace", "home", "cwd", "mounts", "notes"})
        EXPECT_TRUE(j.contains(key)) << key;
    EXPECT_EQ(j["policy"], "default");
    EXPECT_EQ(j["layers"], nlohmann::json::array({"minimal", "default"}));
    EXPECT_EQ(j["argv"], nlohmann::json::array({"tool", "a b"}));
    EXPECT_EQ(j["uid_map"], "1000 1000 1\n");
    EXPECT_EQ(j["namespaces"],
              nlohmann::json::array({"user", "mount", "pid", "net", "ipc", "uts", "cgroup"}));
    EXPECT_EQ(j["workspace"], t.proj());
    EXPECT_EQ(j["cwd"], t.proj());
    ASSERT_TRUE(j["env"].is_object());
    EXPECT_EQ(j["env"]["TERM"], "xterm-256color");
    EXPECT_EQ(j["env"]["GITHUB_TOKEN"], "<set>");
    EXPECT_EQ(j["env"]["CORP_THING"], "<set>");
    EXPECT_EQ(plan::to_json(*r).find("AJ-CANARY"), std::string::npos);
    ASSERT_EQ(j["mounts"].size(), r->mounts.size());
    for (const auto& m : j["mounts"])
        for (const char* key :
             {"kind", "src", "dst", "read_only", "is_dir", "size_bytes", "mode", "why"})
            EXPECT_TRUE(m.contains(key)) << key;
    bool saw_mask = false;
    for (const auto& m : j["mounts"]) {
        if (m["dst"] == t.proj() + "/.env") {
            saw_mask = true;
            EXPECT_EQ(m["kind"], "mask_file");
            EXPECT_EQ(m["read_only"], true);
        }
        if (m["dst"] == "/tmp") {
            EXPECT_EQ(m["kind"], "tmpfs");
            EXPECT_EQ(m["mode"], 01777);
            EXPECT_EQ(m["size_bytes"], 1024ull * 1024 * 1024);
        }
    }
    EXPECT_TRUE(saw_mask);
}

TEST(PlanText, ReadableForHumans) {
    PlanTree t;
    Policy pol = t.defaults();
    pol.env_allow.push_back({"GITHUB_TOKEN", flag("-e")});
    Policy pol2 = pol;
    pol2.ro.clear();  // a PATH the sandbox can resolve: the scratch usr/bin
    pol2.ro.push_back(
        MountRule{t.sys("usr"), "", false, at("minimal.toml", 4, 9, "filesystem.ro[0]")});
    pol2.env_set.push_back({"PATH", t.sys("usr/bin"), flag("-e")});
    auto r = plan::build(pol2, {"tool", "it's"}, t.host());
    ASSERT_TRUE(r) << r.error().message();
    std::string text = plan::to_text(*r);
    SCOPED_TRACE(text);
    EXPECT_NE(text.find("default"), std::string::npos);
    EXPECT_NE(text.find("tool 'it'\\''s'"), std::string::npos);
    EXPECT_NE(text.find("resolves   " + t.sys("usr/bin/tool")), std::string::npos);
    EXPECT_NE(text.find("user mount pid net ipc uts cgroup"), std::string::npos);
    EXPECT_NE(text.find("1000 1000 1"), std::string::npos);
    EXPECT_NE(text.find("GITHUB_TOKEN=<set>"), std::string::npos);
    EXPECT_EQ(text.find("AJ-CANARY"), std::string::npos);
    EXPECT_NE(text.find("TERM=xterm-256color"), std::string::npos);
    // One line per mount, in plan order, with its origin.
    auto find_field = [&text](const std::string& field, size_t from) {
        for (size_t pos = text.find(" " + field, from); pos != std::string::npos;
             pos = text.find(" " + field, pos + 1)) {
            char next = pos + 1 + field.size() < text.size() ? text[pos + 1 + field.size()] : '\n';
            if (next == ' ' || next == '\n') return pos;
        }
        return std::string::npos;
    };
    size_t last = text.find("mounts");
    for (const auto& op : r->mounts) {
        size_t at_pos = find_field(op.dst, last);
        ASSERT_NE(at_pos, std::string::npos) << op.dst;
        last = at_pos;
    }
    EXPECT_NE(text.find("mask file"), std::string::npos);
    EXPECT_NE(text.find("<- " + t.sys("usr") + " "), std::string::npos);
    EXPECT_NE(text.find("minimal.toml:4:9 (filesystem.ro[0])"), std::string::npos);
    EXPECT_NE(text.find("size=1G mode=1777"), std::string::npos);
    EXPECT_NE(text.find("-> /proc/self/fd"), std::string::npos);
}

// The one reading of a PATH-like list (the plan's command search, git's own lookup):
// absolute directories in order; empty and relative entries, which would depend on
// the current directory, are skipped.
TEST(BasePathList, AbsoluteDirectoriesInOrder) {
    EXPECT_EQ(agentjail::base::absolute_path_dirs("/a:/b/c::rel:./x:/d/"),
              (std::vector<std::string>{"/a", "/b/c", "/d/"}));
    EXPECT_TRUE(agentjail::base::absolute_path_dirs("").empty());
    EXPECT_TRUE(agentjail::base::absolute_path_dirs(":::").empty());
    EXPECT_EQ(agentjail::base::absolute_path_dirs("/only"), std::vector<std::string>{"/only"});
}
