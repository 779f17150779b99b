// SPDX-License-Identifier: Apache-2.0
// The workspace's view ([workspace] view = "fuse", issue 25): the project served by
// agentjail, each name judged when the sandbox asks for it. One attack per test, each
// with its positive control; the escape tier runs them as root and as a user.
#include "common.hpp"
#include "live_run.hpp"
#include "../integration/record.hpp"

#include <dirent.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <thread>

using namespace ajesc;

namespace {

const std::vector<std::string> kView = {"--view", "fuse"};

// Every name in the workspace, relative, with its type and size (what a user's `ls
// -laR` would show changed), .git's objects and logs left out.
std::set<std::string> listing(const std::string& root, const std::string& rel = "") {
    std::set<std::string> out;
    const std::string dir = rel.empty() ? root : root + "/" + rel;
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) return out;
    while (dirent* e = ::readdir(d)) {
        const std::string name = e->d_name;
        if (name == "." || name == "..") continue;
        const std::string r = rel.empty() ? name : rel + "/" + name;
        struct stat st {};
        if (::lstat((root + "/" + r).c_str(), &st) != 0) continue;
        out.insert(r + (S_ISDIR(st.st_mode) ? "/" : ":" + std::to_string(st.st_size)));
        if (S_ISDIR(st.st_mode) && r.find("objects") == std::string::npos && r.find("logs") == std::string::npos)
            for (auto& s : listing(root, r)) out.insert(s);
    }
    ::closedir(d);
    return out;
}

std::string diff(const std::set<std::string>& a, const std::set<std::string>& b) {
    std::string out;
    for (const auto& x : a)
        if (!b.count(x)) out += "  - " + x + "\n";
    for (const auto& x : b)
        if (!a.count(x)) out += "  + " + x + "\n";
    return out;
}

// A run through the view of `before`, then (once the host made the file `go`, its
// change done while the sandbox waits) `after`; the sandbox makes `ready` between.
std::unique_ptr<ajtest::Child> start_between(ajtest::Jail& jail, const std::string& before, const std::string& after) {
    std::vector<std::string> argv = {ajtest::agentjail_bin()};
    for (const auto& a : jail.base()) argv.push_back(a);
    for (const auto& f : kView) argv.push_back(f);
    argv.insert(argv.end(), {"--", "/bin/sh", "-c",
                             before + "; touch ready; i=0; while [ ! -e go ] && [ $i -lt 1000 ]; do sleep 0.01; "
                                      "i=$((i+1)); done; " + after});
    ajtest::RunOptions o;
    o.env = {"HOME=" + jail.home()};
    o.cwd = jail.ws();
    return std::make_unique<ajtest::Child>(argv, o);
}

}  // namespace

// Nothing appears in the project for the run: during it, the host's listing is the
// one from before. Control: the same run without the view makes its placeholders,
// which this listing sees.
TEST_F(Escape, VIEW01_NothingIsMadeInTheProjectDuringTheRun) {
    host("git init -q .", jail.ws());
    const auto before = listing(jail.ws());
    LiveRun r = start(jail, "echo done", kView);
    ASSERT_TRUE(ready(r));
    auto during = listing(jail.ws());
    during.erase("ready:0");
    auto out = finish(jail, r);
    ASSERT_EQ(out.status, 0) << describe(out);
    EXPECT_EQ(during, before) << "the run changed the project:\n" << diff(before, during);

    ::unlink((jail.ws() + "/ready").c_str());
    ::unlink((jail.ws() + "/probe").c_str());
    LiveRun c = start(jail, "echo done", {"--view", "mounts"});
    ASSERT_TRUE(ready(c));
    auto with_mounts = listing(jail.ws());
    auto cout_ = finish(jail, c);
    ASSERT_EQ(cout_.status, 0) << describe(cout_);
    EXPECT_TRUE(with_mounts.count(".claude/")) << "control: the listing did not see the placeholders\n"
                                               << diff(before, with_mounts);
}

