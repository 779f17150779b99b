// SPDX-License-Identifier: Apache-2.0
// Unit tests of the seccomp programs compiled at build time (issue 12): every
// built-in policy's run takes its filter from the binary, and that filter is byte
// for byte what libseccomp makes now; any other table compiles at run time.
#include "policy/policy.hpp"
#include "seccomp/internal.hpp"
#include "seccomp/seccomp.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <string>

namespace agentjail::seccomp {
namespace {

// Switches the prebuilt lookup off for one scope.
struct NoPrebuilt {
    NoPrebuilt() { detail::use_prebuilt(false); }
    ~NoPrebuilt() { detail::use_prebuilt(true); }
};

std::shared_ptr<const Program> compile_ok(const policy::Policy& p) {
    auto prog = compile(p.seccomp);
    EXPECT_TRUE(prog.has_value()) << (prog ? "" : prog.error().message());
    return prog ? *prog : nullptr;
}

bool same_bpf(const Program& a, const Program& b) {
    return a.bpf().size() == b.bpf().size() &&
           std::memcmp(a.bpf().data(), b.bpf().data(), a.bpf().size() * sizeof(sock_filter)) == 0;
}

// The control for every test below: this test binary links the generated filters, so
// "prebuilt" is something a compile can be, and none of the tests passes vacuously.
TEST(SeccompPrebuilt, TheBuildCompiledSomeFilters) {
    EXPECT_GE(detail::prebuilt_filters().size(), 1u);
    for (const auto& p : detail::prebuilt_filters()) {
        EXPECT_GT(p.len, 0u);
        EXPECT_EQ(p.key.substr(0, 16), "agentjail-bpf 1\n");
    }
}

TEST(SeccompPrebuilt, EveryBuiltinPolicyIsPrebuiltAndMatchesLibseccomp) {
    int with_filter = 0;
    for (const auto& b : policy::builtins()) {
        SCOPED_TRACE(b.name);
        auto pol = policy::load(b.name);
        ASSERT_TRUE(pol.has_value()) << pol.error().message();
        if (!pol->seccomp.present) continue;
        ++with_filter;
        auto fast = compile_ok(*pol);
        ASSERT_TRUE(fast);
        EXPECT_TRUE(fast->prebuilt());
        std::shared_ptr<const Program> fresh;
        {
            NoPrebuilt off;
            fresh = compile_ok(*pol);
        }
        ASSERT_TRUE(fresh);
        EXPECT_FALSE(fresh->prebuilt());
        EXPECT_TRUE(same_bpf(*fast, *fresh)) << fast->bpf().size() << " against " << fresh->bpf().size()
                                             << " instructions";
        EXPECT_EQ(fast->needs_listener(), fresh->needs_listener());
        EXPECT_NE(fast->to_text().find("compiled when agentjail was built"), std::string::npos);
        EXPECT_EQ(fresh->to_text().find("compiled when agentjail was built"), std::string::npos);
    }
    EXPECT_GE(with_filter, 2);  // default and strict at least
}

// A policy that changes one rule of a built-in one has another table: it must not
// get the built-in's program (the lookup is by the whole table, not by name).
TEST(SeccompPrebuilt, AChangedRuleCompilesAtRunTime) {
    auto base = policy::load("default");
    ASSERT_TRUE(base.has_value());
    auto changed = policy::load_text(
        "extends = \"default\"\n[seccomp]\n[[seccomp.rule]]\nsyscalls = [\"getpid\"]\naction = \"errno:EPERM\"\n",
        "t.toml");
    ASSERT_TRUE(changed.has_value()) << changed.error().message();
    auto a = compile_ok(*base);
    auto b = compile_ok(*changed);
    ASSERT_TRUE(a && b);
    EXPECT_TRUE(a->prebuilt());
    EXPECT_FALSE(b->prebuilt());
    EXPECT_FALSE(same_bpf(*a, *b));
}

TEST(SeccompPrebuilt, TheKeyNamesWhatTheFilterIsMadeOf) {
    auto pol = policy::load("default");
    ASSERT_TRUE(pol.has_value());
    auto r = detail::resolve(pol->seccomp);
    ASSERT_TRUE(r.has_value());
    const std::string key = detail::filter_key(*r);
    EXPECT_EQ(key, detail::filter_key(*r));  // a function of the table alone
    ASSERT_FALSE(r->table.empty());

    auto errno_changed = *r;
    errno_changed.default_action.err += 1;
    EXPECT_NE(detail::filter_key(errno_changed), key);

    auto quiet_changed = *r;
    quiet_changed.table.front().entries.front().action.quiet ^= true;
    EXPECT_NE(detail::filter_key(quiet_changed), key);

    // What explain shows but the BPF does not depend on leaves the key alone.
    auto renamed = *r;
    renamed.default_where = "elsewhere.toml:1:1";
    renamed.table.front().entries.front().rule += 7;
    EXPECT_EQ(detail::filter_key(renamed), key);

    // A comparison's operand is part of it.
    for (auto& t : errno_changed.table)
        for (auto& e : t.entries)
            if (!e.cmps.empty()) {
                auto cmp_changed = *r;
                for (auto& t2 : cmp_changed.table)
                    if (t2.nr == t.nr) t2.entries[static_cast<size_t>(&e - t.entries.data())].cmps.front().b ^= 1;
                EXPECT_NE(detail::filter_key(cmp_changed), key) << t.name;
                return;
            }
    ADD_FAILURE() << "the default policy has no conditional rule to change";
}

}  // namespace
}  // namespace agentjail::seccomp
