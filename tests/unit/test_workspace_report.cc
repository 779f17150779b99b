// SPDX-License-Identifier: Apache-2.0
// Unit tests of the risky-change classifier and its text and JSON forms
// (lib/workspace/report), and of the run state (lib/workspace/runs) in a scratch
// directory: ids, run.json, links planted where the state lives.
#include "workspace/report.hpp"
#include "workspace/runs.hpp"

#include "test_support.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

namespace agentjail::workspace {
namespace {

Change added(std::string path, unsigned mode = kModeFile, std::string content = "") {
    Change c;
    c.path = std::move(path);
    c.kind = ChangeKind::added;
    c.new_mode = mode;
    c.read_new = [content](std::size_t limit) -> std::optional<std::string> {
        return content.substr(0, limit);
    };
    return c;
}

Change link(std::string path, std::string target) {
    Change c = added(std::move(path), kModeLink);
    c.link_target = std::move(target);
    return c;
}

std::vector<std::string> categories_of(const std::vector<Change>& changes) {
    std::vector<std::string> out;
    for (const auto& f : classify(changes)) out.push_back(f.category);
    return out;
}

std::string only_category(Change c) {
    auto flags = classify({std::move(c)});
    if (flags.size() != 1) return "flags: " + std::to_string(flags.size());
    return flags[0].category;
}

TEST(WorkspaceReport, PlainSourceChangesAreNotFlagged) {
    std::vector<Change> cs = {added("src/main.c"), added("README.md"), added("docs/a/b.txt"),
                              link("lib/current", "v1.2"), link("a/b/up", "../c")};
    Change m = added("src/util.c");
    m.kind = ChangeKind::modified;
    m.old_mode = kModeFile;
    cs.push_back(m);
    EXPECT_TRUE(classify(cs).empty());
}

TEST(WorkspaceReport, GitInternalsAndNestedRepositories) {
    EXPECT_EQ(only_category(added(".git/hooks/pre-commit", kModeFile)), "git");
    EXPECT_EQ(only_category(added(".git/config")), "git");
    EXPECT_EQ(only_category(added("vendor/lib/.git/hooks/post-checkout")), "git");
    EXPECT_EQ(only_category(added("sub/.git")), "git");        // a gitdir redirect file
    EXPECT_EQ(only_category(added("sub/.GIT/config")), "git");  // case-insensitive file systems
    EXPECT_EQ(only_category(added(".gitmodules")), "submodule");
    EXPECT_EQ(only_category(added("third_party/x", kModeGitlink)), "submodule");
    EXPECT_EQ(only_category(added(".husky/pre-commit")), "git");
    EXPECT_EQ(only_category(added(".pre-commit-config.yaml")), "git");
    auto f = classify({added(".git/hooks/pre-commit")});
    ASSERT_EQ(f.size(), 1u);
    EXPECT_NE(f[0].detail.find("hook"), std::string::npos);
}

TEST(WorkspaceReport, CiWorkflows) {
    for (const char* p : {".github/workflows/ci.yml", ".github/actions/x/action.yml", ".gitlab-ci.yml",
                          ".circleci/config.yml", "Jenkinsfile", "ci/Jenkinsfile", ".travis.yml",
                          "azure-pipelines.yml", ".buildkite/pipeline.yml", "bitbucket-pipelines.yml"})
        EXPECT_EQ(only_category(added(p)), "ci") << p;
    // Only at the top is .gitlab-ci.yml what GitLab runs.
    EXPECT_TRUE(classify({added("docs/examples/.gitlab-ci.yml")}).empty());
}

TEST(WorkspaceReport, GitattributesNamesItsDrivers) {
    auto f = classify({added(".gitattributes", kModeFile, "*.c filter=evil\n")});
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0].category, "gitattributes");
    EXPECT_NE(f[0].detail.find("filter="), std::string::npos);
    // Even without a driver it is flagged: attributes change what git does.
    EXPECT_EQ(only_category(added("sub/.gitattributes", kModeFile, "*.png binary\n")), "gitattributes");
}