// A hidden name the host makes during the run (an editor saving a new .env.production,
// a key copied in) is hidden as soon as it exists: the view judges it at its lookup.
// Control: a plain name the host makes at the same moment is seen.
TEST_F(Escape, VIEW02_AHiddenNameTheHostMakesDuringTheRunIsHidden) {
    const std::string fresh = jail.new_canary();
    LiveRun r = start(jail,
                      "cat .npmrc; echo rc=$?; echo listed=$(ls -a | grep -c npmrc); cat notes.txt; "
                      "cat keys/id.pem; echo pem=$?",
                      kView);
    ASSERT_TRUE(ready(r));
    host("printf '//registry/:_authToken=" + fresh + "\\n' > .npmrc && echo note-" + fresh.substr(0, 4) +
             " > notes.txt && mkdir -p keys && echo " + fresh + " > keys/id.pem",
         r.ws);
    auto out = finish(jail, r);
    ASSERT_EQ(out.status, 0) << describe(out);
    EXPECT_EQ(field(out.out, "rc"), "1") << describe(out);
    EXPECT_EQ(field(out.out, "pem"), "1") << describe(out);
    EXPECT_EQ(field(out.out, "listed"), "0") << describe(out);
    EXPECT_FALSE(ajtest::contains(out.out, fresh)) << describe(out);
    EXPECT_TRUE(ajtest::contains(out.out, "note-" + fresh.substr(0, 4))) << "control: a plain new name\n" << describe(out);
    EXPECT_TRUE(ajtest::contains(ajtest::read_file(r.ws + "/keys/id.pem"), fresh)) << "the host did not write it";
    // The host's own secrets go before the sweep looks for canaries in the workspace.
    host("rm -rf .npmrc keys", r.ws);
}

// The host replaces a protected file during the run (`git config` renames config.lock
// over config; an editor's atomic save): the new file is read-only inside from its
// first lookup, and so is the lock the host writes it through. Control: a plain file
// the host replaces the same way stays writable.
TEST_F(Escape, VIEW03_AProtectedFileTheHostReplacesStaysReadOnly) {
    host("git init -q . && echo plain > plain.txt", jail.ws());
    LiveRun r = start(jail,
                      "(echo '[core]' >> .git/config) 2>/dev/null && echo WROTE-CONFIG; "
                      "(git config core.fsmonitor 'touch ran') 2>/dev/null && echo SET-FSMONITOR; "
                      "(echo x > .git/config.lock) 2>/dev/null && echo WROTE-LOCK; "
                      "(echo more >> plain.txt) && echo WROTE-PLAIN; git config --get core.editor",
                      kView);
    ASSERT_TRUE(ready(r));
    host("git config core.editor host-editor && printf 'new\\n' > p.tmp && mv p.tmp plain.txt", r.ws);
    auto out = finish(jail, r);
    ASSERT_EQ(out.status, 0) << describe(out);
    EXPECT_FALSE(ajtest::contains(out.out, "WROTE-CONFIG")) << describe(out);
    EXPECT_FALSE(ajtest::contains(out.out, "SET-FSMONITOR")) << describe(out);
    EXPECT_FALSE(ajtest::contains(out.out, "WROTE-LOCK")) << describe(out);
    EXPECT_TRUE(ajtest::contains(out.out, "host-editor")) << "the host's new config is read inside\n" << describe(out);
    EXPECT_TRUE(ajtest::contains(out.out, "WROTE-PLAIN")) << "control: a replaced plain file\n" << describe(out);
    EXPECT_EQ(ajtest::read_file(r.ws + "/plain.txt"), "new\nmore\n");
    host("git status >/dev/null 2>&1; true", r.ws);
    EXPECT_FALSE(ajtest::exists(r.ws + "/ran")) << "a planted fsmonitor ran on the host";
}

// A protected name cannot be taken out of its rule's reach: a rename of .git (or of
// a folder holding a repository), a hard link of its config, a symlink or a rename
// onto a protected name. Control: the same moves of plain names work.
TEST_F(Escape, VIEW04_ProtectedNamesCannotBeMovedLinkedOrReplaced) {
    host("git init -q . && mkdir -p sub && git -C sub init -q && mkdir plain && echo p > plain/f", jail.ws());
    auto r = jail.sh(
        "mv .git g 2>/dev/null; test -d .git && echo dotgit=kept; test -e g/config && echo copied=yes; "
        "mv sub sub2 2>/dev/null; test -d sub/.git && echo sub=kept; "
        "ln .git/config cfg 2>/dev/null && echo LINKED; "
        "echo '[core]' > evil; mv evil .git/config 2>/dev/null && echo REPLACED; "
        "ln -s /tmp .git/hooks/pre-commit 2>/dev/null && echo SYMLINKED; "
        "rm -f .git/config 2>/dev/null; test -f .git/config && echo config=kept; "
        "mv plain plain2 && ln plain2/f g2 && echo control=ok",
        kView);
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_EQ(field(r.out, "dotgit"), "kept") << describe(r);
    EXPECT_EQ(field(r.out, "sub"), "kept") << describe(r);
    EXPECT_EQ(field(r.out, "config"), "kept") << describe(r);
    for (const char* bad : {"LINKED", "REPLACED", "SYMLINKED"}) EXPECT_FALSE(ajtest::contains(r.out, bad)) << bad << describe(r);
    EXPECT_EQ(field(r.out, "control"), "ok") << describe(r);
    EXPECT_FALSE(ajtest::exists(jail.ws() + "/.git/hooks/pre-commit"));
}

