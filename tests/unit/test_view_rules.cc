// SPDX-License-Identifier: Apache-2.0
// The view's rules (plan/view_rules.hpp): what a name is judged, with the default
// policy's kind of patterns, and the quick test agreeing with the full match.
#include "plan/view_rules.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace agentjail::view {
namespace {

Rules rules() {
    Rules r;
    for (const char* h : {"**/.env*", "**/*.pem", "**/.npmrc"}) r.hide.emplace_back(h);
    for (const char* p : {"**/.git/hooks/", "**/.git/config", "**/.git/config.lock", "**/.git", "**/.envrc",
                          "**/.claude/settings.json", "**/.vscode/", "**/.git/modules/**/config"})
        r.protect.emplace_back(p);
    r.protect_exact.insert("deploy/key.txt");
    return r;
}

using V = Rules::Verdict;

TEST(ViewRules, NamesAreJudgedAsTheDefaultPolicyMeans) {
    const Rules r = rules();
    EXPECT_EQ(r.judge("src/main.c", false), V::plain);
    EXPECT_EQ(r.judge(".env", false), V::hidden);
    EXPECT_EQ(r.judge("a/b/.env.local", false), V::hidden);
    EXPECT_EQ(r.judge("certs/tls.pem", false), V::hidden);
    EXPECT_EQ(r.judge(".git/config", false), V::protect);
    EXPECT_EQ(r.judge("sub/.git/config.lock", false), V::protect);
    EXPECT_EQ(r.judge(".git/hooks", true), V::protect);
    EXPECT_EQ(r.judge(".git/modules/lib/x/config", false), V::protect);
    EXPECT_EQ(r.judge(".claude/settings.json", false), V::protect);
    EXPECT_EQ(r.judge(".claude/notes.md", false), V::plain);
    EXPECT_EQ(r.judge("deploy/key.txt", false), V::protect);
    // A .git file names a git directory (protected); a .git directory is never whole.
    EXPECT_EQ(r.judge("sub/.git", false), V::protect);
    EXPECT_EQ(r.judge("sub/.git", true), V::plain);
    EXPECT_EQ(r.judge(".git/index", false), V::plain);
    // Both sides: .envrc is hidden (".env*") and protected; each side answers alone.
    EXPECT_EQ(r.judge(".envrc", false), V::hidden);
    EXPECT_TRUE(r.protects(".envrc", false));
    EXPECT_TRUE(r.hides(".envrc", false));
}

// The answer without the quick test of each rule's last name: every pattern matched.
Rules::Verdict slow_judge(const Rules& r, const std::string& rel, bool dir) {
    auto any = [&](const std::vector<Rule>& rs) {
        for (const auto& x : rs)
            if (x.pattern.match(rel, dir)) return true;
        return false;
    };
    if (r.hide_exact.count(rel) || any(r.hide)) return V::hidden;
    const bool git_dir = dir && (rel == ".git" || rel.ends_with("/.git"));
    if (r.protect_exact.count(rel) || (!git_dir && any(r.protect))) return V::protect;
    return V::plain;
}

// The quick test of each pattern's last name only skips patterns that could not match:
// the same answers as without it, over names near and far from the patterns.
TEST(ViewRules, TheQuickTestNeverChangesAnAnswer) {
    const Rules quick = rules();
    const std::vector<std::string> dirs = {"", "a/", "a/b/", ".git/", "sub/.git/", ".git/modules/m/", ".claude/",
                                           ".vscode/", "x/.vscode/"};
    const std::vector<std::string> names = {".env", "env", ".env.x", "x.pem", ".pem", "pem", "config", "config.lock",
                                            "hooks", ".git", ".envrc", "settings.json", "tasks.json", ".npmrc",
                                            "npmrc", "main.c", "**", "key.txt"};
    int checked = 0;
    for (const auto& d : dirs)
        for (const auto& n : names)
            for (bool dir : {false, true}) {
                const std::string rel = d + n;
                EXPECT_EQ(quick.judge(rel, dir), slow_judge(quick, rel, dir)) << rel << (dir ? "/" : "");
                ++checked;
            }
    EXPECT_EQ(checked, static_cast<int>(dirs.size() * names.size() * 2));
}

}  // namespace
}  // namespace agentjail::view