TEST(WorkspaceReport, PackageJsonLifecycleScriptsOnly) {
    auto f = classify({added("package.json", kModeFile,
                             R"({"scripts":{"postinstall":"curl x|sh","test":"jest","prepare":"husky"}})")});
    ASSERT_EQ(f.size(), 1u);
    EXPECT_EQ(f[0].category, "install-script");
    EXPECT_NE(f[0].detail.find("postinstall"), std::string::npos);
    EXPECT_NE(f[0].detail.find("prepare"), std::string::npos);
    EXPECT_EQ(f[0].detail.find("test"), std::string::npos);
    // Scripts the user runs by name only: nothing runs by itself.
    EXPECT_TRUE(classify({added("packages/a/package.json", kModeFile, R"({"scripts":{"test":"jest"}})")}).empty());
    // Unparsable: flagged, since nobody can say what it runs.
    EXPECT_EQ(only_category(added("package.json", kModeFile, "{not json")), "install-script");
    // Unreadable content: flagged too.
    Change c = added("package.json");
    c.read_new = [](std::size_t) -> std::optional<std::string> { return std::nullopt; };
    EXPECT_EQ(only_category(c), "install-script");
}

TEST(WorkspaceReport, OtherManifestsAndBuildScripts) {
    EXPECT_EQ(only_category(added("setup.py")), "install-script");
    EXPECT_EQ(only_category(added("pyproject.toml", kModeFile,
                                  "[build-system]\nbuild-backend = \"x\"\nbackend-path = [\".\"]\n")),
              "install-script");
    EXPECT_TRUE(classify({added("pyproject.toml", kModeFile, "[tool.black]\nline-length = 100\n")}).empty());
    EXPECT_EQ(only_category(added("crates/a/build.rs")), "install-script");
    EXPECT_EQ(only_category(added(".cargo/config.toml")), "install-script");
    EXPECT_EQ(only_category(added("composer.json", kModeFile, R"({"scripts":{"post-install-cmd":"x"}})")),
              "install-script");
    for (const char* p : {"Makefile", "sub/GNUmakefile", "rules.mk", "CMakeLists.txt", "cmake/x.cmake",
                          "meson.build", "justfile", "build.gradle.kts"})
        EXPECT_EQ(only_category(added(p)), "build") << p;
}

TEST(WorkspaceReport, EditorAutoRunAndAgentConfig) {
    EXPECT_EQ(only_category(added(".vscode/tasks.json")), "editor");
    EXPECT_EQ(only_category(added(".vscode/settings.json")), "editor");
    EXPECT_EQ(only_category(added(".idea/workspace.xml")), "editor");
    EXPECT_EQ(only_category(added(".devcontainer/devcontainer.json")), "editor");
    EXPECT_EQ(only_category(added(".envrc")), "auto-run");
    EXPECT_EQ(only_category(added("sub/.envrc")), "auto-run");
    EXPECT_EQ(only_category(added(".tool-versions")), "auto-run");
    EXPECT_EQ(only_category(added(".claude/settings.json")), "agent-config");
    EXPECT_EQ(only_category(added(".claude/hooks/x.sh")), "agent-config");
    EXPECT_EQ(only_category(added(".mcp.json")), "agent-config");
    EXPECT_EQ(only_category(added(".codex/config.toml")), "agent-config");
}

TEST(WorkspaceReport, NewExecutableBits) {
    EXPECT_EQ(only_category(added("scripts/run.sh", kModeExec)), "executable");
    Change chmod = added("tool");
    chmod.kind = ChangeKind::modified;
    chmod.old_mode = kModeFile;
    chmod.new_mode = kModeExec;
    EXPECT_EQ(only_category(chmod), "executable");
    // Already executable before: not new.
    chmod.old_mode = kModeExec;
    EXPECT_TRUE(classify({chmod}).empty());
}