// The names that run code on the host cannot be made in the project's folders, at the
// top or below; a folder the run made holds what it likes (git init there works), and
// the check after the run reads it. Control: a plain name is made everywhere.
TEST_F(Escape, VIEW05_ProtectedNamesCannotBeMadeInTheProjectsFolders) {
    host("mkdir -p existing", jail.ws());
    auto r = jail.sh(
        "for n in .envrc .mcp.json .claude/settings.json existing/.envrc existing/.vscode/tasks.json "
        "existing/.gitattributes; do mkdir -p $(dirname $n) 2>/dev/null; (echo x > $n) 2>/dev/null && echo MADE=$n; "
        "done; mkdir fresh && cd fresh && git init -q && git config user.name agent && echo fresh=ok; cd ..; "
        "echo ok > existing/plain && echo control=ok",
        kView);
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_FALSE(ajtest::contains(r.out, "MADE=")) << describe(r);
    EXPECT_EQ(field(r.out, "fresh"), "ok") << describe(r);
    EXPECT_EQ(field(r.out, "control"), "ok") << describe(r);
    for (const char* n : {".envrc", ".mcp.json", ".claude", "existing/.envrc", "existing/.vscode", "existing/.gitattributes"})
        EXPECT_FALSE(ajtest::exists(jail.ws() + "/" + n)) << n;
}

// git inside and on the host sees only what the agent wrote: `git add -A` commits its
// file alone, and the host's `git status` after the run lists only that commit's work.
// The agent's own new file is the positive control: the same `git status` lists it.
TEST_F(Escape, VIEW06_GitSeesOnlyTheAgentsChanges) {
    host("git init -q . && printf '.env*\\n' > .gitignore && git add .gitignore && "
         "git -c user.name=u -c user.email=u@e commit -qm base",
         jail.ws());
    auto r = jail.sh(
        "echo work > feature.txt && git status --porcelain && git add -A && "
        "git -c user.name=a -c user.email=a@e commit -qm agent && git show --name-only --format= HEAD",
        kView);
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_EQ(ajtest::trim(r.out), "?? feature.txt\nfeature.txt") << describe(r);
    auto h = jail.host_sh("cd '" + jail.ws() + "' && git status --porcelain && git log --format=%s");
    EXPECT_EQ(ajtest::trim(h.out), "agent\nbase") << describe(h);
}

// Runs at once in one workspace all start and leave it as it was.
TEST_F(Escape, VIEW07_RunsAtOnceInOneWorkspaceAllWork) {
    host("git init -q .", jail.ws());
    const auto before = listing(jail.ws());
    std::vector<std::unique_ptr<ajtest::Child>> runs;
    for (int i = 0; i < 20; ++i) {
        std::vector<std::string> argv = {ajtest::agentjail_bin()};
        for (const auto& a : jail.base()) argv.push_back(a);
        for (const auto& f : kView) argv.push_back(f);
        argv.insert(argv.end(), {"--", "/bin/sh", "-c", "git status --porcelain >/dev/null && cat .gitignore 2>/dev/null; true"});
        ajtest::RunOptions o;
        o.env = {"HOME=" + jail.home()};
        o.cwd = jail.ws();
        runs.push_back(std::make_unique<ajtest::Child>(argv, o));
    }
    int failed = 0;
    std::string why;
    for (auto& c : runs) {
        auto out = c->wait(60000);
        if (out.status != 0) {
            ++failed;
            why += describe(out) + "\n";
        }
    }
    EXPECT_EQ(failed, 0) << why;
    EXPECT_EQ(listing(jail.ws()), before) << diff(before, listing(jail.ws()));
}

