// SPDX-License-Identifier: Apache-2.0
// A project's .env in the plan (lib/plan/dotenv.cc, issue 27 item 3): the view the
// sandbox gets instead of an empty mask (its keys, each value a placeholder), the
// secrets the proxy gets for known providers' keys (the same placeholders), and
// what stays a plain mask (a link, a file too big, .envrc, another mode).
#include "plan/internal.hpp"
#include "plan/plan.hpp"
#include "plan/view_rules.hpp"
#include "policy/policy.hpp"
#include "test_support.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <optional>
#include <string>
#include <vector>

namespace agentjail {
namespace {

using ajtest::TempDir;

struct Project {
    TempDir tmp{"aj-dotenv"};
    std::string ws() const { return tmp.path() + "/home/proj"; }
    Project() { tmp.mkdir("home/proj"); }
    plan::HostFacts host() const {
        plan::HostFacts f;
        f.uid = ::getuid();
        f.gid = ::getgid();
        f.user = "u";
        f.home = tmp.path() + "/home";
        f.cwd = ws();
        f.environ = {"PATH=/usr/bin:/bin", "HOME=" + f.home};
        return f;
    }
    plan::Plan plan(const std::vector<std::string>& allow_hosts = {}) {
        auto pol = policy::load("default");
        EXPECT_TRUE(pol);
        for (const auto& h : allow_hosts) EXPECT_TRUE(policy::add_allow_host(*pol, h, policy::Origin{"command line", 0, 0, "--allow-host"}));
        auto p = plan::build(*pol, {"true"}, host());
        EXPECT_TRUE(p) << p.error().message();
        return p ? std::move(*p) : plan::Plan{};
    }
};

// What the sandbox is shown at `path` instead of the host's file: through the view
// (the default) its rules' file or a hidden name, through --view mounts a mask's text.
// nullopt: nothing covers it; "" : hidden.
struct Cover {
    bool by_view = false;
    std::string text;
};
std::optional<Cover> cover_at(const plan::Plan& p, const std::string& path) {
    std::optional<Cover> found;
    for (const auto& m : p.mounts) {
        if (m.dst == path && m.kind == plan::MountKind::mask_file) found = Cover{false, m.text};
        if (m.kind != plan::MountKind::view || !m.view_rules) continue;
        if (path.size() <= m.dst.size() + 1 || path.compare(0, m.dst.size() + 1, m.dst + "/") != 0) continue;
        const std::string rel = path.substr(m.dst.size() + 1);
        if (auto f = m.view_rules->files.find(rel); f != m.view_rules->files.end()) found = Cover{true, f->second};
        else if (m.view_rules->hides(rel, false)) found = Cover{true, ""};
    }
    return found;
}

// Every text any cover shows (the mounts' and the view's files).
std::vector<std::pair<std::string, std::string>> every_text(const plan::Plan& p) {
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& m : p.mounts) {
        out.emplace_back(m.dst, m.text);
        if (m.view_rules)
            for (const auto& [rel, text] : m.view_rules->files) out.emplace_back(m.dst + "/" + rel, text);
    }
    return out;
}

std::string line_of(const std::string& text, const std::string& key) {
    for (const auto& l : ajtest::lines(text))
        if (l.rfind(key + "=", 0) == 0) return l.substr(key.size() + 1);
    return "(none)";
}

const char* kDotenv =
    "# settings\n"
    "export ANTHROPIC_API_KEY=AJ-CANARY-anthropic-value\n"
    "PORT = 3000  # inline comment\n"
    "DB_PASSWORD=\"AJ-CANARY-db\"\n"
    "MULTI=\"AJ-CANARY-line1\nAJ-CANARY-line2\"\n"
    "EMPTY=\n"
    "not a line\n";

TEST(PlanDotenv, TheViewHasEveryKeyWithAPlaceholderAndNoValue) {
    Project pr;
    pr.tmp.write("home/proj/.env", kDotenv);
    pr.tmp.write("home/proj/.env.local", "OPENAI_API_KEY=AJ-CANARY-openai\n");
    auto p = pr.plan();
    const auto op = cover_at(p, pr.ws() + "/.env");
    ASSERT_TRUE(op);
    EXPECT_TRUE(op->by_view);  // the default view serves it
    const std::string& v = op->text;
    EXPECT_EQ(line_of(v, "ANTHROPIC_API_KEY").rfind("agentjail-secret-placeholder-ANTHROPIC_API_KEY-", 0), 0u) << v;
    EXPECT_EQ(line_of(v, "PORT").rfind("agentjail-secret-placeholder-PORT-", 0), 0u) << v;
    EXPECT_EQ(line_of(v, "DB_PASSWORD").rfind("agentjail-secret-placeholder-", 0), 0u) << v;
    EXPECT_EQ(line_of(v, "EMPTY"), "") << v;
    EXPECT_NE(v.find("MULTI="), std::string::npos) << v;
    const std::string all = v + plan::to_text(p) + plan::to_json(p);
    EXPECT_EQ(all.find("AJ-CANARY"), std::string::npos) << "a value reached the plan:\n" << v;
    const auto local = cover_at(p, pr.ws() + "/.env.local");
    ASSERT_TRUE(local);
    EXPECT_EQ(line_of(local->text, "OPENAI_API_KEY").rfind("agentjail-secret-placeholder-", 0), 0u);
    // Without the proxy nothing swaps them back: no network settings at all.
    EXPECT_FALSE(p.net);
}

TEST(PlanDotenv, AKnownProvidersKeyIsASecretForItsHostWithTheSamePlaceholder) {
    Project pr;
    pr.tmp.write("home/proj/.env", kDotenv);
    auto p = pr.plan({"api.anthropic.com"});
    ASSERT_TRUE(p.net);
    const auto op = cover_at(p, pr.ws() + "/.env");
    ASSERT_TRUE(op);
    const net::Secret* anthropic = nullptr;
    for (const auto& s : p.net->secrets) {
        EXPECT_NE(s.name, "PORT") << "a key no provider reads is never put in";
        EXPECT_NE(s.name, "DB_PASSWORD");
        if (s.name == "ANTHROPIC_API_KEY") anthropic = &s;
    }
    ASSERT_NE(anthropic, nullptr);
    EXPECT_EQ(anthropic->placeholder, line_of(op->text, "ANTHROPIC_API_KEY"));
    EXPECT_EQ(anthropic->source, "dotenv:" + pr.ws() + "/.env#ANTHROPIC_API_KEY");
    ASSERT_EQ(anthropic->hosts.size(), 1u);
    EXPECT_EQ(anthropic->hosts[0].text, "api.anthropic.com");
    // The run's CA is made: the provider's tunnel is intercepted to put the key in.
    EXPECT_FALSE(p.net->ca_bundle_inside.empty());
}

TEST(PlanDotenv, WhatCannotBeReadSafelyStaysAnEmptyMask) {
    Project pr;
    pr.tmp.write("home/proj/real-env", "ANTHROPIC_API_KEY=AJ-CANARY\n");
    ASSERT_EQ(::symlink("real-env", (pr.ws() + "/.env").c_str()), 0);
    pr.tmp.write("home/proj/.env.big", std::string(70 * 1024, '#') + "\nKEY=AJ-CANARY\n");
    pr.tmp.write("home/proj/.envrc", "export KEY=AJ-CANARY\n");
    auto p = pr.plan();
    for (const char* name : {"/.env.big"}) {
        const auto op = cover_at(p, pr.ws() + name);
        ASSERT_TRUE(op) << name;
        EXPECT_TRUE(op->text.empty()) << name;
    }
    const auto texts = every_text(p);
    for (const auto& [at, text] : texts) EXPECT_TRUE(text.empty() || at == pr.ws() + "/.env") << at;
    // The link's target is the hidden one (a hard or symbolic link to a secret is
    // masked where it leads); nothing shows the target's keys.
    for (const auto& [at, text] : texts) EXPECT_EQ(text.find("ANTHROPIC"), std::string::npos) << at;
}

}  // namespace
}  // namespace agentjail
