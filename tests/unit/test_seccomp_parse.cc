// SPDX-License-Identifier: Apache-2.0
// Unit tests of the [seccomp] language: every rule form, every error with its exact
// file:line:column, group expansion, the constant and errno tables, layering, and
// `agentjail check` reporting seccomp errors.
#include "policy/policy.hpp"
#include "seccomp/internal.hpp"
#include "seccomp/seccomp.hpp"
#include "test_support.hpp"

#include <gtest/gtest.h>
#include <linux/audit.h>
#include <seccomp.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#include <cerrno>
#include <set>
#include <string>

namespace agentjail::seccomp {
namespace {

// The compile error of a one-file policy read as "t.toml" ("(no error)" if none).
std::string err(const std::string& text) {
    auto p = policy::load_text(text, "t.toml");
    if (!p) return "policy: " + p.error().message();
    auto c = compile(p->seccomp);
    if (c) return "(no error)";
    EXPECT_EQ(c.error().kind(), ErrorKind::invalid_input) << c.error().message();
    return c.error().message();
}

std::shared_ptr<const Program> ok(const std::string& text) {
    auto p = policy::load_text(text, "t.toml");
    EXPECT_TRUE(p.has_value()) << (p ? "" : p.error().message());
    if (!p) return nullptr;
    auto c = compile(p->seccomp);
    EXPECT_TRUE(c.has_value()) << (c ? "" : c.error().message());
    if (!c) return nullptr;
    return *c;
}

// A policy with one rule: syscalls, action and args as TOML values.
std::string rule(const std::string& syscalls, const std::string& action,
                 const std::string& args = "") {
    std::string t = "[seccomp]\n[[seccomp.rule]]\nsyscalls = " + syscalls + "\naction = " + action + "\n";
    if (!args.empty()) t += "args = " + args + "\n";
    return t;
}

Decision decide(const Program& p, int nr, std::vector<std::uint64_t> args = {}) {
    std::uint64_t a[6] = {};
    for (size_t i = 0; i < args.size() && i < 6; ++i) a[i] = args[i];
    return p.decide(AUDIT_ARCH_X86_64, nr, a);
}

TEST(SeccompParse, EveryRuleFormIsRead) {
    auto p = ok(R"(description = "forms"
[seccomp]
default = "allow"
nested_sandboxes = true
log = "{tmp}/denials.jsonl"

[[seccomp.rule]]
syscalls = ["ptrace", "@keyring"]
action = "errno:EPERM"
why = "names and groups"

[[seccomp.rule]]
syscalls = ["ioctl"]
action = "errno:EIO"
args = ["arg1 == TIOCSTI"]

[[seccomp.rule]]
syscalls = ["socket"]
action = "errno:EAFNOSUPPORT"
args = ["arg0 == AF_NETLINK", "arg2 != NETLINK_ROUTE"]

[[seccomp.rule]]
syscalls = ["lseek"]
action = "kill"
args = ["arg2 > 4", "arg1 >= 0x100", "arg0 <= 1023"]

[[seccomp.rule]]
syscalls = ["dup2"]
action = "log"
args = ["arg1 < 3"]

[[seccomp.rule]]
syscalls = ["clone"]
action = "errno:EPERM"
args = ["arg0 & CLONE_NEWUSER|CLONE_NEWNET"]

[[seccomp.rule]]
syscalls = ["mmap"]
action = "errno:EACCES"
args = ["arg2 & 0x6 == PROT_WRITE | PROT_EXEC"]

[[seccomp.rule]]
syscalls = ["personality"]
action = "notify"
args = ["arg0 & READ_IMPLIES_EXEC"]
unless = "nested_sandboxes"
)");
    ASSERT_TRUE(p);
    const auto& r = p->rules();
    // 7 written (one left out by nested_sandboxes) + the built-in + the socket gate's 4
    ASSERT_EQ(r.size(), 12u);
    EXPECT_EQ(r[0].text, "ptrace @keyring -> errno:EPERM");
    EXPECT_EQ(r[0].why, "names and groups");
    EXPECT_EQ(r[0].where, "t.toml:7:1");
    EXPECT_EQ(r[1].text, "ioctl if arg1 == TIOCSTI -> errno:EIO");
    EXPECT_EQ(r[2].text, "socket if arg0 == AF_NETLINK && arg2 != NETLINK_ROUTE -> errno:EAFNOSUPPORT");
    EXPECT_EQ(r[3].text, "lseek if arg2 > 4 && arg1 >= 0x100 && arg0 <= 1023 -> kill");
    EXPECT_EQ(r[4].text, "dup2 if arg1 < 3 -> log");
    EXPECT_EQ(r[5].text, "clone if arg0 & CLONE_NEWUSER|CLONE_NEWNET -> errno:EPERM");
    EXPECT_EQ(r[6].text, "mmap if arg2 & 0x6 == PROT_WRITE|PROT_EXEC -> errno:EACCES");
    EXPECT_EQ(r[7].where, "built-in");
    EXPECT_EQ(r[7].text, "execve sendmsg close write exit exit_group -> allow");
    EXPECT_NE(p->to_text().find("personality if arg0 & READ_IMPLIES_EXEC -> notify  (t.toml:42:1)"), std::string::npos)
        << p->to_text();

    EXPECT_EQ(decide(*p, SYS_keyctl).action.err, EPERM);
    EXPECT_EQ(decide(*p, SYS_ioctl, {0, 0x5412}).action.err, EIO);
    EXPECT_EQ(decide(*p, SYS_socket, {16, 3, 9}).action.err, EAFNOSUPPORT);
    EXPECT_EQ(decide(*p, SYS_socket, {16, 3, 0}).rule, -1);
    EXPECT_EQ(decide(*p, SYS_lseek, {1023, 0x100, 5}).action.kind, ActionKind::kill);
    EXPECT_EQ(decide(*p, SYS_lseek, {1024, 0x100, 5}).rule, -1);
    EXPECT_EQ(decide(*p, SYS_dup2, {0, 2}).action.kind, ActionKind::log);
    EXPECT_EQ(decide(*p, SYS_clone, {0x40000000}).action.err, EPERM);  // CLONE_NEWNET alone
    EXPECT_EQ(decide(*p, SYS_clone, {0x11}).rule, -1);
    EXPECT_EQ(decide(*p, SYS_mmap, {0, 0, 6}).action.err, EACCES);
    EXPECT_EQ(decide(*p, SYS_mmap, {0, 0, 2}).rule, -1);
    EXPECT_EQ(decide(*p, SYS_personality, {0x400000}).rule, -1);  // left out
}

TEST(SeccompParse, PolicyKeysAndLayers) {
    auto base = policy::load_text(R"([seccomp]
default = "errno:EPERM"
log = "/var/log/x.jsonl"
[[seccomp.rule]]
syscalls = ["read"]
action = "allow"
)",
                                  "t.toml");
    ASSERT_TRUE(base.has_value()) << base.error().message();
    EXPECT_TRUE(base->seccomp.present);
    EXPECT_EQ(base->seccomp.default_action.value, "errno:EPERM");
    EXPECT_EQ(base->seccomp.default_action.origin.describe(), "t.toml:2:11 (seccomp.default)");
    EXPECT_EQ(base->seccomp.log.value, "/var/log/x.jsonl");
    ASSERT_EQ(base->seccomp.rules.size(), 1u);
    EXPECT_EQ(base->seccomp.rules[0].syscalls[0].origin.describe(),
              "t.toml:5:13 (seccomp.rule[0].syscalls[0])");
    EXPECT_EQ(base->seccomp.rules[0].declared_default.value, "errno:EPERM");