// A hidden file is left out of listings too, and cannot be reached by a rename or a
// hard link of its folder's contents. Control: its plain neighbour is listed.
TEST_F(Escape, VIEW08_HiddenNamesAreNotListedNorReachable) {
    const std::string secret = jail.new_canary();
    jail.plant("conf/tls.pem", "KEY=" + secret + "\n");
    jail.plant("conf/app.yml", "name: app\n");
    // A second name of the key, made on the host before the run.
    ASSERT_EQ(::link((jail.ws() + "/conf/tls.pem").c_str(), (jail.ws() + "/conf/copy.txt").c_str()), 0);
    auto r = jail.sh(
        "ls -a conf; cat conf/tls.pem conf/copy.txt; mv conf conf2 2>/dev/null; cat conf2/tls.pem conf/tls.pem 2>/dev/null; "
        "ln conf/tls.pem x 2>/dev/null && cat x; cp -r conf c3 2>/dev/null; cat c3/tls.pem 2>/dev/null; true",
        kView);
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_FALSE(ajtest::contains(r.out, secret)) << describe(r);
    EXPECT_FALSE(ajtest::contains(r.out, "tls.pem")) << describe(r);
    EXPECT_FALSE(ajtest::contains(r.out, "copy.txt")) << describe(r);
    // The host's own second name goes before the sweep looks for canaries.
    ::unlink((jail.ws() + "/conf/copy.txt").c_str());
    EXPECT_TRUE(ajtest::contains(r.out, "app.yml")) << "control\n" << describe(r);
}

// What the view refused is in the run's record, with the path inside and why, beside
// the filter's and the proxy's refusals (and so in `agentjail log`). Control: a plain
// write is not a refusal.
TEST_F(Escape, VIEW09_WhatTheViewRefusedIsInTheRecord) {
    host("git init -q . && echo '//registry/:_authToken=not-a-canary' > .npmrc", jail.ws());
    auto r = jail.sh("(echo x >> .git/config) 2>/dev/null; cat .npmrc 2>/dev/null; "
                     "(echo //evil/:_authToken=x > .npmrc) 2>/dev/null || echo create=refused; echo fine > plain.txt",
                     {"--view", "fuse", "--json"});
    ASSERT_EQ(r.status, 0) << describe(r);
    auto rec = ajit::record_of(r);
    ASSERT_TRUE(rec.is_object()) << describe(r);
    std::set<std::string> seen;
    for (const auto& f : rec["refusals"])
        if (f["kind"] == "workspace") seen.insert(f["what"].get<std::string>() + " | " + f["why"].get<std::string>());
    auto has = [&](const std::string& path, const std::string& why) {
        return std::any_of(seen.begin(), seen.end(), [&](const std::string& s) {
            return s.rfind(path + " | ", 0) == 0 && ajtest::contains(s, why);
        });
    };
    EXPECT_TRUE(has(jail.ws() + "/.git/config", "open for writing: protected")) << rec["refusals"].dump(1);
    EXPECT_TRUE(has(jail.ws() + "/.npmrc", "hide rules (look up)")) << rec["refusals"].dump(1);
    EXPECT_TRUE(has(jail.ws() + "/.npmrc", "hide rules (create over it)")) << rec["refusals"].dump(1);
    EXPECT_EQ(field(r.out, "create"), "refused") << describe(r);
    EXPECT_EQ(ajtest::read_file(jail.ws() + "/.npmrc"), "//registry/:_authToken=not-a-canary\n")
        << "the host's hidden file was written";
    EXPECT_FALSE(has(jail.ws() + "/plain.txt", "")) << rec["refusals"].dump(1);
    EXPECT_EQ(ajtest::read_file(jail.ws() + "/plain.txt"), "fine\n") << "control: the plain write";
}

// A second name the host gives a hidden file during the run (a hard link the plan
// never saw) is hidden by the file's identity, in its lookup and in listings.
// Control: a plain file linked the same way is seen under its new name.
TEST_F(Escape, VIEW10_AHardLinkTheHostMakesOfAHiddenFileIsHidden) {
    const std::string secret = jail.new_canary();
    jail.plant("conf/tls.pem", "KEY=" + secret + "\n");
    jail.plant("conf/app.yml", "name: app\n");
    LiveRun r = start(jail, "ls -a conf; cat conf/late.txt; echo rc=$?; cat conf/app2.yml", kView);
    ASSERT_TRUE(ready(r));
    host("ln conf/tls.pem conf/late.txt && ln conf/app.yml conf/app2.yml", r.ws);
    auto out = finish(jail, r);
    ASSERT_EQ(out.status, 0) << describe(out);
    EXPECT_FALSE(ajtest::contains(out.out, secret)) << describe(out);
    EXPECT_FALSE(ajtest::contains(out.out, "late.txt")) << describe(out);
    EXPECT_EQ(field(out.out, "rc"), "1") << describe(out);
    EXPECT_TRUE(ajtest::contains(out.out, "name: app")) << "control: a plain file's new name\n" << describe(out);
    // The host's own second name goes before the sweep looks for canaries.
    ::unlink((r.ws + "/conf/late.txt").c_str());
}

