// SPDX-License-Identifier: Apache-2.0
// Unit tests of the policy overrides (what CLI flags do to a Policy), env files,
// parse_size and Origin::describe.
#include "plan/limits.hpp"
#include "policy/policy.hpp"

#include "test_support.hpp"

#include <gtest/gtest.h>

#include <string>

namespace agentjail::policy {
namespace {

Origin flag(const char* name) { return Origin{"command line", 0, 0, name}; }

Policy base() {
    auto r = load("default");
    EXPECT_TRUE(r.has_value()) << (r ? std::string() : r.error().message());
    return r ? std::move(r).value() : Policy{};
}

const EnvSet* find_set(const Policy& p, const std::string& name) {
    for (const auto& e : p.env_set)
        if (e.name == name) return &e;
    return nullptr;
}

TEST(PolicyOrigin, Describe) {
    EXPECT_EQ((Origin{"a.toml", 3, 7, "filesystem.ro[1]"}).describe(), "a.toml:3:7 (filesystem.ro[1])");
    EXPECT_EQ((Origin{"a.toml", 3, 7, ""}).describe(), "a.toml:3:7");
    EXPECT_EQ(flag("--ro").describe(), "command line (--ro)");
    EXPECT_EQ((Origin{"", 0, 0, "--rw"}).describe(), "command line (--rw)");
    EXPECT_EQ((Origin{}).describe(), "command line");
}

TEST(PolicyOverrides, BindsAndHidesAppendWithTheirOrigin) {
    Policy p = base();
    size_t ro = p.ro.size(), hide = p.hide.size();
    add_ro(p, "~/data", "/data", flag("--ro"));
    add_rw(p, "/var/cache/x", "", flag("--rw"));
    add_hide(p, "{workspace}/secrets", flag("--hide"));
    ASSERT_EQ(p.ro.size(), ro + 1);
    EXPECT_EQ(p.ro.back().src, "~/data");
    EXPECT_EQ(p.ro.back().dst, "/data");
    EXPECT_FALSE(p.ro.back().optional) << "a path named on the command line must exist";
    EXPECT_EQ(p.ro.back().origin.describe(), "command line (--ro)");
    ASSERT_EQ(p.rw.size(), 1u);
    EXPECT_EQ(p.rw[0].src, "/var/cache/x");
    EXPECT_EQ(p.rw[0].dst, "");
    ASSERT_EQ(p.hide.size(), hide + 1);
    EXPECT_EQ(p.hide.back().pattern, "{workspace}/secrets");
    EXPECT_EQ(p.hide.back().origin.key, "--hide");
    EXPECT_TRUE(validate(p).has_value());
}

TEST(PolicyOverrides, TmpfsOnAnExistingPathResizesIt) {
    Policy p = base();
    ASSERT_EQ(p.tmpfs.size(), 1u);
    add_tmpfs(p, "/tmp/", 1ULL << 30, flag("--tmpfs"));
    ASSERT_EQ(p.tmpfs.size(), 1u);
    EXPECT_EQ(p.tmpfs[0].path, "/tmp");
    EXPECT_EQ(p.tmpfs[0].size_bytes, 1ULL << 30);
    EXPECT_EQ(p.tmpfs[0].origin.describe(), "command line (--tmpfs)");
    add_tmpfs(p, "/var/tmp", 0, flag("--tmpfs"));
    ASSERT_EQ(p.tmpfs.size(), 2u);
    EXPECT_EQ(p.tmpfs[1].size_bytes, 0u);
    EXPECT_TRUE(validate(p).has_value());
}

TEST(PolicyOverrides, SetEnvIsLastWinsPerName) {
    Policy p = base();
    set_env(p, "PATH", "/usr/bin", flag("--env"));
    size_t n = p.env_set.size();
    set_env(p, "PATH", "/opt/bin", flag("--env"));
    set_env(p, "FOO", "1", flag("--env"));
    set_env(p, "FOO", "2", flag("--env-file"));
    EXPECT_EQ(p.env_set.size(), n + 1);
    EXPECT_EQ(find_set(p, "PATH")->value, "/opt/bin");
    EXPECT_EQ(find_set(p, "PATH")->origin.key, "--env");
    EXPECT_EQ(find_set(p, "FOO")->value, "2");
    EXPECT_EQ(find_set(p, "FOO")->origin.key, "--env-file");
}

TEST(PolicyOverrides, PassEnvAddsTheExactName) {
    Policy p = base();
    size_t n = p.env_allow.size();
    pass_env(p, "GITHUB_TOKEN", flag("--env"));
    ASSERT_EQ(p.env_allow.size(), n + 1);
    EXPECT_EQ(p.env_allow.back().value, "GITHUB_TOKEN");
    EXPECT_EQ(p.env_allow.back().origin.describe(), "command line (--env)");
    // The deny patterns stay: an exact allow name is what lets this one through.
    EXPECT_FALSE(p.env_deny.empty());
    EXPECT_TRUE(validate(p).has_value());
}

TEST(PolicyEnvFile, ReadsNameValueLines) {
    ajtest::TempDir dir("aj-policy");
    std::string f = dir.write("vars.env",
                              "# a comment\n"
                              "\n"
                              "A=1\n"
                              "  B = two words \n"
                              "export C=\"quoted # not a comment\"\n"
                              "D='single'\n"
                              "E=\r\n"
                              "F=a=b\n"
                              "   # indented comment\n"
                              "G=\"unbalanced\n"
                              "A=last");
    Policy p = base();
    auto r = load_env_file(p, f);
    ASSERT_TRUE(r.has_value()) << r.error().message();
    auto value = [&](const char* n) { return find_set(p, n) ? find_set(p, n)->value : "(unset)"; };
    EXPECT_EQ(value("A"), "last");
    EXPECT_EQ(value("B"), " two words ") << "the value is taken as written after '='";
    EXPECT_EQ(value("C"), "quoted # not a comment");
    EXPECT_EQ(value("D"), "single");
    EXPECT_EQ(value("E"), "") << "CRLF line endings are accepted";
    EXPECT_EQ(value("F"), "a=b");
    EXPECT_EQ(value("G"), "\"unbalanced");
    EXPECT_EQ(find_set(p, "B")->origin.describe(), f + ":4:1 (B)");
    EXPECT_EQ(find_set(p, "A")->origin.describe(), f + ":11:1 (A)");
    EXPECT_TRUE(validate(p).has_value());
}

TEST(PolicyEnvFile, ErrorsNameFileAndLineAndChangeNothing) {
    ajtest::TempDir dir("aj-policy");
    Policy p = base();
    const size_t n = p.env_set.size();

    std::string f1 = dir.write("a.env", "OK=1\njunk line\n");
    auto r1 = load_env_file(p, f1);
    ASSERT_FALSE(r1.has_value());
    EXPECT_EQ(r1.error().kind(), ErrorKind::invalid_input);
    EXPECT_EQ(r1.error().message(), f1 + ":2: expected NAME=VALUE, got 'junk line'");
    EXPECT_EQ(p.env_set.size(), n) << "OK=1 must not be applied when a later line is bad";

    std::string f2 = dir.write("b.env", "\n\n1BAD=x\n");
    EXPECT_EQ(load_env_file(p, f2).error().message(),
              f2 + ":3: '1BAD' is not a valid environment variable name (letters, digits and _, "
                   "not starting with a digit)");

    std::string f3 = dir.write("c.env", "=value\n");
    EXPECT_EQ(load_env_file(p, f3).error().message(),
              f3 + ":1: expected an environment variable name, got an empty string");

    std::string f4 = dir.write("d.env", std::string("A=x\0y\n", 6));
    EXPECT_EQ(load_env_file(p, f4).error().message(),
              f4 + ":1: a value may not contain a NUL character");

    auto missing = load_env_file(p, dir.path() + "/none.env");
    ASSERT_FALSE(missing.has_value());
    EXPECT_EQ(missing.error().message(), "cannot read env file '" + dir.path() +
                                             "/none.env': ENOENT (No such file or directory)");
    EXPECT_EQ(p.env_set.size(), n);
}

// units::parse_size is the one size grammar: tmpfs sizes,
// --tmpfs PATH:SIZE and the memory limits read sizes the same way (issue 13).
TEST(PolicySize, ParsesBytesAndSuffixes) {
    using agentjail::units::parse_size;
    EXPECT_EQ(*parse_size("0"), 0u);
    EXPECT_EQ(*parse_size("123"), 123u);
    EXPECT_EQ(*parse_size("100k"), 100u * 1024);
    EXPECT_EQ(*parse_size("100K"), 100u * 1024);
    EXPECT_EQ(*parse_size("512M"), 512ULL << 20);
    EXPECT_EQ(*parse_size("512m"), 512ULL << 20);
    EXPECT_EQ(*parse_size("12MB"), 12ULL << 20);
    EXPECT_EQ(*parse_size("2GiB"), 2ULL << 30);
    EXPECT_EQ(*parse_size("1.5G"), 3ULL << 29);
    EXPECT_EQ(*parse_size("3T"), 3ULL << 40);
    EXPECT_EQ(*parse_size("8000000T"), 8000000ULL << 40);
}

TEST(PolicySize, RejectsEverythingElse) {
    for (const char* bad : {"", "M", "-1", " 1", "1 ", "0x10", "1e6", "2P", "0.5", "1.5X",
                            "18446744073709551616", "16777216T", "99999999999999999999G"}) {
        auto r = agentjail::units::parse_size(bad);
        ASSERT_FALSE(r.has_value()) << "'" << bad << "'";
        EXPECT_EQ(r.error().kind(), ErrorKind::invalid_input);
        EXPECT_EQ(r.error().message().rfind(std::string("bad size '") + bad + "': expected ", 0), 0u)
            << r.error().message();
        EXPECT_EQ(r.error().message(), units::parse_size(bad).error().message());
    }
}

}  // namespace
}  // namespace agentjail::policy
