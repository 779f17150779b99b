// SPDX-License-Identifier: Apache-2.0
// The caller's tools in the plan (lib/plan/toolchain.cc, issue 27 item 1): which
// installation roots under a scratch home the caller's PATH, its links and the
// command's #! lines lead to, what PATH inside becomes, and what is never bound
// (the home itself, directories of unrelated things, secrets under a root).
#include "plan/internal.hpp"
#include "plan/plan.hpp"
#include "policy/policy.hpp"
#include "test_support.hpp"
#include "util/strings.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

namespace agentjail {
namespace {

using ajtest::TempDir;

std::string env_of(const plan::Plan& p, const std::string& name) {
    for (const auto& kv : p.env)
        if (kv.rfind(name + "=", 0) == 0) return kv.substr(name.size() + 1);
    return "(unset)";
}

const plan::MountOp* last_at(const plan::Plan& p, const std::string& dst) {
    const plan::MountOp* found = nullptr;
    for (const auto& m : p.mounts)
        if (m.dst == dst) found = &m;
    return found;
}

// The binds the caller's tools added, by source.
std::vector<std::string> tool_binds(const plan::Plan& p) {
    std::vector<std::string> out;
    for (const auto& m : p.mounts)
        if (m.kind == plan::MountKind::bind && m.why.find("the caller's tools") != std::string::npos)
            out.push_back(m.src);
    std::sort(out.begin(), out.end());
    return out;
}

struct Dev {
    TempDir tmp{"aj-tools"};
    std::string home() const { return tmp.path() + "/home"; }
    std::string h(const std::string& rel) const { return home() + "/" + rel; }
    Dev() { tmp.mkdir("home/proj"); }
    // A link at `rel` below the scratch directory (as write() and mkdir() name them).
    void link(const std::string& target, const std::string& rel) {
        ASSERT_EQ(::symlink(target.c_str(), (tmp.path() + "/" + rel).c_str()), 0) << rel;
    }
    plan::HostFacts host(const std::string& path) const {
        plan::HostFacts f;
        f.uid = ::getuid();
        f.gid = ::getgid();
        f.user = "u";
        f.home = home();
        f.cwd = home() + "/proj";
        f.environ = {"PATH=" + path, "HOME=" + home()};
        return f;
    }
    plan::Plan plan(const std::vector<std::string>& argv, const std::string& path, const char* policy = "default") {
        auto pol = policy::load(policy);
        EXPECT_TRUE(pol) << pol.error().message();
        auto p = plan::build(*pol, argv, host(path));
        EXPECT_TRUE(p) << p.error().message();
        return p ? std::move(*p) : plan::Plan{};
    }
};

TEST(PlanToolchain, AnNvmNodeVersionAndItsGlobalPackages) {
    Dev d;
    const std::string v = ".nvm/versions/node/v20.11.0";
    d.tmp.write("home/" + v + "/bin/node", "#!/bin/sh\n", 0755);
    d.tmp.write("home/" + v + "/lib/node_modules/@scope/cli/cli.js", "#!/usr/bin/env node\n", 0755);
    d.link("../lib/node_modules/@scope/cli/cli.js", "home/" + v + "/bin/cli");
    d.tmp.write("home/.nvm/nvm.sh", "# not needed to run node\n");
    auto p = d.plan({"cli", "--help"}, d.h(v + "/bin") + ":/usr/bin:/bin");
    EXPECT_EQ(tool_binds(p), std::vector<std::string>{d.h(v)}) << plan::to_text(p);
    const auto* m = last_at(p, d.h(v));
    ASSERT_NE(m, nullptr);
    EXPECT_TRUE(m->read_only);
    EXPECT_EQ(env_of(p, "PATH"), d.h(v + "/bin") + ":/usr/bin:/bin");
    ASSERT_FALSE(p.exec_candidates.empty());
    EXPECT_EQ(p.exec_candidates[0], d.h(v + "/bin/cli"));
    EXPECT_TRUE(std::any_of(p.notes.begin(), p.notes.end(), [&](const std::string& n) {
        return n == "tools: " + d.h(v) + " read-only (PATH entry " + d.h(v + "/bin") + ")";
    })) << plan::to_text(p);
}

// A policy that binds the home's parent read-only (`--ro /home`) does not show what
// is under the private home: the tools' roots are bound all the same.
TEST(PlanToolchain, ABindOfTheHomesParentDoesNotHideTheToolsUnderThePrivateHome) {
    Dev d;
    const std::string v = ".nvm/versions/node/v20.11.0";
    d.tmp.write("home/" + v + "/bin/node", "#!/bin/sh\n", 0755);
    auto pol = policy::load("default");
    ASSERT_TRUE(pol);
    pol->ro.push_back(policy::MountRule{d.tmp.path(), "", false, policy::Origin{"command line", 0, 0, "--ro"}});
    auto p = plan::build(*pol, {"node"}, d.host(d.h(v + "/bin") + ":/usr/bin"));
    ASSERT_TRUE(p) << p.error().message();
    EXPECT_EQ(tool_binds(*p), std::vector<std::string>{d.h(v)}) << plan::to_text(*p);
    EXPECT_EQ(env_of(*p, "PATH"), d.h(v + "/bin") + ":/usr/bin");
}

TEST(PlanToolchain, PyenvIsBoundWholeForItsShims) {
    Dev d;
    d.tmp.write("home/.pyenv/shims/python", "#!/usr/bin/env bash\nexec pyenv exec python \"$@\"\n", 0755);
    d.tmp.write("home/.pyenv/libexec/pyenv", "#!/bin/sh\n", 0755);
    d.tmp.write("home/.pyenv/versions/3.12.1/bin/python3.12", "#!/bin/sh\n", 0755);
    auto p = d.plan({"python", "-V"}, d.h(".pyenv/shims") + ":" + d.h(".pyenv/bin") + ":/usr/bin");
    EXPECT_EQ(tool_binds(p), std::vector<std::string>{d.h(".pyenv")}) << plan::to_text(p);
    // ~/.pyenv/bin does not exist: left out of PATH inside, and said so.
    EXPECT_EQ(env_of(p, "PATH"), d.h(".pyenv/shims") + ":/usr/bin");
}

TEST(PlanToolchain, CargosBinAloneAndRustupsToolchainsNotItsCachesOrCredentials) {
    Dev d;
    d.tmp.write("home/.cargo/bin/cargo", "rustup proxy\n", 0755);
    d.tmp.write("home/.cargo/credentials.toml", "[registry]\ntoken = \"AJ-CANARY-crates\"\n", 0600);
    d.tmp.write("home/.cargo/registry/cache/x.crate", "cached\n");
    d.tmp.write("home/.rustup/toolchains/stable-x86_64-unknown-linux-gnu/bin/cargo", "\x7f" "ELF", 0755);
    d.tmp.write("home/.rustup/settings.toml", "default_toolchain = \"stable\"\n");
    auto p = d.plan({"cargo", "build"}, d.h(".cargo/bin") + ":/usr/bin");
    EXPECT_EQ(tool_binds(p), (std::vector<std::string>{d.h(".cargo/bin"), d.h(".rustup")})) << plan::to_text(p);
    EXPECT_EQ(last_at(p, d.h(".cargo/registry")), nullptr) << "a cache the host's cargo reads would be shared";
    EXPECT_EQ(last_at(p, d.h(".cargo")), nullptr);
}

TEST(PlanToolchain, LinksInLocalBinLeadToTheirInstallationsAndAVenvToItsPython) {
    Dev d;
    d.tmp.write("home/.local/share/claude/versions/2.0.1", "\x7f" "ELF", 0755);
    d.tmp.mkdir("home/.local/bin");
    d.link("../share/claude/versions/2.0.1", "home/.local/bin/claude");
    const std::string venv = "home/.local/share/pipx/venvs/black";
    d.tmp.write(venv + "/bin/black", "#!" + d.h(".local/share/pipx/venvs/black/bin/python") + "\n", 0755);
    d.tmp.write("home/.pyenv/versions/3.12.1/bin/python3.12", "\x7f" "ELF", 0755);
    d.link(d.h(".pyenv/versions/3.12.1/bin/python3.12"), "home/.local/share/pipx/venvs/black/bin/python");
    d.tmp.write(venv + "/pyvenv.cfg", "home = " + d.h(".pyenv/versions/3.12.1/bin") + "\nversion = 3.12.1\n");
    d.link("../share/pipx/venvs/black/bin/black", "home/.local/bin/black");
    d.tmp.write("home/.local/share/keyrings/login.keyring", "AJ-CANARY-keyring\n");
    auto p = d.plan({"black", "."}, d.h(".local/bin") + ":/usr/bin");
    EXPECT_EQ(tool_binds(p), (std::vector<std::string>{d.h(".local/bin"), d.h(".local/share/claude/versions/2.0.1"),
                                                      d.h(".local/share/pipx/venvs/black"), d.h(".pyenv")}))
        << plan::to_text(p);
    // A link to a file elsewhere shows that file alone, not its neighbours.
    d.tmp.write("home/notes/tool.sh", "#!/bin/sh\n", 0755);
    d.tmp.write("home/notes/diary.txt", "AJ-CANARY-diary\n");
    d.link("../../notes/tool.sh", "home/.local/bin/tool");
    auto q = d.plan({"tool"}, d.h(".local/bin") + ":/usr/bin");
    const auto binds = tool_binds(q);
    EXPECT_NE(std::find(binds.begin(), binds.end(), d.h("notes/tool.sh")), binds.end()) << plan::to_text(q);
    EXPECT_EQ(std::find(binds.begin(), binds.end(), d.h("notes")), binds.end()) << plan::to_text(q);
    // Never the directories that hold other things: ~/.local/share holds the keyring.
    EXPECT_EQ(last_at(p, d.h(".local/share")), nullptr);
    EXPECT_EQ(last_at(p, d.h(".local")), nullptr);
}

TEST(PlanToolchain, TheCommandsInterpreterByItsHashBangLine) {
    Dev d;
    d.tmp.write("home/opt/py/bin/python3", "\x7f" "ELF", 0755);
    d.tmp.write("home/proj/tool.py", "#!" + d.h("opt/py/bin/python3") + " -u\nprint(1)\n", 0755);
    auto p = d.plan({"./tool.py"}, "/usr/bin:/bin");
    EXPECT_EQ(tool_binds(p), std::vector<std::string>{d.h("opt/py")}) << plan::to_text(p);
    // Through env, looked up on the caller's PATH.
    Dev e;
    e.tmp.write("home/sdk/node/bin/node", "\x7f" "ELF", 0755);
    e.tmp.write("home/proj/run.js", "#!/usr/bin/env -S node --no-warnings\n", 0755);
    auto q = e.plan({e.h("proj/run.js")}, "/usr/bin:" + e.h("sdk/node/bin"));
    EXPECT_EQ(tool_binds(q), std::vector<std::string>{e.h("sdk/node")}) << plan::to_text(q);
}

TEST(PlanToolchain, NeverTheHomeItselfNorADirectoryOfUnrelatedThings) {
    Dev d;
    d.tmp.write("home/tool", "#!/bin/sh\n", 0755);
    d.tmp.write("home/.local/tool2", "#!/bin/sh\n", 0755);
    d.tmp.write("home/.config/x", "AJ-CANARY\n");
    auto p = d.plan({"tool"}, d.home() + ":" + d.h(".local") + ":" + d.h(".config") + ":/usr/bin");
    // A program directly in the home is bound alone; the home, ~/.local and
    // ~/.config never are (the home on PATH is the private one).
    EXPECT_EQ(tool_binds(p), std::vector<std::string>{d.h("tool")}) << plan::to_text(p);
    EXPECT_EQ(env_of(p, "PATH"), d.home() + ":/usr/bin");
}

TEST(PlanToolchain, AHiddenPathUnderARootStaysHidden) {
    Dev d;
    d.tmp.write("home/.ssh/bin/helper", "#!/bin/sh\n", 0755);
    d.tmp.write("home/.ssh/id_ed25519", "AJ-CANARY-ssh\n", 0600);
    auto p = d.plan({"helper"}, d.h(".ssh/bin") + ":/usr/bin");
    // Deny wins: the bind the tools would add goes under the mask, so it is left out.
    EXPECT_TRUE(tool_binds(p).empty()) << plan::to_text(p);
    for (const auto& m : p.mounts)
        EXPECT_FALSE(util::path_within(m.dst, d.h(".ssh")) && m.kind == plan::MountKind::bind)
            << "a bind shows the hidden " << m.dst;
    EXPECT_EQ(env_of(p, "PATH"), "/usr/bin");
}

TEST(PlanToolchain, ALinkedPathEntryIsReplacedByWhatItLeadsTo) {
    // fnm puts a per-shell link (in $XDG_RUNTIME_DIR or ~/.local/state) on PATH.
    Dev d;
    const std::string inst = "home/.local/share/fnm/node-versions/v20.11.0/installation";
    d.tmp.write(inst + "/bin/node", "\x7f" "ELF", 0755);
    d.tmp.mkdir("home/.local/state/fnm_multishells");
    d.link(d.h(".local/share/fnm/node-versions/v20.11.0/installation"), "home/.local/state/fnm_multishells/4242_1");
    auto p = d.plan({"node"}, d.h(".local/state/fnm_multishells/4242_1/bin") + ":/usr/bin");
    EXPECT_EQ(tool_binds(p), std::vector<std::string>{d.h(".local/share/fnm/node-versions/v20.11.0")})
        << plan::to_text(p);
    EXPECT_EQ(env_of(p, "PATH"), d.tmp.path() + "/" + inst + "/bin:/usr/bin");
}

TEST(PlanToolchain, OffByPolicyAndAPathThePolicySetsIsKept) {
    Dev d;
    d.tmp.write("home/.nvm/versions/node/v20.11.0/bin/node", "#!/bin/sh\n", 0755);
    const std::string path = d.h(".nvm/versions/node/v20.11.0/bin") + ":/usr/bin";
    auto pol = policy::load_text("extends = 'default'\n[filesystem]\npath_tools = false\n", "p.toml");
    ASSERT_TRUE(pol) << pol.error().message();
    auto p = plan::build(*pol, {"node"}, d.host(path));
    ASSERT_TRUE(p) << p.error().message();
    EXPECT_TRUE(tool_binds(*p).empty());
    EXPECT_EQ(env_of(*p, "PATH"), "/usr/bin");
    // minimal has no home: nothing of it.
    auto m = d.plan({"node"}, path, "minimal");
    EXPECT_TRUE(tool_binds(m).empty());
    // -e PATH=... is as given.
    auto set = policy::load("default");
    ASSERT_TRUE(set);
    policy::set_env(*set, "PATH", "/opt/x:/usr/bin", policy::Origin{"", 0, 0, "-e"});
    auto s = plan::build(*set, {"node"}, d.host(path));
    ASSERT_TRUE(s) << s.error().message();
    EXPECT_EQ(env_of(*s, "PATH"), "/opt/x:/usr/bin");
}

TEST(PlanToolchain, ThePresetsPathGoesInFrontWhenItsThere) {
    Dev d;
    d.tmp.write("home/.local/share/claude/versions/2.0.1", "\x7f" "ELF", 0755);
    d.tmp.mkdir("home/.local/bin");
    d.link("../share/claude/versions/2.0.1", "home/.local/bin/claude");
    // The caller's PATH lacks ~/.local/bin; claude.toml's [environment] path puts it first.
    auto p = d.plan({"claude"}, "/usr/bin:/bin", "claude");
    EXPECT_EQ(env_of(p, "PATH"), d.h(".local/bin") + ":/usr/bin:/bin");
    ASSERT_FALSE(p.exec_candidates.empty());
    EXPECT_EQ(p.exec_candidates[0], d.h(".local/bin/claude"));
}

}  // namespace
}  // namespace agentjail