// The view holds a bounded number of descriptors, not one per file the sandbox has
// looked up (the kernel keeps those as long as it likes): a listing of 3,000 files,
// each stat-ed, works under a 512-descriptor limit. Control: the same listing under
// the mounts view shows the limit itself leaves it enough.
TEST_F(Escape, VIEW11_TheViewsDescriptorsAreBounded) {
    host("for d in $(seq 30); do mkdir d$d && (cd d$d && touch $(seq -f f%g 100)); done", jail.ws());
    struct rlimit old {};
    ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &old), 0);
    struct rlimit low = {512, 512};
    if (old.rlim_max < 512) GTEST_SKIP() << "this process's descriptor limit is under 512";
    ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
    const std::string probe = "ls -lR . | grep -c '^-' ; ls -lR . >/dev/null && echo listed=yes";
    auto r = jail.sh(probe, kView);
    auto c = jail.sh(probe, {"--view", "mounts"});
    // Raising the hard limit again needs CAP_SYS_RESOURCE: as a user the rest of this
    // test process keeps 512, which it does not come near.
    (void)::setrlimit(RLIMIT_NOFILE, &old);
    ASSERT_EQ(c.status, 0) << "control\n" << describe(c);
    EXPECT_EQ(field(c.out, "listed"), "yes") << "control\n" << describe(c);
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_EQ(field(r.out, "listed"), "yes") << describe(r);
    EXPECT_TRUE(ajtest::contains(r.out, "3000")) << describe(r);
    EXPECT_FALSE(ajtest::contains(r.err, "Too many open files")) << describe(r);
}

// The host's changes show inside at once, though the kernel keeps the view's answers
// for long in a watched folder: a file rewritten in place and one replaced by a
// rename, a name made and one removed, each read again 50 ms after the host's change
// (the answers' lifetime without the watch would show the old ones for up to a
// second). Control: the reads before the change show the old contents, so the probe
// reads what it names.
TEST_F(Escape, VIEW12_TheHostsChangesShowInsideAtOnce) {
    host("mkdir d && echo old-a > a.txt && echo old-b > b.txt && echo x > d/old.txt", jail.ws());
    auto c = start_between(jail, "cat a.txt b.txt; ls d", "echo after; cat a.txt b.txt; ls d");
    ASSERT_TRUE(ajtest::wait_for_file(jail.ws() + "/ready", 10000));
    host("echo new-a-longer >> a.txt && echo new-b > t && mv t b.txt && echo n > d/new.txt && rm d/old.txt", jail.ws());
    ajtest::sleep_ms(50);
    host("touch go", jail.ws());
    auto out = c->wait(30000);
    jail.record(out);
    ASSERT_EQ(out.status, 0) << describe(out);
    const auto at = out.out.find("after\n");
    ASSERT_NE(at, std::string::npos) << describe(out);
    const std::string before = out.out.substr(0, at), after = out.out.substr(at);
    EXPECT_EQ(before, "old-a\nold-b\nold.txt\n") << "control\n" << describe(out);
    EXPECT_EQ(after, "after\nold-a\nnew-a-longer\nnew-b\nnew.txt\n") << describe(out);
}

