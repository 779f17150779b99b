// SPDX-License-Identifier: Apache-2.0
// Escape tests, the workspace in direct mode (issue 10): a hidden or protected name
// replaced on the host during the run by real tools (sed -i, an editor's save by
// rename, git config) is covered again by the supervisor; guarded names cannot be
// moved away from inside; placeholders stop the creation of a missing protected
// name and are gone after the run; a workspace named through a planted link is
// refused. Each with a positive control showing the probe could succeed.
//
// Covering again, placeholders and rename locks are the mounts view's (--view mounts),
// which these tests pin; the default view judges each name at its lookup and has none
// of them (its attacks: view_test.cc, VIEW01-VIEW15).
#include "common.hpp"
#include "live_run.hpp"

#include <fstream>

#include <algorithm>

#include "../integration/record.hpp"

#include "guarded_launch.hpp"
#include "launch/launch.hpp"
#include "run/loop.hpp"
#include "plan/plan.hpp"
#include "policy/policy.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>

using namespace ajesc;

namespace {

const std::vector<std::string> kMountsView = {"--view", "mounts"};

// The re-applications the record lists for name, and the window of the first.
size_t reapplied(const nlohmann::json& rec, const std::string& name, double* window_ms = nullptr) {
    size_t n = 0;
    if (!rec.is_object() || !rec.contains("workspace")) return 0;
    for (const auto& e : rec["workspace"]["reapplied"]) {
        if (e["name"] != name) continue;
        if (n == 0 && window_ms) *window_ms = e["window_ms"].get<double>();
        ++n;
    }
    return n;
}

}  // namespace

// sed -i writes a temporary file and renames it over .env: the kernel drops the
// sandbox's mask on the old name. The supervisor masks the new file again.
TEST_F(Escape, WS01_HostSedOnHiddenEnvIsMaskedAgain) {
    jail.also(kMountsView);
    const std::string fresh = jail.new_canary();
    jail.plant("notes", "old-note\n");
    LiveRun r = start(jail, "cat .env; echo env-rc=$?; cat notes");
    ASSERT_TRUE(ready(r));
    host("sed -i 's/^API_KEY=.*/API_KEY=" + fresh + "/' .env && sed -i 's/old-note/new-note/' notes", r.ws);
    auto out = finish(jail, r);
    ASSERT_EQ(out.status, 0) << describe(out);
    EXPECT_EQ(field(out.out, "env-rc"), "1") << describe(out);
    EXPECT_FALSE(ajtest::contains(out.out, fresh)) << describe(out);
    // Positive control: the host's change of a name nobody guards reaches the sandbox.
    EXPECT_TRUE(ajtest::contains(out.out, "new-note")) << describe(out);
    // And the host really changed .env (the new secret is there to be read).
    EXPECT_TRUE(ajtest::contains(ajtest::read_file(r.ws + "/.env"), fresh));
    double window = -1;
    auto rec = ajit::record_of(out);
    EXPECT_EQ(reapplied(rec, r.ws + "/.env", &window), 1u) << out.err;
    EXPECT_TRUE(ajtest::contains(out.err, r.ws + "/.env: replaced by the host during the run")) << out.err;
    std::cout << "[ window ] sed -i .env: re-applied " << window << " ms after the host's rename was noticed\n";
}

// An editor's atomic save: the whole new file written under another name, then
// renamed over the old one (vim's backupcopy=no, VS Code, most IDEs).
TEST_F(Escape, WS02_EditorSaveOnHiddenEnvIsMaskedAgain) {
    jail.also(kMountsView);
    const std::string fresh = jail.new_canary();
    jail.plant("notes", "old-note\n");
    LiveRun r = start(jail, "cat .env.local; echo env-rc=$?; cat notes");
    ASSERT_TRUE(ready(r));
    host("printf 'KEY=" + fresh + "\\n' > .env.local.swp && mv -f .env.local.swp .env.local && "
         "printf 'new-note\\n' > notes.swp && mv -f notes.swp notes",
         r.ws);
    auto out = finish(jail, r);
    ASSERT_EQ(out.status, 0) << describe(out);
    EXPECT_EQ(field(out.out, "env-rc"), "1") << describe(out);
    EXPECT_FALSE(ajtest::contains(out.out, fresh)) << describe(out);
    EXPECT_TRUE(ajtest::contains(out.out, "new-note")) << describe(out);  // control
    double window = -1;
    EXPECT_EQ(reapplied(ajit::record_of(out), r.ws + "/.env.local", &window), 1u) << out.err;
    std::cout << "[ window ] editor save .env.local: re-applied " << window << " ms after noticing\n";
}