TEST(WorkspaceReport, SymlinksOutOfTheRepository) {
    EXPECT_EQ(only_category(link("keys", "/home/user/.ssh")), "symlink");
    EXPECT_EQ(only_category(link("a/b", "../../etc")), "symlink");
    EXPECT_EQ(only_category(link("top", "..")), "symlink");
    // ".." after a name may climb out through another link: counted as out.
    EXPECT_EQ(only_category(link("x/l", "other/../..")), "symlink");
    EXPECT_EQ(only_category(link("x/l", "y/..")), "symlink");
    EXPECT_EQ(only_category(link("h", ".git/hooks")), "symlink");
    EXPECT_EQ(only_category(link("e", "")), "symlink");
    EXPECT_TRUE(classify({link("a/b/c", "../../d"), link("a/l", "./x/y")}).empty());
}

TEST(WorkspaceReport, ControlCharactersInNamesAreFlaggedAndEscaped) {
    auto f = classify({added("evil\x1b]52;c;aGk=\x07.txt"), added("caf\xc3\xa9.txt"), added("bad\xff")});
    ASSERT_EQ(f.size(), 2u);
    EXPECT_EQ(f[0].category, "file-name");
    EXPECT_EQ(f[1].category, "file-name");
    Report r;
    r.mode = "clone";
    r.run_id = "20261202-011500-ab12cd";
    r.changes = {added("evil\x1b]52;c;aGk=\x07.txt")};
    r.flags = classify(r.changes);
    std::string text = to_text(r);
    EXPECT_EQ(text.find('\x1b'), std::string::npos);
    EXPECT_EQ(text.find('\x07'), std::string::npos);
    EXPECT_NE(text.find("\\x1b]52"), std::string::npos);
    // A name that is not UTF-8 is carried escaped, and said to be.
    r.changes = {added("bad\xff")};
    auto j = nlohmann::json::parse(to_json(r));
    EXPECT_EQ(j["changes"][0]["path"], "bad\\xff");
    EXPECT_EQ(j["changes"][0]["path_escaped"], true);
}

TEST(WorkspaceReport, DeletionsRunNothing) {
    Change d;
    d.path = ".git/hooks/pre-commit";
    d.kind = ChangeKind::deleted;
    d.old_mode = kModeExec;
    EXPECT_TRUE(classify({d}).empty());
}

TEST(WorkspaceReport, OneFlagPerCategoryAndPath) {
    // An executable Makefile is two things to look at, each said once.
    auto cats = categories_of({added("Makefile", kModeExec)});
    EXPECT_EQ(cats, (std::vector<std::string>{"build", "executable"}));
}

TEST(WorkspaceReport, TextAndJsonForms) {
    Report r;
    r.mode = "clone";
    r.run_id = "20261202-011500-ab12cd";
    r.branch = "agentjail/20261202-011500-ab12cd";
    r.base = "0123456789abcdef0123456789abcdef01234567";
    r.head = "89abcdef0123456789abcdef0123456789abcdef";
    r.commits = {{r.head, "add a hook", "Agent <a@example.invalid>"}};
    r.changes = {added(".github/workflows/x.yml"), link("k", "/etc/passwd")};
    r.flags = classify(r.changes);
    r.notes = {"uncommitted work committed as 89abcdef0123"};
    std::string t = to_text(r);
    EXPECT_NE(t.find("agentjail/20261202-011500-ab12cd"), std::string::npos);
    EXPECT_NE(t.find("[ci] .github/workflows/x.yml"), std::string::npos);
    EXPECT_NE(t.find("[symlink] k"), std::string::npos);
    EXPECT_NE(t.find("k -> /etc/passwd"), std::string::npos);
    EXPECT_NE(t.find("agentjail discard 20261202-011500-ab12cd"), std::string::npos);
    auto j = nlohmann::json::parse(to_json(r, -1));
    EXPECT_EQ(j["branch"], r.branch);
    EXPECT_EQ(j["commits"].size(), 1u);
    EXPECT_EQ(j["changes"][1]["new_mode"], "120000");
    EXPECT_EQ(j["changes"][1]["link_target"], "/etc/passwd");
    EXPECT_EQ(j["flags"].size(), 2u);
    EXPECT_EQ(j["flags"][0]["category"], "ci");
    Report refused = r;
    refused.refused = "the clone's .git was replaced by a link";
    EXPECT_NE(to_text(refused).find("nothing came back"), std::string::npos);
}