// `explain` under the view lists what the plan found below the workspace as the view's
// to judge (nothing watched or made for it): a hidden key, a second name of it, and a
// protected name that is absent and cannot be made. Control: the mounts view lists the
// same key as a guard of its own, with a placeholder for the absent name.
TEST_F(Escape, VIEW13_ExplainListsWhatTheViewJudges) {
    jail.plant("conf/tls.pem", "KEY=not-a-canary\n");
    ASSERT_EQ(::link((jail.ws() + "/conf/tls.pem").c_str(), (jail.ws() + "/conf/copy.txt").c_str()), 0);
    auto e = jail.run({"explain", "--view", "fuse", "-C", jail.ws(), "--", "/bin/true"});
    auto j = jail.run({"explain", "--json", "--view", "fuse", "-C", jail.ws(), "--", "/bin/true"});
    auto m = jail.run({"explain", "--view", "mounts", "-C", jail.ws(), "--", "/bin/true"});
    ::unlink((jail.ws() + "/conf/copy.txt").c_str());
    ASSERT_EQ(e.status, 0) << describe(e);
    EXPECT_TRUE(ajtest::contains(e.out, "judged by the view at each lookup")) << describe(e);
    EXPECT_TRUE(ajtest::contains(e.out, jail.ws() + "/conf/copy.txt")) << describe(e);
    EXPECT_TRUE(ajtest::contains(e.out, "hard link of " + jail.ws() + "/conf/tls.pem")) << describe(e);
    EXPECT_TRUE(ajtest::contains(e.out, jail.ws() + "/.mcp.json (absent: cannot be made inside)")) << describe(e);
    EXPECT_FALSE(ajtest::contains(e.out, "placeholder ")) << describe(e);
    ASSERT_EQ(j.status, 0) << describe(j);
    EXPECT_TRUE(ajtest::contains(j.out, "\"by_view\": true")) << describe(j);
    ASSERT_EQ(m.status, 0) << describe(m);
    EXPECT_TRUE(ajtest::contains(m.out, "hard link of " + jail.ws() + "/conf/tls.pem")) << "control\n" << describe(m);
    EXPECT_TRUE(ajtest::contains(m.out, "placeholder  " + jail.ws() + "/.mcp.json")) << "control\n" << describe(m);
}

// The check after the run takes only what the sandbox could write as the run's: under
// the view a protected name could not be written inside unless the run made it (or a
// folder above it), so the user's own `git config` on the host during the run is left
// as it is, not put aside. Controls: a repository the run made has its planted
// fsmonitor put aside, and an unfinished rebase's todo in the user's repository (not
// protected: git writes it) that the agent gave an exec line is put aside too.
TEST_F(Escape, VIEW14_TheUsersOwnChangesDuringTheRunAreNotTheRuns) {
    host("git init -q . && mkdir .git/rebase-merge && echo 'pick 0000000 x' > .git/rebase-merge/git-rebase-todo",
         jail.ws());
    ajtest::sleep_ms(200);  // older than the run, past the check's allowance for the clock
    LiveRun r = start(jail,
                      "echo 'exec touch pwned' >> .git/rebase-merge/git-rebase-todo; mkdir sub && git init -q sub && "
                      "git -C sub config core.fsmonitor 'touch ran2'; echo agent-done",
                      kView);
    ASSERT_TRUE(ready(r));
    host("git config core.fsmonitor 'touch user-mark'", r.ws);
    auto out = finish(jail, r);
    ASSERT_EQ(out.status, 0) << describe(out);
    EXPECT_TRUE(ajtest::contains(out.out, "agent-done")) << describe(out);
    EXPECT_TRUE(ajtest::exists(r.ws + "/.git/config")) << "the user's own config was put aside\n" << describe(out);
    EXPECT_FALSE(ajtest::exists(r.ws + "/.git/config.agentjail-quarantined")) << describe(out);
    EXPECT_TRUE(ajtest::contains(ajtest::read_file(r.ws + "/.git/config"), "user-mark"));
    EXPECT_FALSE(ajtest::contains(out.err, "workspace: .git/config")) << describe(out);
    EXPECT_TRUE(ajtest::exists(r.ws + "/sub/.git/config.agentjail-quarantined")) << "control\n" << describe(out);
    EXPECT_TRUE(ajtest::contains(out.err, ".git/rebase-merge/git-rebase-todo")) << "control\n" << describe(out);
    EXPECT_FALSE(ajtest::exists(r.ws + "/.git/rebase-merge/git-rebase-todo")) << "control\n" << describe(out);
    // The user's fsmonitor would run in the sweep's git commands.
    host("git config --unset core.fsmonitor", r.ws);
}

