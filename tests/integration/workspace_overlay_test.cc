// SPDX-License-Identifier: Apache-2.0
// Overlay mode on a real overlayfs: a run leaves the workspace as it was, its
// change set lists exactly what it did, `agentjail apply` makes those changes,
// protected paths wait for --protected and host-side edits for --force.
#include "common.hpp"
#include "overlay_support.hpp"

#include "workspace/runs.hpp"

#include <sys/stat.h>

#include <atomic>
#include <thread>

namespace {

using ajit::describe;
using ajtest::contains;
using ajtest::read_file;

class Overlay : public ajit::Sandbox {
protected:
    std::vector<std::string> mode{"--workspace-mode", "overlay"};

    std::string only_run() {
        auto ids = ajov::run_ids(jail.home());
        EXPECT_EQ(ids.size(), 1u);
        return ids.empty() ? std::string("<none>") : ids.back();
    }
    ajtest::RunOutput apply(const std::string& id, const std::vector<std::string>& flags = {}) {
        std::vector<std::string> args{"apply"};
        args.insert(args.end(), flags.begin(), flags.end());
        args.push_back(id);
        return jail.run(args);
    }
};

TEST_F(Overlay, RunLeavesWorkspaceUnchangedAndApplyMakesExactlyItsChanges) {
    const auto& ws = jail.ws_dir();
    ws.write("edit.txt", "old line\n");
    ws.write("gone.txt", "to delete\n");
    ws.write("old-name.txt", "renamed content\n");
    ws.write("tool.sh", "#!/bin/sh\necho tool\n", 0644);
    ws.write("tree/keep.txt", "kept\n");
    ws.write("tree/drop.txt", "dropped\n");
    ws.write("same.txt", "untouched bytes\n");
    const auto before = ajov::tree(ws.path());

    auto r = jail.sh(
        "echo 'new line' >> edit.txt && echo fresh > created.txt && rm gone.txt && "
        "mv old-name.txt new-name.txt && ln -s \"$HOME/.ssh\" keys && chmod 755 tool.sh && "
        "rm -rf tree && mkdir tree && echo again > tree/keep.txt && "
        // Opened for writing, same bytes: copied up, but no change.
        "cat same.txt > /dev/null && touch -c same.txt && : >> same.txt && "
        "cat edit.txt",
        mode);
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_TRUE(contains(r.out, "new line")) << describe(r);
    // Byte for byte: nothing of the run reached the workspace.
    EXPECT_EQ(ajov::tree(ws.path()), before);
    EXPECT_TRUE(contains(r.err, "overlay run")) << describe(r);

    const std::string id = only_run();
    const std::set<std::string> expected{
        "modified file edit.txt", "added file created.txt",   "deleted file gone.txt",
        "deleted file old-name.txt", "added file new-name.txt", "added symlink keys",
        "mode file tool.sh",      "modified file tree/keep.txt", "deleted file tree/drop.txt",
    };
    EXPECT_EQ(ajov::change_lines(jail.home(), id), expected);
    auto rec = ajov::run_record(jail.home(), id);
    EXPECT_EQ(rec.value("mode", ""), "overlay");
    EXPECT_EQ(rec.value("status", ""), "ok");

    auto a = apply(id);
    ASSERT_EQ(a.status, 0) << describe(a);
    auto after = ajov::tree(ws.path());
    auto want = before;
    want["edit.txt"] = "file 0644 old line\nnew line\n";
    want["created.txt"] = "file 0644 fresh\n";
    want.erase("gone.txt");
    want.erase("old-name.txt");
    want["new-name.txt"] = "file 0644 renamed content\n";
    want["keys"] = "link -> " + jail.home() + "/.ssh";
    want["tool.sh"] = "file 0755 #!/bin/sh\necho tool\n";
    want["tree/keep.txt"] = "file 0644 again\n";
    want.erase("tree/drop.txt");
    EXPECT_EQ(after, want);
    EXPECT_EQ(ajov::run_record(jail.home(), id).value("status", ""), "applied");
    // Applied once: a second apply is refused.
    EXPECT_EQ(apply(id).status, 125);
}

TEST_F(Overlay, ProtectedPathsAreFlaggedAndWaitForTheFlag) {
    auto g = ajtest::run({"git", "init", "-q", jail.ws()});
    ASSERT_EQ(g.status, 0) << describe(g);
    const std::string hook = jail.ws() + "/.git/hooks/pre-commit";
    auto r = jail.sh(
        "printf '#!/bin/sh\\ntouch /tmp/pwned\\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit && "
        "echo '* filter=evil' > .gitattributes && echo ok > normal.txt",
        mode);
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_FALSE(ajtest::exists(hook));
    // The report flags both, on stderr and in the run's record.
    EXPECT_TRUE(contains(r.err, ".git/hooks/pre-commit")) << describe(r);
    EXPECT_TRUE(contains(r.err, ".gitattributes")) << describe(r);
    const std::string id = only_run();
    auto lines = ajov::change_lines(jail.home(), id);
    EXPECT_TRUE(lines.count("added file .git/hooks/pre-commit protected")) << testing::PrintToString(lines);
    EXPECT_TRUE(lines.count("added file .gitattributes protected")) << testing::PrintToString(lines);
    EXPECT_TRUE(lines.count("added file normal.txt")) << testing::PrintToString(lines);
    EXPECT_GE(ajov::run_record(jail.home(), id).value("flags", 0), 2);

    auto a = apply(id);
    EXPECT_EQ(a.status, 1) << describe(a);  // something was left out
    EXPECT_TRUE(contains(a.err, "--protected")) << describe(a);
    EXPECT_EQ(read_file(jail.ws() + "/normal.txt"), "ok\n");
    EXPECT_FALSE(ajtest::exists(hook));
    EXPECT_FALSE(ajtest::exists(jail.ws() + "/.gitattributes"));

    // Positive control: with the flag they are applied (what was applied already stays so).
    auto b = apply(id, {"--protected"});
    EXPECT_EQ(b.status, 0) << describe(b);
    EXPECT_TRUE(ajtest::exists(hook));
    EXPECT_TRUE(ajtest::exists(jail.ws() + "/.gitattributes"));
}

TEST_F(Overlay, HostEditSinceTheStartIsAConflict) {
    jail.ws_dir().write("shared.txt", "v1\n");
    auto r = jail.sh("echo sandbox > shared.txt && echo mine > other.txt", mode);
    ASSERT_EQ(r.status, 0) << describe(r);
    const std::string id = only_run();
    // The user edits the file on the host before applying.
    jail.ws_dir().write("shared.txt", "user's edit\n");
    auto a = apply(id);
    EXPECT_EQ(a.status, 1) << describe(a);
    EXPECT_TRUE(contains(a.err, "conflict")) << describe(a);
    EXPECT_EQ(read_file(jail.ws() + "/shared.txt"), "user's edit\n");
    EXPECT_EQ(read_file(jail.ws() + "/other.txt"), "mine\n");
    // --force takes the run's version.
    auto f = apply(id, {"--force"});
    EXPECT_EQ(f.status, 0) << describe(f);
    EXPECT_EQ(read_file(jail.ws() + "/shared.txt"), "sandbox\n");
}

// The host's changes made while the run is going (no walk at the start records the
// workspace: each change's base is read at the end) are conflicts: a file the run
// changed that the host edited or deleted meanwhile, and one the run made in a
// folder the host changed (whether the host deleted one of that name cannot be told
// then). A file the run changed that the host left alone, and one it made in a
// folder the host did not touch, are applied.
// Control: --force takes the run's version of the conflicting ones.
TEST_F(Overlay, HostChangesDuringTheRunAreConflicts) {
    for (const char* f : {"edited.txt", "deleted.txt", "kept.txt", "quiet/old.txt"}) jail.ws_dir().write(f, "v1\n");
    ajtest::sleep_ms(30);
    std::atomic<bool> done{false};
    std::thread host([&] {
        // Once the run has written its versions (the marker in its upper layer), the
        // host edits one, deletes one and makes a file beside them.
        for (int i = 0; i < 500 && !done; ++i) {
            for (const auto& id : ajov::run_ids(jail.home()))
                if (ajtest::exists(ajov::runs_dir(jail.home()) + "/" + id + "/upper/.ready")) {
                    jail.ws_dir().write("edited.txt", "host\n");
                    ::unlink((jail.ws() + "/deleted.txt").c_str());
                    jail.ws_dir().write("host-only.txt", "host\n");
                    return;
                }
            ajtest::sleep_ms(10);
        }
    });
    auto r = jail.sh("for f in edited.txt deleted.txt kept.txt fresh.txt quiet/fresh.txt; do echo run > $f; done; "
                     ": > .ready; sleep 2",
                     mode);
    done = true;
    host.join();
    ASSERT_EQ(r.status, 0) << describe(r);
    ASSERT_EQ(read_file(jail.ws() + "/host-only.txt"), "host\n") << "the host never saw the run's marker";
    const std::string id = only_run();
    auto a = apply(id);
    EXPECT_EQ(a.status, 1) << describe(a);
    EXPECT_TRUE(contains(a.err, "edited.txt")) << describe(a);
    EXPECT_TRUE(contains(a.err, "deleted.txt")) << describe(a);
    EXPECT_TRUE(contains(a.err, "changed on the host during the run")) << describe(a);
    EXPECT_EQ(read_file(jail.ws() + "/edited.txt"), "host\n");
    EXPECT_FALSE(ajtest::exists(jail.ws() + "/deleted.txt"));
    EXPECT_TRUE(contains(a.err, "fresh.txt")) << describe(a);  // made where the host changed the folder
    EXPECT_EQ(read_file(jail.ws() + "/kept.txt"), "run\n");
    EXPECT_EQ(read_file(jail.ws() + "/quiet/fresh.txt"), "run\n");
    EXPECT_FALSE(ajtest::exists(jail.ws() + "/fresh.txt"));
    auto f = apply(id, {"--force"});
    EXPECT_EQ(f.status, 0) << describe(f);
    EXPECT_EQ(read_file(jail.ws() + "/edited.txt"), "run\n");
    EXPECT_EQ(read_file(jail.ws() + "/deleted.txt"), "run\n");
    EXPECT_EQ(read_file(jail.ws() + "/fresh.txt"), "run\n");
}

TEST_F(Overlay, ApplyAtExit) {
    auto r = jail.sh("echo made > made.txt", {"--workspace-mode", "overlay", "--apply"});
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_EQ(read_file(jail.ws() + "/made.txt"), "made\n");
    EXPECT_EQ(ajov::run_record(jail.home(), only_run()).value("status", ""), "applied");
    // --apply outside overlay mode is a usage error, before anything runs.
    auto d = jail.sh("echo x > nope.txt", {"--apply"});
    EXPECT_EQ(d.status, 125) << describe(d);
    EXPECT_FALSE(ajtest::exists(jail.ws() + "/nope.txt"));
}

TEST_F(Overlay, NoChangesIsSaid) {
    auto r = jail.sh("cat /dev/null", mode);
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_EQ(ajov::run_record(jail.home(), only_run()).value("status", ""), "no-changes");
}

TEST_F(Overlay, ResultRecordCarriesTheReport) {
    ajtest::TempDir out("aj-ov-rec");
    const std::string file = out.path() + "/record.json";
    auto r = jail.sh("echo x > x.txt", {"--workspace-mode", "overlay", "--result-file", file});
    ASSERT_EQ(r.status, 0) << describe(r);
    auto j = nlohmann::json::parse(read_file(file), nullptr, false);
    ASSERT_TRUE(j.is_object()) << read_file(file);
    EXPECT_EQ(j["workspace"]["mode"], "overlay");
    EXPECT_EQ(j["workspace"]["run_id"], only_run());
    EXPECT_TRUE(j["workspace"]["report"].is_object());
}

}  // namespace