// The user's own `git config` rewrites .git/config by rename (config.lock): the
// sandbox's read-only bind goes with the old inode. It comes back on the new one,
// so the sandbox still cannot plant core.fsmonitor or core.hooksPath.
TEST_F(Escape, WS03_HostGitConfigKeepsTheConfigReadOnly) {
    jail.also(kMountsView);
    host("git init -q . && git config user.name t", jail.ws());
    const std::string cfg = jail.ws() + "/.git/config";
    LiveRun r = start(jail,
                  "git config core.hooksPath /tmp/planted; echo cfg-rc=$?; echo fsmonitor=$(grep -c fsmonitor .git/config); "
                  "echo planted >> .git/description; echo desc-rc=$?",
                  {"--ro", cfg});
    ASSERT_TRUE(ready(r));
    struct stat before {};
    ASSERT_EQ(::stat(cfg.c_str(), &before), 0);
    host("git config core.fsmonitor false", jail.ws());
    struct stat after {};
    ASSERT_EQ(::stat(cfg.c_str(), &after), 0);
    ASSERT_NE(before.st_ino, after.st_ino) << "git did not replace the file: the test proves nothing";
    auto out = finish(jail, r);
    ASSERT_EQ(out.status, 0) << describe(out);
    EXPECT_NE(field(out.out, "cfg-rc"), "0") << describe(out);
    EXPECT_FALSE(ajtest::contains(ajtest::read_file(cfg), "planted"));
    // The sandbox sees the host's new config (the new inode is what is bound)...
    EXPECT_EQ(field(out.out, "fsmonitor"), "1") << describe(out);
    // ...and, control, an unprotected file beside it stays writable.
    EXPECT_EQ(field(out.out, "desc-rc"), "0") << describe(out);
    double window = -1;
    EXPECT_EQ(reapplied(ajit::record_of(out), cfg, &window), 1u) << out.err;
    std::cout << "[ window ] git config: read-only bind re-applied " << window << " ms after noticing\n";
}

// Inside, a guarded name is a mount point of the sandbox's own namespace: it cannot
// be renamed or removed (which would leave a name to fill in for the host).
TEST_F(Escape, WS04_GuardedNamesCannotBeMovedOrRemovedInside) {
    jail.also(kMountsView);
    jail.plant("notes", "n\n");
    auto out = jail.sh("mv .env moved 2>&1; echo mv-rc=$?; rm -f .env 2>&1; echo rm-rc=$?; "
                       "mv notes notes2; echo control-rc=$?");
    ASSERT_EQ(out.status, 0) << describe(out);
    EXPECT_NE(field(out.out, "mv-rc"), "0") << describe(out);
    EXPECT_NE(field(out.out, "rm-rc"), "0") << describe(out);
    EXPECT_TRUE(ajtest::contains(out.out, "busy")) << describe(out);
    EXPECT_TRUE(ajtest::exists(jail.ws() + "/.env"));
    EXPECT_EQ(field(out.out, "control-rc"), "0") << describe(out);  // a sibling moves
    EXPECT_TRUE(ajtest::exists(jail.ws() + "/notes2"));
}

namespace {

using ajtest::Pipe;

// The default policy on ws, with `rel` protected as a name that does not exist yet
// (what the planner makes of `.mcp.json` and the like).
agentjail::Result<agentjail::plan::Plan> plan_with_placeholder(const std::string& ws, const std::string& rel,
                                                                  const std::string& script) {
    auto pol = agentjail::policy::load("default");
    if (!pol) return std::move(pol).error();
    pol->workspace_path = agentjail::policy::Located<std::string>{ws, {}};
    pol->workspace_explicit = true;
    pol->workspace_view = {agentjail::policy::WorkspaceView::mounts, {}};  // placeholders are its
    auto host = agentjail::plan::HostFacts::current();
    if (!host) return std::move(host).error();
    auto plan = agentjail::plan::build(*pol, {"/bin/sh", "-c", script}, *host);
    if (!plan) return plan;
    // The default protect list already makes this placeholder (lib/plan/workspace.cc).
    for (const auto& g : plan->guards)
        if (g.host == ws + "/" + rel && g.placeholder) return plan;
    agentjail::plan::MountOp op;
    op.src = ws + "/" + rel;
    op.dst = op.src;
    op.read_only = true;
    op.is_dir = false;
    op.why = "test: protected";
    plan->mounts.push_back(op);
    agentjail::plan::Guard g;
    g.kind = agentjail::plan::Guard::Kind::protected_ro;
    g.host = op.src;
    g.inside = op.dst;
    g.placeholder = true;
    plan->guards.push_back(g);
    return plan;
}

}  // namespace