// A file the sandbox holds open for writing that the host then moves over a protected
// name (an editor saving settings through a temporary file the agent opened first)
// stays writable through that handle: the view judges names, and a handle is not one.
// The check after the run takes it as the run's, since the sandbox opened that very
// file for writing, and flags it. Control: the same move of a file the sandbox only
// read is the host's, and is not flagged.
TEST_F(Escape, VIEW15_AHandleTheHostMovedOverAProtectedNameIsChecked) {
    host("mkdir .vscode .zed && echo '{}' > w.json && echo '{}' > r.json", jail.ws());
    ajtest::sleep_ms(200);  // older than the run, past the check's allowance for the clock
    auto c = start_between(jail, "exec 3>>w.json 4<r.json",
                           "echo '{\"terminal.integrated.shell.linux\": \"x\"}' >&3; echo wrote=$?");
    ASSERT_TRUE(ajtest::wait_for_file(jail.ws() + "/ready", 10000));
    host("mv w.json .vscode/settings.json && mv r.json .zed/settings.json && touch go", jail.ws());
    auto out = c->wait(30000);
    jail.record(out);
    ASSERT_EQ(out.status, 0) << describe(out);
    EXPECT_EQ(field(out.out, "wrote"), "0") << describe(out);
    EXPECT_TRUE(ajtest::contains(out.err, ".vscode/settings.json: agent or editor settings written during the run"))
        << describe(out);
    EXPECT_FALSE(ajtest::contains(out.err, ".zed/settings.json")) << "control: the host's own move\n" << describe(out);
}

// A file the run made that the host removes gives its inode number back, and a file
// the host makes next may get it (ext4 hands freed numbers out again at once): a
// secret saved then (.env.N) must not pass for the run's file, which the view never
// hides. The view tells them apart by birth time. The run makes 300 files under a
// 256-descriptor limit, so that the view holds few of them open (a file it holds
// keeps its number); the host removes them and saves 300 secrets. Control: some of
// the secrets got a number of the run's files (else the attack did not happen here,
// and the test says so), and the host reads them.
TEST_F(Escape, VIEW16_AHostFileThatReusesTheNumberOfARunsFileIsHidden) {
    const std::string secret = jail.new_canary();
    std::vector<std::string> argv = {"/bin/sh", "-c", "ulimit -n 256 && exec \"$0\" \"$@\"", ajtest::agentjail_bin()};
    for (const auto& a : jail.base()) argv.push_back(a);
    for (const auto& f : kView) argv.push_back(f);
    argv.insert(argv.end(), {"--", "/bin/sh", "-c",
                             "for i in $(seq 300); do echo x > m$i; done; touch ready; i=0; "
                             "while [ ! -e go ] && [ $i -lt 1000 ]; do sleep 0.01; i=$((i+1)); done; "
                             "cat .env.* 2>/dev/null; echo listed=$(ls -a | grep -c '^\\.env\\.[0-9]')"});
    ajtest::RunOptions o;
    o.env = {"HOME=" + jail.home()};
    o.cwd = jail.ws();
    ajtest::Child c(argv, o);
    ASSERT_TRUE(ajtest::wait_for_file(jail.ws() + "/ready", 20000));
    std::set<ino_t> runs;
    for (int i = 1; i <= 300; ++i) {
        struct stat st {};
        const std::string m = jail.ws() + "/m" + std::to_string(i);
        if (::lstat(m.c_str(), &st) == 0) runs.insert(st.st_ino);
        ::unlink(m.c_str());
    }
    size_t reused = 0;
    for (int i = 1; i <= 300; ++i) {
        const std::string e = jail.ws() + "/.env." + std::to_string(i);
        std::ofstream(e) << "KEY=" << secret << "\n";
        struct stat st {};
        if (::lstat(e.c_str(), &st) == 0 && runs.count(st.st_ino)) ++reused;
    }
    host("touch go", jail.ws());
    auto out = c.wait(30000);
    jail.record(out);
    // The secrets go before the sweep looks for canaries in the workspace.
    EXPECT_TRUE(ajtest::contains(ajtest::read_file(jail.ws() + "/.env.1"), secret)) << "control: the host's secret";
    for (int i = 1; i <= 300; ++i) ::unlink((jail.ws() + "/.env." + std::to_string(i)).c_str());
    ASSERT_EQ(out.status, 0) << describe(out);
    std::cout << "[ reuse ] " << reused << " of 300 secrets got the number of a file the run made\n";
    if (reused == 0) GTEST_SKIP() << "no secret got the inode number of a file the run made on this file system";
    EXPECT_FALSE(ajtest::contains(out.out, secret)) << describe(out);
    EXPECT_EQ(field(out.out, "listed"), "0") << describe(out);
}