namespace {

// discard (workspace::remove_run) takes an overlay run's upper layer with it,
// also a directory the agent made unreadable (mode 000) inside it.
TEST_F(Overlay, RemovingTheRunTakesItsUpperLayer) {
    auto r = jail.sh("mkdir -p locked/deep && echo x > locked/deep/f && chmod 000 locked", mode);
    ASSERT_EQ(r.status, 0) << describe(r);
    const std::string id = only_run();
    const std::string dir = ajov::runs_dir(jail.home()) + "/" + id;
    ASSERT_TRUE(ajtest::exists(dir + "/upper/locked"));
    auto removed = agentjail::workspace::remove_run(ajov::runs_dir(jail.home()), id);
    EXPECT_TRUE(removed) << removed.error().message();
    EXPECT_FALSE(ajtest::exists(dir));
    EXPECT_TRUE(ajov::run_ids(jail.home()).empty());
}

}  // namespace


TEST_F(Overlay, ExplainPrintsThePlanTheRunCarriesOut) {
    jail.ws_dir().write("a.txt", "a\n");
    ajtest::RunOptions o;
    o.env = {"HOME=" + jail.home()};
    o.cwd = jail.ws();
    std::vector<std::string> flags = jail.base();
    flags.insert(flags.end(), mode.begin(), mode.end());
    ajov::expect_explain_is_the_run(jail, flags, o, ajov::runs_dir(jail.home()));
}