// A missing `.mcp.json` (code the user's agent runs when it opens the folder)
// cannot be created from inside; after the run there is nothing left on the host.
TEST_F(Escape, WS05_MissingProtectedNameCannotBeCreatedAndNoPlaceholderIsLeft) {
    const std::string name = jail.ws() + "/.mcp.json";
    auto plan = plan_with_placeholder(
        jail.ws(), ".mcp.json",
        "echo '{\"mcpServers\":{}}' > .mcp.json; echo write-rc=$?; rm -rf .mcp.json; [ -S .mcp.json ]; "
        "echo present=$?; rm -f .mcp.json; echo rm-rc=$?; mv .mcp.json moved; echo mv-rc=$?; [ -S .mcp.json ]; "
        "echo still=$?; touch .mcp.json/x; echo in-rc=$?; "
        "echo '{}' > .other.json; echo control-rc=$?; ls -A .mcp.json | wc -l");
    ASSERT_TRUE(plan) << plan.error().message();
    Pipe out;
    agentjail::launch::Stdio stdio;
    stdio.out = out.w;
    stdio.err = out.w;
    agentjail::run::Loop loop;  // what the supervisor waits on; outlives the Process
    loop.start();
    ajtest::GuardedLaunch proc;  // the launch with the guard a run has (its placeholders)
    auto started = proc.spawn(*plan, stdio, loop.io());
    ASSERT_TRUE(started) << started.error().message();
    out.close_write();
    std::string text = out.read_all();
    auto res = proc.wait();
    ASSERT_TRUE(res) << res.error().message();
    EXPECT_EQ(res->exit_code, 0) << text;
    EXPECT_NE(field(text, "write-rc"), "0") << text;
    EXPECT_NE(field(text, "rm-rc"), "0") << text;
    EXPECT_NE(field(text, "mv-rc"), "0") << text;
    // The failures above are of the placeholder's own: it was still there after each.
    EXPECT_EQ(field(text, "present"), "0") << text;
    EXPECT_EQ(field(text, "still"), "0") << text;
    EXPECT_NE(field(text, "in-rc"), "0") << text;
    EXPECT_EQ(field(text, "control-rc"), "0") << text;  // the workspace itself is writable
    EXPECT_FALSE(ajtest::exists(name)) << "the placeholder was left on the host";
    // The default protect list makes more placeholders (.gitattributes, .vscode, ...):
    // this one is among them, and every one is gone again.
    const auto& made = res->workspace.placeholders_made;
    EXPECT_NE(std::find(made.begin(), made.end(), name), made.end()) << text;
    EXPECT_EQ(res->workspace.placeholders_removed.size(), made.size());
    EXPECT_TRUE(res->workspace.placeholders_kept.empty());
}