// A repository the run makes is the run's until the check after the run: its config
// can set core.fsmonitor, which git runs on a `git status`. git on the host during the
// run (an editor finds nested repositories and asks each for its status; a shell
// prompt does in the folder it is in) must not take such a folder for a repository:
// the view holds a HEAD the run makes where the host had none under another name on
// the host (git needs a HEAD to see a repository), and the check after the run puts
// it back once it has read the repository. Two ways in: `git init` in a new folder,
// and a bare repository made in a folder of the host's that a .git file in a new
// folder names. Control: the same repository made by the host runs the fsmonitor.
TEST_F(Escape, VIEW17_ARepositoryTheRunMakesIsNoRepositoryToTheHostsGitDuringTheRun) {
    const std::string marker = jail.home() + "/fsmonitor-ran";
    const std::string fsmon = "touch " + marker;
    host("git init -q . && mkdir build && echo keep > build/.keep", jail.ws());
    auto c = start_between(jail,
                           "git init -q sub && git -C sub config core.fsmonitor '" + fsmon +
                               "' && git init -q --bare build && git -C build config core.bare false && "
                               "git -C build config core.fsmonitor '" + fsmon +
                               "' && mkdir w && echo 'gitdir: ../build' > w/.git && echo made=$? && "
                               "git -C sub rev-parse --git-dir",
                           "git -C sub rev-parse --git-dir; echo after=$?");
    ASSERT_TRUE(ajtest::wait_for_file(jail.ws() + "/ready", 20000));
    for (const char* dir : {"sub", "w"}) {
        auto top = ajtest::run({"/bin/sh", "-c", "git status --short >/dev/null 2>&1; git rev-parse --show-toplevel"},
                               {"HOME=" + jail.home(), "GIT_CONFIG_NOSYSTEM=1"}, nullptr, jail.ws() + "/" + dir);
        // The project's own repository, or none (a .git file naming a held one).
        EXPECT_NE(ajtest::trim(top.out), jail.ws() + "/" + dir) << dir << ": the host's git took it for a repository";
        EXPECT_TRUE(ajtest::trim(top.out) == jail.ws() || ajtest::contains(top.err, "not a git repository"))
            << dir << ": " << top.out << top.err;
    }
    EXPECT_FALSE(ajtest::exists(marker)) << "the run's fsmonitor ran on the host during the run";
    host("touch go", jail.ws());
    auto out = c->wait(30000);
    jail.record(out);
    ASSERT_EQ(out.status, 0) << describe(out);
    EXPECT_EQ(field(out.out, "made"), "0") << describe(out);
    EXPECT_EQ(field(out.out, "after"), "0") << "inside, the repository stayed one\n" << describe(out);
    // After the check: the HEADs are back, and the configs that set fsmonitor are aside.
    EXPECT_TRUE(ajtest::exists(jail.ws() + "/sub/.git/HEAD")) << describe(out);
    EXPECT_TRUE(ajtest::exists(jail.ws() + "/build/HEAD")) << describe(out);
    EXPECT_FALSE(ajtest::exists(jail.ws() + "/sub/.git/HEAD.held-by-agentjail"));
    EXPECT_TRUE(ajtest::contains(out.err, "sub/.git/config: git config written during the run sets core.fsmonitor"))
        << describe(out);
    // A HEAD an earlier run held and did not live to put back (killed before its
    // check): a later run's check did not read that repository, so it stays held, and
    // the run says so.
    host("git init -q left && git -C left config core.fsmonitor '" + fsmon +
             "' && mv left/.git/HEAD left/.git/HEAD.held-by-agentjail",
         jail.ws());
    ajtest::sleep_ms(200);  // older than the next run, past the check's allowance for the clock
    auto later = jail.sh("true");
    ASSERT_EQ(later.status, 0) << describe(later);
    EXPECT_TRUE(ajtest::exists(jail.ws() + "/left/.git/HEAD.held-by-agentjail")) << describe(later);
    EXPECT_FALSE(ajtest::exists(jail.ws() + "/left/.git/HEAD")) << describe(later);
    EXPECT_TRUE(ajtest::contains(later.err, "an earlier run made and did not live to check")) << describe(later);
    EXPECT_FALSE(ajtest::exists(marker));
    // Control: the host's own repository with the same config runs it.
    host("git init -q own && git -C own config core.fsmonitor '" + fsmon + "' && git -C own status --short >/dev/null 2>&1; true",
         jail.ws());
    EXPECT_TRUE(ajtest::exists(marker)) << "control: git on the host did not run an fsmonitor";
    host("rm -rf own left", jail.ws());
}