TEST(WorkspaceReport, ParseMode) {
    EXPECT_EQ(parse_mode("100644"), kModeFile);
    EXPECT_EQ(parse_mode("100755"), kModeExec);
    EXPECT_EQ(parse_mode("120000"), kModeLink);
    EXPECT_EQ(parse_mode("160000"), kModeGitlink);
    EXPECT_EQ(parse_mode("040000"), kModeDir);
    EXPECT_EQ(parse_mode("000000"), 0u);
    EXPECT_EQ(parse_mode("10x644"), 0u);
    EXPECT_EQ(parse_mode(""), 0u);
}

// ---- run state ----

TEST(WorkspaceRuns, RootFollowsXdgStateHome) {
    EXPECT_EQ(agentjail::sys::runs_root({"XDG_STATE_HOME=/s/state"}, "/home/u"), "/s/state/agentjail/runs");
    EXPECT_EQ(agentjail::sys::runs_root({}, "/home/u"), "/home/u/.local/state/agentjail/runs");
    // A relative value is invalid per the XDG spec and ignored.
    EXPECT_EQ(agentjail::sys::runs_root({"XDG_STATE_HOME=rel"}, "/home/u"), "/home/u/.local/state/agentjail/runs");
}

TEST(WorkspaceRuns, IdsSortByTimeAndAreSafeNames) {
    std::string a = agentjail::sys::new_run_id(1764638100);  // 2025-12-02 01:15:00 UTC
    EXPECT_EQ(a.substr(0, 16), "20251202-011500-");
    EXPECT_TRUE(agentjail::sys::valid_run_id(a));
    // A later second sorts after whatever the random part is.
    EXPECT_LT(agentjail::sys::new_run_id(1764638100).substr(0, 16) + "ffffff", agentjail::sys::new_run_id(1764638101));
    // The same second: the random part keeps them apart (24 bits; 4 tries make a
    // clash of all of them practically impossible).
    std::vector<std::string> same;
    for (int i = 0; i < 4; ++i) same.push_back(agentjail::sys::new_run_id(1764638100));
    EXPECT_FALSE(same[0] == same[1] && same[1] == same[2] && same[2] == same[3]);
    for (const char* bad : {"", "..", "../20251202-011500-ab12cd", "20251202-011500-ab12c/",
                            "20251202-011500-AB12CD", "20251202_011500-ab12cd", "20251202-011500-ab12cde"})
        EXPECT_FALSE(agentjail::sys::valid_run_id(bad)) << bad;
}