    auto empty = policy::load_text("[seccomp]\n", "t.toml");
    ASSERT_TRUE(empty.has_value());
    EXPECT_TRUE(empty->seccomp.present);
    EXPECT_EQ(empty->seccomp.default_action.origin.describe(), "built-in default (seccomp.default)");
    auto none = policy::load_text("", "t.toml");
    ASSERT_TRUE(none.has_value());
    EXPECT_FALSE(none->seccomp.present);

    // Layers: default's rules first, then this file's; scalars: later wins.
    ajtest::TempDir dir("aj-seccomp");
    std::string file = dir.write("p.toml", R"(extends = "default"
[seccomp]
default = "log"
nested_sandboxes = true
[[seccomp.rule]]
syscalls = ["ptrace"]
action = "allow"
)");
    auto layered = policy::load(file);
    ASSERT_TRUE(layered.has_value()) << layered.error().message();
    EXPECT_EQ(layered->seccomp.default_action.value, "log");
    EXPECT_TRUE(layered->seccomp.nested.value);
    ASSERT_GT(layered->seccomp.rules.size(), 10u);
    EXPECT_EQ(layered->seccomp.rules.front().origin.file, "default.toml");
    EXPECT_EQ(layered->seccomp.rules.back().origin.describe(), file + ":5:1 (seccomp.rule[0])");
    EXPECT_EQ(layered->seccomp.rules.front().declared_default.value, "allow");
    EXPECT_EQ(layered->seccomp.rules.back().declared_default.value, "log");
    auto p = compile(layered->seccomp);
    ASSERT_TRUE(p.has_value()) << p.error().message();
    EXPECT_EQ((*p)->default_action().kind, ActionKind::log);
    EXPECT_EQ(decide(**p, SYS_ptrace).action.kind, ActionKind::allow);
    EXPECT_EQ(decide(**p, SYS_read).action.kind, ActionKind::log);
    EXPECT_EQ(decide(**p, SYS_mount).action.kind, ActionKind::log);  // left out: nested
    EXPECT_EQ(decide(**p, SYS_bpf).action.err, EPERM);
}

TEST(SeccompParseError, ShapeErrorsFromTheParser) {
    EXPECT_EQ(err("[seccomp]\ndefualt = 'allow'\n"),
              "policy: t.toml:2:1: seccomp.defualt: unknown key; did you mean 'default'?");
    EXPECT_EQ(err("[seccomp]\nnested_sandboxes = 'yes'\n"),
              "policy: t.toml:2:20: seccomp.nested_sandboxes: expected true or false, got a string");
    EXPECT_EQ(err("[seccomp]\nlog = 5\n"),
              "policy: t.toml:2:7: seccomp.log: expected a path string, got an integer");
    EXPECT_EQ(err("[seccomp]\nrule = 5\n"),
              "policy: t.toml:2:8: seccomp.rule: expected an array, got an integer");
    EXPECT_EQ(err("[seccomp]\n[[seccomp.rule]]\naction = 'kill'\n"),
              "policy: t.toml:2:1: seccomp.rule[0]: expected a rule with 'syscalls' and 'action'");
    EXPECT_EQ(err("[seccomp]\n[[seccomp.rule]]\nsyscalls = ['read']\n"),
              "policy: t.toml:2:1: seccomp.rule[0]: expected a rule with 'syscalls' and 'action'");
    EXPECT_EQ(err("[seccomp]\n[[seccomp.rule]]\nsyscalls = []\naction = 'kill'\n"),
              "policy: t.toml:3:12: seccomp.rule[0].syscalls: expected at least one system call");
    EXPECT_EQ(err("[seccomp]\n[[seccomp.rule]]\nsyscalls = [1]\naction = 'kill'\n"),
              "policy: t.toml:3:13: seccomp.rule[0].syscalls[0]: expected a string, got an integer");
    EXPECT_EQ(err("[seccomp]\n[[seccomp.rule]]\nsyscalls = 'read'\naction = 'kill'\n"),
              "policy: t.toml:3:12: seccomp.rule[0].syscalls: expected an array, got a string");
    EXPECT_EQ(err(rule("['read']", "'kill'", "['arg0 == 1']") + "arg = []\n"),
              "policy: t.toml:6:1: seccomp.rule[0].arg: unknown key; did you mean 'args'?");
    EXPECT_EQ(err(rule("['read']", "'kill'") + "unless = 'nested'\n"),
              "policy: t.toml:5:10: seccomp.rule[0].unless: expected \"nested_sandboxes\", got "
              "\"nested\"");
    EXPECT_EQ(err(rule("['read']", "'kill'") + "why = ''\n"),
              "policy: t.toml:5:7: seccomp.rule[0].why: expected a non-empty string");
    EXPECT_EQ(err("default = 'allow'\n"),
              "policy: t.toml:1:1: default: unknown key; did you mean 'seccomp.default'?");
}

TEST(SeccompParseError, NamesAndGroups) {
    EXPECT_EQ(err(rule("['ptrace', 'ptrac3']", "'errno:EPERM'")),
              "t.toml:3:23: seccomp.rule[0].syscalls[1]: unknown system call 'ptrac3'; did you "
              "mean 'ptrace'?");
    EXPECT_EQ(err(rule("['frobnicate_everything']", "'kill'")),
              "t.toml:3:13: seccomp.rule[0].syscalls[0]: unknown system call "
              "'frobnicate_everything'");
    EXPECT_EQ(err(rule("['stime']", "'kill'")),
              "t.toml:3:13: seccomp.rule[0].syscalls[0]: 'stime' is not a system call on x86_64 "
              "(only other architectures have it)");
    std::string m = err(rule("['@mounts']", "'kill'"));
    EXPECT_EQ(m.rfind("t.toml:3:13: seccomp.rule[0].syscalls[0]: unknown group '@mounts' (groups: "
                      "@mount @namespaces @debug",
                      0),
              0u)
        << m;
}

TEST(SeccompParseError, Actions) {
    EXPECT_EQ(err(rule("['read']", "'deny'")),
              "t.toml:4:10: seccomp.rule[0].action: expected allow, errno:NAME (e.g. errno:EPERM), "
              "kill, log or notify, got \"deny\"");
    EXPECT_EQ(err(rule("['read']", "'errno:EPRM'")),
              "t.toml:4:10: seccomp.rule[0].action: unknown errno name 'EPRM' (expected e.g. "
              "errno:EPERM)");
    EXPECT_EQ(err(rule("['read']", "'errno:1'")),
              "t.toml:4:10: seccomp.rule[0].action: unknown errno name '1' (expected e.g. "
              "errno:EPERM)");
    EXPECT_EQ(err("[seccomp]\ndefault = 'refuse'\n"),
              "t.toml:2:11: seccomp.default: expected allow, errno:NAME (e.g. errno:EPERM), kill, "
              "log or notify, got \"refuse\"");
    EXPECT_EQ(err("[seccomp]\ndefault = 'notify'\n"),
              "t.toml:2:11: seccomp.default: notify is for rules whose syscall has a built-in "
              "decider, not a default");
    EXPECT_EQ(err(rule("['personality', 'ptrace']", "'notify'")),
              "t.toml:3:28: seccomp.rule[0].syscalls[1]: notify needs a built-in decider, and "
              "ptrace has none (deciders exist for: personality)");
    EXPECT_EQ(err(rule("['write']", "'errno:EPERM'")),
              "t.toml:3:13: seccomp.rule[0].syscalls[0]: write is always allowed: the launcher "
              "calls it after loading the filter and before execve");
    EXPECT_EQ(err(rule("['exit_group']", "'kill'", "['arg0 == 3']")),
              "t.toml:3:13: seccomp.rule[0].syscalls[0]: exit_group is always allowed: the "
              "launcher calls it after loading the filter and before execve");
}

TEST(SeccompParseError, ARuleThatRepeatsTheDefault) {
    EXPECT_EQ(err(rule("['read']", "'allow'")),
              "t.toml:4:10: seccomp.rule[0].action: the rule does nothing: allow is already the "
              "default (built-in default)");
    EXPECT_EQ(err("[seccomp]\ndefault = 'errno:EPERM'\n[[seccomp.rule]]\nsyscalls = ['ptrace']\n"
                  "action = 'errno:EPERM'\nargs = ['arg0 == 1']\n"),
              "t.toml:5:10: seccomp.rule[0].action: the rule does nothing: errno:EPERM is already "
              "the default (t.toml:2:11)");
    // Resetting an earlier rule is what a repeat of the default is for.
    EXPECT_EQ(err(rule("['ptrace']", "'errno:EPERM'") +
                  "[[seccomp.rule]]\nsyscalls = ['ptrace']\naction = 'allow'\n"),
              "(no error)");
    // A conditional repeat of the default is allowed as an exception to an
    // unconditional rule, and only then.
    EXPECT_EQ(err(rule("['ioctl']", "'errno:EPERM'") +
                  "[[seccomp.rule]]\nsyscalls = ['ioctl']\naction = 'allow'\nargs = ['arg1 == 1']\n"),
              "(no error)");
    EXPECT_EQ(err(rule("['ioctl']", "'errno:EPERM'", "['arg1 == 2']") +
                  "[[seccomp.rule]]\nsyscalls = ['ioctl']\naction = 'allow'\nargs = ['arg1 == 1']\n"),
              "t.toml:8:10: seccomp.rule[1].action: the rule does nothing: allow is already the "
              "default (built-in default)");
}

TEST(SeccompParseError, Conditions) {
    auto cond = [](const std::string& c) {
        return err(rule("['ioctl']", "'errno:EPERM'", "['arg0 == 1', '" + c + "']"));
    };
    const std::string at = "t.toml:5:22: seccomp.rule[0].args[1]: ";
    const std::string shape =
        "expected 'argN OP VALUE' (OP: == != < <= > >=), 'argN & MASK' or 'argN & MASK == "
        "VALUE', with N in 0..5";
    EXPECT_EQ(cond("arg0 > 3"),
              at + "arg0 is already compared by seccomp.rule[0].args[0] (one comparison per "
                   "argument in a rule; write a second rule)");
    EXPECT_EQ(cond("arg6 == 1"), at + "argument index out of range (arg0 .. arg5)");
    EXPECT_EQ(cond("arg12 == 1"), at + "argument index out of range (arg0 .. arg5)");
    EXPECT_EQ(cond("arg1 = 3"), at + shape);
    EXPECT_EQ(cond("arg1 =="), at + "expected a number or a constant name");
    EXPECT_EQ(cond("arg1 == 3 4"), at + shape);
    EXPECT_EQ(cond("args1 == 3"), at + shape);
    EXPECT_EQ(cond("x == 3"), at + shape);
    EXPECT_EQ(cond("arg1 && 3"), at + shape);
    EXPECT_EQ(cond("arg1 == TIOCSIT"), at + "unknown constant 'TIOCSIT'; did you mean 'TIOCSTI'?");
    EXPECT_EQ(cond("arg1 == FROB"), at + "unknown constant 'FROB'");
    EXPECT_EQ(cond("arg1 == -1"),
              at + "negative numbers are not supported (write an int's 32-bit value, "
                   "0xffffffff for -1: int arguments are compared on their low 32 bits)");
    EXPECT_EQ(cond("arg1 & 0"), at + "the mask is 0: the condition can never be true");
    EXPECT_EQ(cond("arg1 & 0x1 == 0x2"),
              at + "the value has bits outside the mask: the condition can never be true");
    EXPECT_EQ(cond("arg1 < 0"), at + "the condition can never be true");
    EXPECT_EQ(cond("arg1 > 0xffffffffffffffff"), at + "the condition can never be true");
    EXPECT_EQ(cond("arg1 >= 0"), at + "the condition is always true (leave it out)");
    EXPECT_EQ(cond("arg1 == 0x10000000000000000"),
              at + "bad number '0x10000000000000000'");
    EXPECT_EQ(cond("arg1 == 18446744073709551616"),
              at + "number '18446744073709551616' does not fit in 64 bits");
    EXPECT_EQ(cond("arg1 == 12abc"), at + "bad number '12abc'");
    EXPECT_EQ(cond("arg1 == 0x"), at + "bad number '0x'");
    // ioctl's arg2 is an unsigned long: all 64 bits count there.
    EXPECT_EQ(cond("arg2 == 0xffffffffffffffff"), "(no error)");
    EXPECT_EQ(cond("arg2 == 18446744073709551615"), "(no error)");
    EXPECT_EQ(cond("  arg1==TIOCSTI|0x100  "), "(no error)");
    EXPECT_EQ(err(rule("['ioctl']", "'errno:EPERM'",
                       "['arg0 & 0xffffffff', 'arg1 & 0xffffffff']")),
              "t.toml:2:1: seccomp.rule[0]: the conditions expand to more than 64 alternatives "
              "('argN & MASK' makes one per bit)");
}

TEST(SeccompParseError, Contradictions) {
    auto two = [](const std::string& a1, const std::string& act1, const std::string& a2,
                  const std::string& act2) {
        return err("[seccomp]\n[[seccomp.rule]]\nsyscalls = ['ioctl']\naction = '" + act1 +
                   "'\nargs = ['" + a1 + "']\n[[seccomp.rule]]\nsyscalls = ['ioctl']\naction = '" +
                   act2 + "'\nargs = ['" + a2 + "']\n");
    };
    const std::string second = "t.toml:6:1: seccomp.rule[1]: contradicts the rule at t.toml:2:1 ";
    EXPECT_EQ(two("arg1 == 5", "errno:EPERM", "arg1 & 0xff == 5", "kill"),
              second + "(ioctl if arg1 == 5 -> errno:EPERM): both match some ioctl calls but "
                       "their actions differ");
    EXPECT_EQ(two("arg1 == 5", "errno:EPERM", "arg1 == 5", "errno:EIO"),
              second + "(ioctl if arg1 == 5 -> errno:EPERM): both match some ioctl calls but "
                       "their actions differ");
    EXPECT_EQ(two("arg1 > 10", "errno:EPERM", "arg1 & 0xf0 == 0", "kill"),
              second + "(ioctl if arg1 > 10 -> errno:EPERM): both match some ioctl calls but "
                       "their actions differ");
    EXPECT_EQ(two("arg1 & 0x3", "errno:EPERM", "arg1 == 2", "kill"),
              second + "(ioctl if arg1 & 0x3 -> errno:EPERM): both match some ioctl calls but "
                       "their actions differ");
    EXPECT_EQ(two("arg1 != 7", "errno:EPERM", "arg1 != 8", "kill"),
              second + "(ioctl if arg1 != 7 -> errno:EPERM): both match some ioctl calls but "
                       "their actions differ");
    // Disjoint conditions, or the same action, are fine.
    EXPECT_EQ(two("arg1 == 5", "errno:EPERM", "arg1 == 6", "kill"), "(no error)");
    EXPECT_EQ(two("arg1 < 10", "errno:EPERM", "arg1 & 0xf0 == 0x10", "kill"), "(no error)");
    EXPECT_EQ(two("arg1 > 0x1f", "errno:EPERM", "arg1 & 0xfffffffffffffff0 == 0x10", "kill"),
              "(no error)");
    EXPECT_EQ(two("arg1 != 7", "errno:EPERM", "arg1 == 7", "kill"), "(no error)");
    EXPECT_EQ(two("arg1 <= 7", "errno:EPERM", "arg1 >= 8", "kill"), "(no error)");
    EXPECT_EQ(two("arg1 & 0x3", "errno:EPERM", "arg1 & 0x3 == 0", "kill"), "(no error)");
    EXPECT_EQ(two("arg1 == 5", "errno:EPERM", "arg1 & 0xff == 5", "errno:EPERM"), "(no error)");
    EXPECT_EQ(err("[seccomp]\n[[seccomp.rule]]\nsyscalls = ['ioctl']\naction = 'errno:EPERM'\n"
                  "args = ['arg1 == 5']\n[[seccomp.rule]]\nsyscalls = ['ioctl']\n"
                  "action = 'kill'\nargs = ['arg0 == 3']\n"),
              "t.toml:6:1: seccomp.rule[1]: contradicts the rule at t.toml:2:1 (ioctl if arg1 == 5 "
              "-> errno:EPERM): both match some ioctl calls but their actions differ");
    // Different arguments: both can hold at once.
}

TEST(SeccompParseError, ExceptionsThatCannotBeCompiled) {
    EXPECT_EQ(err("[seccomp]\ndefault = 'errno:EPERM'\n[[seccomp.rule]]\nsyscalls = ['ioctl']\n"
                  "action = 'allow'\n[[seccomp.rule]]\nsyscalls = ['ioctl']\naction = 'kill'\n"
                  "args = ['arg1 > 5']\n"),
              "t.toml:6:1: seccomp: ioctl: an exception to the rule at t.toml:3:1 must compare one "
              "argument with == or '& MASK ==' (the same argument in every exception)");
    EXPECT_EQ(err("[seccomp]\ndefault = 'errno:EPERM'\n[[seccomp.rule]]\nsyscalls = ['ioctl']\n"
                  "action = 'allow'\n[[seccomp.rule]]\nsyscalls = ['ioctl']\naction = 'kill'\n"
                  "args = ['arg1 == 5', 'arg0 == 1']\n"),
              "t.toml:6:1: seccomp: ioctl: an exception to the rule at t.toml:3:1 must compare one "
              "argument with == or '& MASK ==' (the same argument in every exception)");
}

// The socket gate is in every filter, whatever the policy's rules say about the calls
// it takes: a policy cannot let connect, a Unix datagram socket or io_uring past it.
TEST(SeccompSocketGate, EveryPolicyGetsIt) {
    auto bare = ok("[seccomp]\n");
    ASSERT_TRUE(bare);
    EXPECT_EQ(decide(*bare, SYS_connect).action.kind, ActionKind::notify);
    EXPECT_EQ(decide(*bare, SYS_socket, {AF_UNIX, SOCK_DGRAM}).action.err, EACCES);
    EXPECT_EQ(decide(*bare, SYS_socket, {AF_UNIX, SOCK_STREAM}).action.kind, ActionKind::allow);
    EXPECT_EQ(decide(*bare, SYS_io_uring_setup).action.err, EPERM);
    EXPECT_TRUE(bare->needs_listener());
    // SOCK_RAW: AF_UNIX makes it a datagram socket.
    EXPECT_EQ(decide(*bare, SYS_socket, {AF_UNIX, SOCK_RAW}).action.err, EACCES);
    EXPECT_EQ(decide(*bare, SYS_socketpair, {AF_UNIX, SOCK_RAW | SOCK_CLOEXEC}).action.err, EACCES);
    EXPECT_EQ(decide(*bare, SYS_socket, {AF_UNIX, SOCK_SEQPACKET}).action.kind, ActionKind::allow);
    EXPECT_EQ(decide(*bare, SYS_socket, {AF_INET, SOCK_RAW}).action.kind, ActionKind::allow);
    // A socket's blocking mode changes through the supervisor, which makes the call
    // itself (never CONTINUE: SOCK21); recorded nowhere.
    auto setfl = decide(*bare, SYS_fcntl, {3, F_SETFL, O_NONBLOCK});
    EXPECT_EQ(setfl.action.kind, ActionKind::notify);
    EXPECT_EQ(decide(*bare, SYS_ioctl, {3, FIONBIO}).action.kind, ActionKind::notify);
    ASSERT_GE(setfl.rule, 0);
    EXPECT_EQ(bare->rules()[static_cast<size_t>(setfl.rule)].where, "built-in");
    EXPECT_EQ(decide(*bare, SYS_fcntl, {3, F_GETFL}).rule, -1);
    EXPECT_GE(decide(*bare, SYS_ioctl, {3, FIONBIO}).rule, 0);
    EXPECT_EQ(decide(*bare, SYS_ioctl, {3, FIONREAD}).rule, -1);

    // Allowed by name, or by the default: still the gate's.
    auto allowing = ok("[seccomp]\ndefault = 'errno:EPERM'\n[[seccomp.rule]]\n"
                       "syscalls = ['connect', 'io_uring_setup', 'io_uring_enter', 'socketpair']\n"
                       "action = 'allow'\n[[seccomp.rule]]\nsyscalls = ['socket']\naction = 'allow'\n"
                       "args = ['arg0 == AF_UNIX']\n");
    ASSERT_TRUE(allowing);
    EXPECT_EQ(decide(*allowing, SYS_connect).action.kind, ActionKind::notify);
    EXPECT_EQ(decide(*allowing, SYS_io_uring_setup).action.err, EPERM);
    EXPECT_EQ(decide(*allowing, SYS_io_uring_enter).action.err, EPERM);
    EXPECT_EQ(decide(*allowing, SYS_socket, {AF_UNIX, SOCK_DGRAM}).action.err, EACCES);
    EXPECT_EQ(decide(*allowing, SYS_socketpair, {AF_UNIX, SOCK_DGRAM}).action.err, EACCES);
    EXPECT_EQ(decide(*allowing, SYS_socketpair, {AF_UNIX, SOCK_STREAM}).action.kind, ActionKind::allow);
    EXPECT_EQ(decide(*allowing, SYS_socket, {AF_INET, SOCK_DGRAM}).action.err, EPERM);  // the default

    // A refusal stays the policy's.
    auto refusing = ok(rule("['connect']", "'errno:ENETDOWN'"));
    ASSERT_TRUE(refusing);
    EXPECT_EQ(decide(*refusing, SYS_connect).action.err, ENETDOWN);
    auto unix_refused = ok(rule("['socket']", "'errno:EPERM'", "['arg0 == AF_UNIX']"));
    ASSERT_TRUE(unix_refused);
    EXPECT_EQ(decide(*unix_refused, SYS_socket, {AF_UNIX, SOCK_STREAM}).action.err, EPERM);

    // An allow of AF_UNIX among other families cannot be told apart in the filter.
    EXPECT_EQ(err("[seccomp]\ndefault = 'errno:EPERM'\n" + rule("['socket']", "'allow'", "['arg0 < 3']").substr(10)),
              "t.toml:3:1: seccomp: socket: this rule overlaps the socket gate's arg0 == AF_UNIX "
              "(docs/seccomp.md): give AF_UNIX a rule of its own (args = [\"arg0 == AF_UNIX\"]), "
              "or keep it recorded");
}

TEST(SeccompParseError, NestedSandboxesDropOnlyMarkedRules) {
    // A rule left out is still checked: a typo must not hide behind nested_sandboxes.
    EXPECT_EQ(err("[seccomp]\nnested_sandboxes = true\n[[seccomp.rule]]\nsyscalls = ['mountt']\n"
                  "action = 'errno:EPERM'\nunless = 'nested_sandboxes'\n"),
              "t.toml:4:13: seccomp.rule[0].syscalls[0]: unknown system call 'mountt'; did you "
              "mean 'mount'?");
}

TEST(SeccompGroups, EveryGroupExpandsToNativeCalls) {
    std::set<std::string> names;
    for (const auto& g : detail::groups()) {
        EXPECT_TRUE(names.insert(std::string(g.name)).second) << g.name;
        EXPECT_FALSE(g.what.empty()) << g.name;
        auto p = ok(rule("['" + std::string(g.name) + "']", "'errno:ENOSYS'"));
        ASSERT_TRUE(p) << g.name;
        size_t native = 0;
        for (auto m : g.members) {
            int nr = detail::native_nr(m);
            // Every member is a name libseccomp knows, on some architecture.
            EXPECT_NE(nr, __NR_SCMP_ERROR) << g.name << ": " << m;
            if (nr < 0) continue;
            ++native;
            Decision d = decide(*p, nr);
            EXPECT_EQ(d.action.kind, ActionKind::errno_ret) << g.name << ": " << m;
            EXPECT_EQ(d.action.err, ENOSYS) << g.name << ": " << m;
        }
        EXPECT_GT(native, 0u) << g.name;
    }
    // The ones the baseline relies on.
    for (const char* g : {"@mount", "@debug", "@module", "@reboot", "@swap", "@raw-io", "@obsolete",
                          "@keyring", "@io-uring", "@bpf", "@clock", "@privileged", "@namespaces",
                          "@cpu-emulation", "@numa", "@userfaultfd", "@fanotify"})
        EXPECT_NE(detail::find_group(g), nullptr) << g;
    auto mount = ok(rule("['@mount']", "'errno:EPERM'"));
    ASSERT_TRUE(mount);
    for (int nr : {SYS_mount, SYS_umount2, SYS_pivot_root, SYS_move_mount, SYS_open_tree,
                   SYS_fsopen, SYS_fsconfig, SYS_fsmount, SYS_fspick, SYS_mount_setattr})
        EXPECT_EQ(decide(*mount, nr).action.err, EPERM) << nr;
    EXPECT_EQ(decide(*mount, SYS_read).rule, -1);
    EXPECT_NE(mount->to_text().find("(not on x86_64: umount)"), std::string::npos);
}

TEST(SeccompConstants, SyscallsNewerThanLibseccomp) {
    EXPECT_EQ(detail::native_nr("openat"), SYS_openat);
    EXPECT_EQ(detail::native_nr("open_tree_attr"), 467);
    EXPECT_EQ(detail::native_nr("mseal"), 462);
    EXPECT_EQ(detail::native_nr("statmount"), 457);
    EXPECT_EQ(detail::native_nr("uretprobe"), __NR_SCMP_ERROR);  // not filterable: not offered
    EXPECT_LT(detail::native_nr("stime"), 0);
    EXPECT_EQ(detail::native_name(467), "open_tree_attr");
    EXPECT_EQ(detail::native_name(SYS_openat), "openat");
    EXPECT_EQ(detail::native_name(999), "");
    EXPECT_EQ(syscall_name(AUDIT_ARCH_X86_64, 467), "open_tree_attr");
    auto p = ok(rule("['open_tree_attr', 'mseal']", "'errno:ENOSYS'"));
    ASSERT_TRUE(p);
    EXPECT_EQ(decide(*p, 467).action.err, ENOSYS);
    EXPECT_EQ(decide(*p, 462).action.err, ENOSYS);
    EXPECT_EQ(err(rule("['open_tree_atr']", "'kill'")),
              "t.toml:3:13: seccomp.rule[0].syscalls[0]: unknown system call 'open_tree_atr'; did "
              "you mean 'open_tree_attr'?");
}

TEST(SeccompConstants, Tables) {
    EXPECT_EQ(detail::constant("TIOCSTI"), 0x5412u);
    EXPECT_EQ(detail::constant("TIOCLINUX"), 0x541Cu);
    EXPECT_EQ(detail::constant("CLONE_NEWUSER"), 0x10000000u);
    EXPECT_EQ(detail::constant("CLONE_NEWTIME"), 0x80u);
    EXPECT_EQ(detail::constant("CLONE_INTO_CGROUP"), 0x200000000u);
    EXPECT_EQ(detail::constant("AF_VSOCK"), 40u);
    EXPECT_EQ(detail::constant("AF_ALG"), 38u);
    EXPECT_EQ(detail::constant("AF_NETLINK"), 16u);
    EXPECT_EQ(detail::constant("NETLINK_AUDIT"), 9u);
    EXPECT_EQ(detail::constant("SOCK_RAW"), 3u);
    EXPECT_EQ(detail::constant("PER_LINUX32"), 0x8u);
    EXPECT_EQ(detail::constant("UNAME26"), 0x20000u);
    EXPECT_EQ(detail::constant("READ_IMPLIES_EXEC"), 0x400000u);
    EXPECT_EQ(detail::constant("PR_SET_NO_NEW_PRIVS"), 38u);
    EXPECT_EQ(detail::constant("tiocsti"), std::nullopt);  // case matters, as in C
    EXPECT_EQ(detail::constant("NOPE"), std::nullopt);
    EXPECT_EQ(detail::errno_value("EPERM"), EPERM);
    EXPECT_EQ(detail::errno_value("ENOSYS"), ENOSYS);
    EXPECT_EQ(detail::errno_value("EAFNOSUPPORT"), EAFNOSUPPORT);
    EXPECT_EQ(detail::errno_value("EHWPOISON"), EHWPOISON);
    EXPECT_EQ(detail::errno_value("EFOO"), std::nullopt);
    EXPECT_EQ(detail::errno_text(EPERM), "EPERM");
    EXPECT_EQ(detail::parse_action("errno:ENOSYS")->err, ENOSYS);
    EXPECT_EQ(detail::action_text(*detail::parse_action("errno:EACCES")), "errno:EACCES");
    EXPECT_EQ(bpf_action({ActionKind::allow, 0}), 0x7fff0000u);
    EXPECT_EQ(bpf_action({ActionKind::kill, 0}), 0x80000000u);
    EXPECT_EQ(bpf_action({ActionKind::errno_ret, EPERM}), 0x7fc00000u);
    EXPECT_EQ(bpf_action({ActionKind::log, 0}), 0x7fc00000u);
}

// The first ```toml block of a document in docs/.
std::string doc_example(const std::string& name) {
    std::string doc = ajtest::read_file(std::string(AJ_SOURCE_DIR) + "/docs/" + name);
    auto start = doc.find("```toml\n");
    EXPECT_NE(start, std::string::npos) << name;
    if (start == std::string::npos) return "";
    start += 8;
    return doc.substr(start, doc.find("```", start) - start);
}

TEST(SeccompDocs, TheExamplesCompile) {
    for (const char* name : {"seccomp.md", "policy-format.md"}) {
        auto p = policy::load_text(doc_example(name), name);
        ASSERT_TRUE(p.has_value()) << name << ": " << p.error().message();
        auto c = compile(p->seccomp);
        ASSERT_TRUE(c.has_value()) << name << ": " << c.error().message();
        ASSERT_TRUE(*c) << name;
        EXPECT_EQ(decide(**c, SYS_mount, {0x10000000}).action.err, EPERM) << name;
    }
}

TEST(SeccompCheck, CheckReportsSeccompErrorsWithTheirPosition) {
    ajtest::TempDir dir("aj-seccomp-check");
    std::string bad = dir.write("bad.toml", "extends = 'default'\n[[seccomp.rule]]\n"
                                            "syscalls = ['ptrace']\naction = 'errno:EPRM'\n");
    std::string good = dir.write("good.toml", "extends = 'strict'\n[[seccomp.rule]]\n"
                                              "syscalls = ['ptrace']\naction = 'allow'\n");
    auto r = ajtest::agentjail({"check", bad, good});
    EXPECT_EQ(r.status, 125) << r.err;
    EXPECT_EQ(r.err, bad + ":4:10: seccomp.rule[0].action: unknown errno name 'EPRM' (expected "
                           "e.g. errno:EPERM)\n");
    EXPECT_EQ(r.out, good + ": ok\n");
}

TEST(SeccompExplain, ExplainShowsTheRules) {
    ajtest::TempDir dir("aj-seccomp-explain");
    auto r = ajtest::agentjail({"explain", "-C", dir.path(), "--", "true"});
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("system calls (seccomp):"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("default.toml:"), std::string::npos);
    EXPECT_NE(r.out.find("@debug -> errno:EPERM"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("always     execve sendmsg close write exit exit_group"), std::string::npos);
    auto j = ajtest::agentjail({"explain", "--json", "-C", dir.path(), "--", "true"});
    ASSERT_EQ(j.status, 0) << j.err;
    EXPECT_NE(j.out.find("\"seccomp\": {"), std::string::npos);
    EXPECT_NE(j.out.find("\"bpf_instructions\""), std::string::npos);
    auto m = ajtest::agentjail({"explain", "-p", "minimal", "--", "true"});
    ASSERT_EQ(m.status, 0) << m.err;
    EXPECT_NE(m.out.find("system calls (seccomp): no filter"), std::string::npos) << m.out;
}

}  // namespace
}  // namespace agentjail::seccomp