// The user fills in a file placeholder during the run (it is theirs now): it is kept.
// (The planner makes file placeholders only in git directories, .git/config.worktree;
// this one is the test's own.) And a name that exists at plan time is never a
// placeholder, so never removed.
TEST_F(Escape, WS05_PlaceholderTheUserFilledIsKept) {
    const std::string name = jail.ws() + "/tool.json";
    auto plan = plan_with_placeholder(jail.ws(), "tool.json",
                                      "touch ready; i=0; while [ ! -e probe ] && [ $i -lt 1000 ]; do sleep 0.01; "
                                      "i=$((i+1)); done; cat tool.json; echo x >> tool.json; echo write-rc=$?");
    ASSERT_TRUE(plan) << plan.error().message();
    Pipe out;
    agentjail::launch::Stdio stdio;
    stdio.out = out.w;
    stdio.err = out.w;
    agentjail::run::Loop loop;  // what the supervisor waits on; outlives the Process
    loop.start();
    ajtest::GuardedLaunch proc;  // the launch with the guard a run has (its placeholders)
    auto started = proc.spawn(*plan, stdio, loop.io());
    ASSERT_TRUE(started) << started.error().message();
    out.close_write();
    ASSERT_TRUE(ajtest::wait_for_file(jail.ws() + "/ready", 10000));
    {
        // The user's editor writes into the empty file in place.
        int fd = ::open(name.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
        if (fd < 0) {
            (void)::chmod(name.c_str(), 0644);
            fd = ::open(name.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
        }
        ASSERT_GE(fd, 0);
        ASSERT_EQ(::write(fd, "{\"user\":1}\n", 11), 11);
        ::close(fd);
    }
    ::close(::open((jail.ws() + "/probe").c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644));
    std::string text = out.read_all();
    auto res = proc.wait();
    ASSERT_TRUE(res) << res.error().message();
    EXPECT_TRUE(ajtest::contains(text, "{\"user\":1}")) << text;  // the host's content reaches it
    EXPECT_NE(field(text, "write-rc"), "0") << text;              // still read-only inside
    ASSERT_TRUE(ajtest::exists(name));
    EXPECT_EQ(ajtest::read_file(name), "{\"user\":1}\n");
    ASSERT_EQ(res->workspace.placeholders_kept.size(), 1u);
    EXPECT_TRUE(ajtest::contains(res->workspace.placeholders_kept[0], "not empty"));
}

// An earlier run had the project read-write and replaced `build` by a link to the
// home. `-C build` would make the whole home the read-write workspace.
TEST_F(Escape, WS06_WorkspaceThroughAPlantedLinkIsRefused) {
    ASSERT_EQ(::symlink(jail.home().c_str(), (jail.ws() + "/build").c_str()), 0);
    ajtest::RunOptions o;
    o.cwd = jail.ws();
    auto out = jail.run({"-C", "build", "--", "/bin/sh", "-c", "cat .ssh/id_ed25519; ls"}, o);
    EXPECT_EQ(out.status, 125) << describe(out);
    EXPECT_TRUE(ajtest::contains(out.err, "could have been planted by an earlier run; name the real path"))
        << describe(out);
    // Control: the home named as itself is allowed, with its hidden paths hidden (the
    // view does not list them either).
    auto ok = jail.run({"-C", jail.home(), "--", "/bin/sh", "-c",
                        "ls -a . | grep -c '^.ssh$'; cat .ssh/id_ed25519; echo ssh-rc=$?"},
                       o);
    EXPECT_EQ(ok.status, 0) << describe(ok);
    EXPECT_EQ(ajtest::lines(ok.out).front(), "0") << describe(ok);
    EXPECT_EQ(field(ok.out, "ssh-rc"), "1") << describe(ok);
}

// When the protection cannot come back (here the host put a symbolic link at the
// protected name, which a read-only bind cannot cover safely), the run stops and
// the record says why, rather than going on with the name open.
TEST_F(Escape, WS07_ARunWhoseGuardCannotBeReappliedIsStopped) {
    jail.also(kMountsView);
    host("git init -q .", jail.ws());
    const std::string cfg = jail.ws() + "/.git/config";
    LiveRun r = start(jail, "echo still-running", {"--ro", cfg});
    ASSERT_TRUE(ready(r));
    host("ln -s ../README .git/config.new && "
         "mv -f .git/config.new .git/config",
         jail.ws());
    auto out = finish(jail, r);
    EXPECT_EQ(out.status, 137) << describe(out);
    EXPECT_FALSE(ajtest::contains(out.out, "still-running")) << describe(out);
    auto rec = ajit::record_of(out);
    ASSERT_TRUE(rec.is_object()) << out.err;
    EXPECT_EQ(rec["reason"], "workspace guard") << out.err;
    EXPECT_TRUE(ajtest::contains(rec["workspace"]["stopped"].get<std::string>(), "symbolic link")) << out.err;
    EXPECT_TRUE(ajtest::contains(out.err, "the run was stopped")) << out.err;
}

// A flood of host-side replacements never kills agentjail and each wake-up costs one
// check per guard; once it is over the name is masked.
TEST_F(Escape, WS08_AFloodOfReplacementsIsBoundedAndEndsMasked) {
    jail.also(kMountsView);
    const std::string fresh = jail.new_canary();
    LiveRun r = start(jail, "cat .env; echo env-rc=$?");
    ASSERT_TRUE(ready(r));
    host("i=0; while [ $i -lt 300 ]; do printf 'API_KEY=" + fresh + "\\n' > .env.t; mv -f .env.t .env; "
         "i=$((i+1)); done",
         jail.ws());
    auto out = finish(jail, r);
    ASSERT_EQ(out.status, 0) << describe(out);
    EXPECT_EQ(field(out.out, "env-rc"), "1") << describe(out);
    EXPECT_FALSE(ajtest::contains(out.out, fresh)) << describe(out);
    auto rec = ajit::record_of(out);
    ASSERT_TRUE(rec.is_object()) << out.err;
    auto n = rec["workspace"]["reapplied_count"].get<std::uint64_t>();
    EXPECT_GE(n, 1u);
    EXPECT_LE(n, 300u);
    EXPECT_LE(rec["workspace"]["reapplied"].size(), 64u);
    std::cout << "[ flood ] 300 host renames: " << n << " re-applications\n";
}

// The same with limits asked for: where the caller gets a cgroup (root here, a user
// in the VM guest) the sandbox is frozen while the mask goes back; where it gets none
// (--allow-degraded: rlimits only) the mask goes back all the same. Both privilege
// levels run it, so the escape tier's outcomes stay comparable.
TEST_F(Escape, WS09_ReappliedWithLimitsFrozenWhereACgroupExists) {
    jail.also(kMountsView);
    const std::string fresh = jail.new_canary();
    LiveRun r = start(jail, "cat .env; echo env-rc=$?", {"--pids", "64", "--allow-degraded"});
    ASSERT_TRUE(ready(r));
    host("sed -i 's/^API_KEY=.*/API_KEY=" + fresh + "/' .env", r.ws);
    auto out = finish(jail, r);
    ASSERT_EQ(out.status, 0) << describe(out);
    EXPECT_EQ(field(out.out, "env-rc"), "1") << describe(out);
    double window = -1;
    EXPECT_EQ(reapplied(ajit::record_of(out), r.ws + "/.env", &window), 1u) << out.err;
    std::cout << "[ window ] sed -i .env, with limits (" << (ajit::cgroup_probe().ok ? "frozen in a cgroup" : "no cgroup")
              << "): re-applied " << window << " ms after noticing\n";
}

// The agents' and editors' names that run code when the folder is opened cannot be
// made at the workspace's top level, whichever tool they are for (the placeholders of
// the default protect list); a name beside them is (the control: the top level is
// writable).
TEST_F(Escape, WS10_NoAgentsOrEditorsSettingsCanBeMadeAtTheTop) {
    auto r = jail.sh(
        "for f in .cursor/mcp.json .continue/config.yaml .zed/settings.json "
        ".roo/mcp.json "
        ".opencode/plugin.js .claude/skills/s/SKILL.md .claude/commands/go.md .claude/agents/a.md; do "
        "mkdir -p \"$(dirname $f)\" 2>/dev/null; if (echo x > $f) 2>/dev/null; then echo \"MADE $f\"; fi; done; "
        "echo x > .cursorx && echo control=ok");
    EXPECT_EQ(r.out.find("MADE"), std::string::npos) << describe(r);
    EXPECT_NE(r.out.find("control=ok"), std::string::npos) << describe(r);
    for (const char* n : {".cursor", ".continue", ".zed", ".opencode", ".roo"})
        EXPECT_FALSE(ajtest::exists(jail.ws() + "/" + n)) << n << ": a placeholder outlived the run";
}

// Settings whose tool fails on a placeholder (aider reads .aider.conf.yml, opencode
// its opencode.json; an absent file is fine to both) get none: inside, the name is
// simply absent. Made by the run at the top, each is flagged by the check after the
// run; one the host had is read-only inside. Controls: a file beside them that no
// entry names is not flagged; the host's copy is read inside. That is the mounts view;
// the default view refuses to make them at all (nothing is left to flag).
TEST_F(Escape, WS11_SettingsWithoutAPlaceholderAreAbsentInsideAndFlaggedWhenMade) {
    const std::vector<std::string> names = {".aider.conf.yml", "opencode.json", "opencode.jsonc"};
    std::string script = "ls -A; ";
    for (const auto& n : names) script += "echo 'test-cmd: touch /tmp/x' > " + n + " && echo \"MADE " + n + "\"; ";
    script += "echo x > notes.md; echo done";
    auto v = jail.sh(script);
    ASSERT_NE(v.out.find("done"), std::string::npos) << describe(v);
    for (const auto& n : names) {
        EXPECT_EQ(v.out.find("MADE " + n), std::string::npos) << n << ": made through the view\n" << describe(v);
        EXPECT_FALSE(ajtest::exists(jail.ws() + "/" + n)) << n;
    }
    EXPECT_TRUE(ajtest::exists(jail.ws() + "/notes.md")) << "control: the view let nothing be made";
    ::unlink((jail.ws() + "/notes.md").c_str());
    auto r = jail.sh(script, {"--view", "mounts"});
    ASSERT_NE(r.out.find("done"), std::string::npos) << describe(r);
    // No placeholder: the listing made before the writes does not have them.
    const std::string listing = r.out.substr(0, r.out.find("MADE "));
    for (const auto& n : names) {
        for (const auto& l : ajtest::lines(listing)) EXPECT_NE(l, n) << "a placeholder inside\n" << describe(r);
        EXPECT_NE(r.out.find("MADE " + n), std::string::npos) << n << ": the run could not make it\n" << describe(r);
        EXPECT_NE(r.err.find(n + ": agent or editor settings written during the run"), std::string::npos)
            << n << ": not flagged\n" << describe(r);
    }
    EXPECT_EQ(r.err.find("notes.md"), std::string::npos) << "control: flagged a file no entry names\n" << describe(r);

    // One the host has is read-only inside, and not flagged.
    for (const auto& n : names) ::unlink((jail.ws() + "/" + n).c_str());
    std::ofstream(jail.ws() + "/.aider.conf.yml") << "auto-lint: false\n";
    // Older than the run by more than the check's allowance for the coarse clock
    // (a protected file written during the run is checked like any other).
    ::usleep(200 * 1000);
    auto h = jail.sh("cat .aider.conf.yml; (echo 'lint-cmd: x' > .aider.conf.yml) 2>/dev/null && echo WROTE; echo done");
    EXPECT_NE(h.out.find("auto-lint: false"), std::string::npos) << "control: the host's copy is not read\n" << describe(h);
    EXPECT_EQ(h.out.find("WROTE"), std::string::npos) << describe(h);
    EXPECT_EQ(ajtest::read_file(jail.ws() + "/.aider.conf.yml"), "auto-lint: false\n");
    EXPECT_EQ(h.err.find(".aider.conf.yml: agent"), std::string::npos) << describe(h);
}


// The guard's window (issue 25): when the host replaces a protected file (`git config`
// writes config.lock and renames it over config), the sandbox could open the new file
// writable in the moment before the read-only bind is back, and write through that
// handle afterwards. What it could write that way is what the host's rename left at
// the name; here the host itself writes core.fsmonitor into it during the run (what
// a won race would leave). The check after the run reads a protected file written
// during the run like any other: it is put aside. Control: the same key set before
// the run is the user's, read-only inside, and left alone.
TEST_F(Escape, WS12_AProtectedConfigWrittenDuringTheRunIsChecked) {
    jail.also(kMountsView);
    const std::string ws = jail.ws();
    host("git init -q . && git config core.fsmonitor 'touch user-mark'", ws);
    ajtest::sleep_ms(200);  // older than the run, past the check's allowance for the clock
    auto c = jail.sh("git config --get core.fsmonitor; (git config core.editor x) 2>/dev/null || echo refused");
    EXPECT_TRUE(ajtest::contains(c.out, "touch user-mark")) << describe(c);
    EXPECT_TRUE(ajtest::contains(c.out, "refused")) << "control: the config is not read-only inside\n" << describe(c);
    EXPECT_FALSE(ajtest::contains(c.err, ".git/config")) << "control: the user's own config was flagged\n"
                                                          << describe(c);
    EXPECT_TRUE(ajtest::exists(ws + "/.git/config"));

    LiveRun r = start(jail, "echo done");
    ASSERT_TRUE(ready(r));
    host("git config core.fsmonitor 'touch planted-mark'", ws);
    auto out = finish(jail, r);
    ASSERT_EQ(out.status, 0) << describe(out);
    EXPECT_TRUE(ajtest::contains(out.err, ".git/config: git config written during the run sets core.fsmonitor"))
        << describe(out);
    EXPECT_FALSE(ajtest::exists(ws + "/.git/config")) << "the config was left in place";
    EXPECT_TRUE(ajtest::exists(ws + "/.git/config.agentjail-quarantined"));
    host("git status >/dev/null 2>&1; true", ws);
    EXPECT_FALSE(ajtest::exists(ws + "/planted-mark")) << "the planted fsmonitor ran on the host";
}