TEST(WorkspaceRuns, CreateWriteLoadListRemove) {
    ajtest::TempDir tmp("aj-runs");
    std::string root = tmp.path() + "/state/agentjail/runs";
    auto d = create_run(root);
    ASSERT_TRUE(d) << d.error().message();
    struct stat st {};
    ASSERT_EQ(::stat(root.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0700u);
    ASSERT_EQ(::stat((tmp.path() + "/state").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0700u);
    ASSERT_EQ(::stat(d->path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0700u);

    RunRecord rec;
    rec.id = d->id;
    rec.mode = "clone";
    rec.workspace = "/w";
    rec.repo = "/w";
    rec.branch = "agentjail/" + d->id;
    rec.started = "2026-12-02T01:15:00.000Z";
    rec.status = "ok";
    rec.flags = 2;
    rec.report_json = R"({"mode":"clone","flags":[1,2]})";
    ASSERT_TRUE(write_record(*d, rec));
    auto loaded = load_run(root, d->id);
    ASSERT_TRUE(loaded) << loaded.error().message();
    EXPECT_EQ(loaded->branch, rec.branch);
    EXPECT_EQ(loaded->flags, 2u);
    EXPECT_EQ(nlohmann::json::parse(loaded->report_json)["mode"], "clone");
    EXPECT_EQ(loaded->dir, d->path);
    // run.json is replaced, not rewritten in place; only it is left.
    ASSERT_TRUE(write_record(*d, rec));
    auto d2 = create_run(root);
    ASSERT_TRUE(d2);
    auto all = list_runs(root);
    ASSERT_TRUE(all);
    ASSERT_EQ(all->size(), 2u);
    EXPECT_EQ((*all)[0].id, d->id <= d2->id ? d->id : d2->id);
    // The second has no record yet: listed as unreadable, not dropped.
    const RunRecord& second = (*all)[0].id == d2->id ? (*all)[0] : (*all)[1];
    EXPECT_EQ(second.status, "unreadable");
    // A tree with read-only parts and a link to something outside goes; the target stays.
    std::string victim = tmp.write("victim", "keep");
    ASSERT_EQ(::mkdir((d->path + "/clone").c_str(), 0700), 0);
    ASSERT_EQ(::symlink(tmp.path().c_str(), (d->path + "/clone/out").c_str()), 0);
    ASSERT_EQ(::mkdir((d->path + "/clone/ro").c_str(), 0700), 0);
    tmp.write("x", "");  // beside the victim: the link to tmp/ must not be followed into it
    ASSERT_EQ(::symlink(victim.c_str(), (d->path + "/clone/ro/v").c_str()), 0);
    ASSERT_EQ(::chmod((d->path + "/clone/ro").c_str(), 0500), 0);
    ASSERT_TRUE(remove_run(root, d->id));
    EXPECT_FALSE(ajtest::exists(d->path));
    EXPECT_EQ(ajtest::read_file(victim), "keep");
    EXPECT_TRUE(ajtest::exists(tmp.path() + "/x"));
    auto gone = load_run(root, d->id);
    ASSERT_FALSE(gone);
    EXPECT_NE(gone.error().message().find("no run"), std::string::npos);
    EXPECT_FALSE(remove_run(root, "../state"));
}

TEST(WorkspaceRuns, LinksPlantedInTheStateAreRefused) {
    ajtest::TempDir tmp("aj-runs");
    ajtest::TempDir elsewhere("aj-runs-else");
    ASSERT_EQ(::mkdir((tmp.path() + "/state").c_str(), 0700), 0);
    // agentjail/ as a link to a directory elsewhere: never written through.
    ASSERT_EQ(::symlink(elsewhere.path().c_str(), (tmp.path() + "/state/agentjail").c_str()), 0);
    auto d = create_run(tmp.path() + "/state/agentjail/runs");
    ASSERT_FALSE(d);
    EXPECT_NE(d.error().message().find("refused"), std::string::npos) << d.error().message();
    EXPECT_FALSE(ajtest::exists(elsewhere.path() + "/runs"));
    // A directory others may write: refused too.
    ASSERT_EQ(::unlink((tmp.path() + "/state/agentjail").c_str()), 0);
    ASSERT_EQ(::mkdir((tmp.path() + "/state/agentjail").c_str(), 0777), 0);
    ASSERT_EQ(::chmod((tmp.path() + "/state/agentjail").c_str(), 0777), 0);
    d = create_run(tmp.path() + "/state/agentjail/runs");
    ASSERT_FALSE(d);
    EXPECT_NE(d.error().message().find("writable by others"), std::string::npos);
    // No root at all: no runs, no error, nothing made.
    auto none = list_runs(tmp.path() + "/nothing/agentjail/runs");
    ASSERT_TRUE(none);
    EXPECT_TRUE(none->empty());
    EXPECT_FALSE(ajtest::exists(tmp.path() + "/nothing"));
}

TEST(WorkspaceRuns, RecordJsonRoundTrip) {
    RunRecord r;
    r.id = "20261202-011500-ab12cd";
    r.mode = "overlay";
    r.workspace = "/w/\xff";
    r.status = "refused";
    r.message = "m";
    auto back = record_from_json(record_to_json(r), "x");
    ASSERT_TRUE(back);
    EXPECT_EQ(back->mode, "overlay");
    EXPECT_EQ(back->status, "refused");
    EXPECT_TRUE(back->report_json.empty());
    EXPECT_FALSE(record_from_json("[1]", "x"));
}

}  // namespace
}  // namespace agentjail::workspace
