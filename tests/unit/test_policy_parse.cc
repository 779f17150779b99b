// SPDX-License-Identifier: Apache-2.0
// Unit tests of the policy parser: every schema field, and every error form with
// its exact file:line:column and key path.
#include "policy/policy.hpp"

#include <gtest/gtest.h>

#include <string>

namespace agentjail::policy {
namespace {

// Parses a single layer (no extends) as if read from "t.toml".
Policy parse_ok(const std::string& text) {
    auto r = load_text(text, "t.toml");
    EXPECT_TRUE(r.has_value()) << (r ? std::string() : r.error().message());
    return r ? std::move(r).value() : Policy{};
}

// The error message of a text that must not parse.
std::string parse_err(const std::string& text, const std::string& file = "t.toml") {
    auto r = load_text(text, file);
    if (r) return "(no error)";
    EXPECT_EQ(r.error().kind(), ErrorKind::invalid_input);
    return r.error().message();
}

TEST(PolicyParse, EmptyFileGivesTheBuiltInDefaults) {
    Policy p = parse_ok("");
    EXPECT_EQ(p.name, "t.toml");
    EXPECT_EQ(p.layers, std::vector<std::string>{"t.toml"});
    EXPECT_TRUE(p.ro.empty());
    EXPECT_EQ(p.workspace.value, WorkspaceAccess::rw);
    EXPECT_TRUE(p.private_home.value);
    EXPECT_TRUE(p.proc.value);
    EXPECT_TRUE(p.dev.value);
    EXPECT_EQ(p.hostname.value, "agentjail");
    EXPECT_EQ(p.hostname.origin.describe(), "built-in default (process.hostname)");
    EXPECT_TRUE(p.die_with_parent.value);
    EXPECT_TRUE(p.ns_net.value && p.ns_ipc.value && p.ns_uts.value && p.ns_cgroup.value);
}

TEST(PolicyParse, EveryFieldIsRead) {
    Policy p = parse_ok(R"(description = "all fields"
[filesystem]
ro = ["/usr", { path = "/opt", optional = true }, { src = "~/datasets", dst = "/data" }]
rw = ["~/.cache/pip", { src = "{tmp}/x" }]
tmpfs = ["/tmp", { path = "/var/tmp", size = "256M" }, { path = "/run", size = 4096 }]
hide = ["~/.ssh", "{workspace}/.env*"]
workspace = "ro"
home = "none"
proc = false
dev = "none"
[environment]
allow = ["PATH", "LC_*", "X?"]
deny = ["*_KEY"]
set = { EDITOR = "vi", EMPTY = "" }
[process]
hostname = "box-1.example"
cwd = "{workspace}/src"
die_with_parent = false
[namespaces]
net = false
ipc = false
uts = false
cgroup = false
)");
    EXPECT_EQ(p.description, "all fields");
    ASSERT_EQ(p.ro.size(), 3u);
    EXPECT_EQ(p.ro[0].src, "/usr");
    EXPECT_EQ(p.ro[0].dst, "");
    EXPECT_FALSE(p.ro[0].optional);
    EXPECT_EQ(p.ro[0].origin.describe(), "t.toml:3:7 (filesystem.ro[0])");
    EXPECT_EQ(p.ro[1].src, "/opt");
    EXPECT_TRUE(p.ro[1].optional);
    EXPECT_EQ(p.ro[1].origin.describe(), "t.toml:3:15 (filesystem.ro[1])");
    EXPECT_EQ(p.ro[2].src, "~/datasets");
    EXPECT_EQ(p.ro[2].dst, "/data");
    ASSERT_EQ(p.rw.size(), 2u);
    EXPECT_EQ(p.rw[0].src, "~/.cache/pip");
    EXPECT_EQ(p.rw[1].src, "{tmp}/x");
    EXPECT_EQ(p.rw[1].dst, "");
    ASSERT_EQ(p.tmpfs.size(), 3u);
    EXPECT_EQ(p.tmpfs[0].path, "/tmp");
    EXPECT_EQ(p.tmpfs[0].size_bytes, 0u);
    EXPECT_EQ(p.tmpfs[1].path, "/var/tmp");
    EXPECT_EQ(p.tmpfs[1].size_bytes, 256u << 20);
    EXPECT_EQ(p.tmpfs[2].size_bytes, 4096u);
    ASSERT_EQ(p.hide.size(), 2u);
    EXPECT_EQ(p.hide[1].pattern, "{workspace}/.env*");
    EXPECT_EQ(p.hide[1].origin.key, "filesystem.hide[1]");
    EXPECT_EQ(p.workspace.value, WorkspaceAccess::ro);
    EXPECT_EQ(p.workspace.origin.describe(), "t.toml:7:13 (filesystem.workspace)");
    EXPECT_FALSE(p.private_home.value);
    EXPECT_FALSE(p.proc.value);
    EXPECT_FALSE(p.dev.value);
    ASSERT_EQ(p.env_allow.size(), 3u);
    EXPECT_EQ(p.env_allow[1].value, "LC_*");
    EXPECT_EQ(p.env_allow[1].origin.describe(), "t.toml:12:18 (environment.allow[1])");
    ASSERT_EQ(p.env_deny.size(), 1u);
    EXPECT_EQ(p.env_deny[0].value, "*_KEY");
    ASSERT_EQ(p.env_set.size(), 2u);
    // Document order, not toml++'s key order.
    EXPECT_EQ(p.env_set[0].name, "EDITOR");
    EXPECT_EQ(p.env_set[0].value, "vi");
    EXPECT_EQ(p.env_set[0].origin.key, "environment.set.EDITOR");
    EXPECT_EQ(p.env_set[1].name, "EMPTY");
    EXPECT_EQ(p.env_set[1].value, "");
    EXPECT_EQ(p.hostname.value, "box-1.example");
    EXPECT_EQ(p.hostname.origin.describe(), "t.toml:16:12 (process.hostname)");
    EXPECT_EQ(p.cwd.value, "{workspace}/src");
    EXPECT_FALSE(p.die_with_parent.value);
    EXPECT_FALSE(p.ns_net.value);
    EXPECT_FALSE(p.ns_ipc.value);
    EXPECT_FALSE(p.ns_uts.value);
    EXPECT_FALSE(p.ns_cgroup.value);
    EXPECT_EQ(p.ns_cgroup.origin.describe(), "t.toml:23:10 (namespaces.cgroup)");
}

TEST(PolicyParse, TmpfsSizesUseTheLimitsGrammar) {
    Policy p = parse_ok("[filesystem]\ntmpfs = [{ path = '/x', size = '1.5G' }, { path = '/y', size = '2MiB' }]\n");
    ASSERT_EQ(p.tmpfs.size(), 2u);
    EXPECT_EQ(p.tmpfs[0].size_bytes, 3ull << 29);
    EXPECT_EQ(p.tmpfs[1].size_bytes, 2ull << 20);
    EXPECT_NE(parse_err("[filesystem]\ntmpfs = [{ path = '/x', size = '1.5X' }]\n").find("t.toml:2:"),
              std::string::npos);
}

// [filesystem] sockets: paths with their origins; no wildcards, absolute.
TEST(PolicyParse, SocketsAreNamedByPath) {
    Policy p = parse_ok("[filesystem]\nsockets = ['/run/postgresql/.s.PGSQL.5432', '{workspace}/dev.sock']\n");
    ASSERT_EQ(p.sockets.size(), 2u);
    EXPECT_EQ(p.sockets[0].path, "/run/postgresql/.s.PGSQL.5432");
    EXPECT_EQ(p.sockets[1].origin.describe(), "t.toml:2:45 (filesystem.sockets[1])");
    EXPECT_EQ(parse_err("[filesystem]\nsockets = ['/run/*.sock']\n"),
              "t.toml:2:12: filesystem.sockets[0]: a socket is named by its path, without wildcards");
    EXPECT_NE(parse_err("[filesystem]\nsockets = ['run/x.sock']\n").find("t.toml:2:12: filesystem.sockets[0]:"),
              std::string::npos);
    EXPECT_NE(parse_err("[filesystem]\nsockets = '/x'\n").find("filesystem.sockets"), std::string::npos);
}

TEST(PolicyParse, EnumValues) {
    EXPECT_EQ(parse_ok("filesystem.workspace = 'rw'").workspace.value, WorkspaceAccess::rw);
    EXPECT_EQ(parse_ok("filesystem.workspace = 'none'").workspace.value, WorkspaceAccess::none);
    EXPECT_TRUE(parse_ok("filesystem.home = 'tmpfs'").private_home.value);
    EXPECT_TRUE(parse_ok("filesystem.dev = 'minimal'").dev.value);
}

TEST(PolicyParse, DottedKeysAndSubTablesAreTheSameSchema) {
    Policy p = parse_ok("[environment.set]\nFOO = \"bar\"\n");
    ASSERT_EQ(p.env_set.size(), 1u);
    EXPECT_EQ(p.env_set[0].origin.describe(), "t.toml:2:7 (environment.set.FOO)");
}

TEST(PolicyParse, ExtendsMayBeAStringOrAnArray) {
    EXPECT_EQ(parse_ok("extends = 'minimal'").layers,
              (std::vector<std::string>{"minimal", "t.toml"}));
    EXPECT_EQ(parse_ok("extends = ['minimal', 'default']").layers,
              (std::vector<std::string>{"minimal", "default", "t.toml"}));
    EXPECT_EQ(parse_ok("extends = []").layers, std::vector<std::string>{"t.toml"});
}

TEST(PolicyParse, ReservedSectionsMayBeEmpty) {
    Policy p = parse_ok("[seccomp]\n[limits]\n[network]\n[workspace]\n");
    EXPECT_EQ(p.layers.size(), 1u);
}

// ---- errors ----

TEST(PolicyParseError, TomlSyntaxErrorCarriesFileLineColumn) {
    std::string m = parse_err("[filesystem]\nro = [\"/usr\"\n", "my.toml");
    EXPECT_EQ(m.rfind("my.toml:2:14: ", 0), 0u) << m;
    m = parse_err("a = = 1\n", "my.toml");
    EXPECT_EQ(m.rfind("my.toml:1:5: ", 0), 0u) << m;
    m = parse_err("[filesystem]\nproc = true\nproc = false\n");
    EXPECT_EQ(m.rfind("t.toml:3:8: ", 0), 0u) << m;
}

TEST(PolicyParseError, UnknownKeysSuggestTheClosest) {
    EXPECT_EQ(parse_err("[filesystem]\nhid = []\n"),
              "t.toml:2:1: filesystem.hid: unknown key; did you mean 'hide'?");
    EXPECT_EQ(parse_err("descripton = 'x'\n"),
              "t.toml:1:1: descripton: unknown key; did you mean 'description'?");
    EXPECT_EQ(parse_err("[seccom]\n"), "t.toml:1:2: seccom: unknown key; did you mean 'seccomp'?");
    EXPECT_EQ(parse_err("[process]\n  hostnam = 'x'\n"),
              "t.toml:2:3: process.hostnam: unknown key; did you mean 'hostname'?");
    EXPECT_EQ(parse_err("[environment]\nalow = []\n"),
              "t.toml:2:1: environment.alow: unknown key; did you mean 'allow'?");
    EXPECT_EQ(parse_err("[namespaces]\nnett = true\n"),
              "t.toml:2:1: namespaces.nett: unknown key; did you mean 'net'?");
}

TEST(PolicyParseError, UnknownKeysWithoutACloseOneListTheKnownKeys) {
    EXPECT_EQ(parse_err("[namespaces]\nnetwork_stuff = true\n"),
              "t.toml:2:1: namespaces.network_stuff: unknown key (expected one of: net, ipc, "
              "uts, cgroup)");
    EXPECT_EQ(parse_err("[filesystem]\nro = [{ path = '/x', mode = 1 }]\n"),
              "t.toml:2:22: filesystem.ro[0].mode: unknown key (expected one of: path, src, "
              "dst, optional)");
    EXPECT_EQ(parse_err("[filesystem]\ntmpfs = [{ path = '/x', siz = '1M' }]\n"),
              "t.toml:2:25: filesystem.tmpfs[0].siz: unknown key; did you mean 'size'?");
}

TEST(PolicyParseError, SectionKeysAtTheTopLevelNameTheirSection) {
    EXPECT_EQ(parse_err("ro = ['/x']\n"), "t.toml:1:1: ro: unknown key; did you mean 'filesystem.ro'?");
    EXPECT_EQ(parse_err("hostname = 'x'\n"),
              "t.toml:1:1: hostname: unknown key; did you mean 'process.hostname'?");
    EXPECT_EQ(parse_err("workspace = 'rw'\n"),
              "t.toml:1:13: workspace: expected a table, got a string (the workspace's access is "
              "set with filesystem.workspace, its mode with [workspace] mode)");
}

TEST(PolicyParseError, UserMountAndPidNamespacesCannotBeTurnedOff) {
    EXPECT_EQ(parse_err("[namespaces]\nuser = false\n"),
              "t.toml:2:1: namespaces.user: the user namespace is always new and cannot be "
              "configured");
}

TEST(PolicyParseError, TheFirstErrorInDocumentOrderIsReported) {
    // toml++ keeps keys sorted by name: "home" sorts first, but "workspace" comes first here.
    EXPECT_EQ(parse_err("[filesystem]\nworkspace = 1\nhome = 2\n"),
              "t.toml:2:13: filesystem.workspace: expected \"rw\", \"ro\" or \"none\", got an "
              "integer");
}

TEST(PolicyParseError, WrongTypes) {
    EXPECT_EQ(parse_err("[filesystem]\nro = [\"/usr\", 5]\n"),
              "t.toml:2:15: filesystem.ro[1]: expected a path string or a table, got an integer");
    EXPECT_EQ(parse_err("[filesystem]\nro = \"/usr\"\n"),
              "t.toml:2:6: filesystem.ro: expected an array, got a string");
    EXPECT_EQ(parse_err("filesystem = 3\n"),
              "t.toml:1:14: filesystem: expected a table, got an integer");
    EXPECT_EQ(parse_err("description = 3.5\n"),
              "t.toml:1:15: description: expected a string, got a floating-point number");
    EXPECT_EQ(parse_err("[filesystem]\nproc = 'yes'\n"),
              "t.toml:2:8: filesystem.proc: expected true or false, got a string");
    EXPECT_EQ(parse_err("[filesystem]\nhide = [true]\n"),
              "t.toml:2:9: filesystem.hide[0]: expected a string, got a boolean");
    EXPECT_EQ(parse_err("[filesystem]\ntmpfs = [[]]\n"),
              "t.toml:2:10: filesystem.tmpfs[0]: expected a path string or a table, got an array");
    EXPECT_EQ(parse_err("[filesystem]\ntmpfs = [{ path = '/x', size = 1.5 }]\n"),
              "t.toml:2:32: filesystem.tmpfs[0].size: expected a size such as \"256M\" or a "
              "number of bytes, got a floating-point number");
    EXPECT_EQ(parse_err("[filesystem]\nro = [{ path = '/x', optional = 'yes' }]\n"),
              "t.toml:2:33: filesystem.ro[0].optional: expected true or false, got a string");
    EXPECT_EQ(parse_err("[environment]\nset = { A = 1 }\n"),
              "t.toml:2:13: environment.set.A: expected a string, got an integer");
    EXPECT_EQ(parse_err("[environment]\nset = ['A']\n"),
              "t.toml:2:7: environment.set: expected a table, got an array");
    EXPECT_EQ(parse_err("[environment]\nallow = 'PATH'\n"),
              "t.toml:2:9: environment.allow: expected an array, got a string");
    EXPECT_EQ(parse_err("[process]\ndie_with_parent = 1\n"),
              "t.toml:2:19: process.die_with_parent: expected true or false, got an integer");
    EXPECT_EQ(parse_err("[namespaces]\nnet = 'off'\n"),
              "t.toml:2:7: namespaces.net: expected true or false, got a string");
    EXPECT_EQ(parse_err("[process]\ncwd = 1979-05-27\n"),
              "t.toml:2:7: process.cwd: expected a string, got a date");
    EXPECT_EQ(parse_err("extends = 1\n"),
              "t.toml:1:11: extends: expected a policy name, a path or an array of them, got an "
              "integer");
    EXPECT_EQ(parse_err("extends = ['minimal', 2]\n"),
              "t.toml:1:23: extends[1]: expected a policy name or a path string, got an integer");
}

TEST(PolicyParseError, BadEnumValues) {
    EXPECT_EQ(parse_err("[filesystem]\nworkspace = \"rx\"\n"),
              "t.toml:2:13: filesystem.workspace: expected \"rw\", \"ro\" or \"none\", got \"rx\"");
    EXPECT_EQ(parse_err("[filesystem]\nhome = \"ro\"\n"),
              "t.toml:2:8: filesystem.home: expected \"tmpfs\" or \"none\", got \"ro\"");
    EXPECT_EQ(parse_err("[filesystem]\ndev = \"full\"\n"),
              "t.toml:2:7: filesystem.dev: expected \"minimal\" or \"none\", got \"full\"");
}

TEST(PolicyParseError, BadSizes) {
    EXPECT_EQ(parse_err("[filesystem]\ntmpfs = [{ path = '/x', size = '12Q' }]\n"),
              "t.toml:2:32: filesystem.tmpfs[0].size: bad size '12Q': expected a number of "
              "bytes, optionally with a suffix k, M, G or T (powers of 1024), e.g. 512M or 1.5G");
    EXPECT_EQ(parse_err("[filesystem]\ntmpfs = [{ path = '/x', size = '0' }]\n"),
              "t.toml:2:32: filesystem.tmpfs[0].size: expected a size greater than 0");
    EXPECT_EQ(parse_err("[filesystem]\ntmpfs = [{ path = '/x', size = -1 }]\n"),
              "t.toml:2:32: filesystem.tmpfs[0].size: expected a size greater than 0");
    EXPECT_EQ(parse_err("[filesystem]\ntmpfs = [{ size = '1M' }]\n"),
              "t.toml:2:10: filesystem.tmpfs[0]: expected a table with 'path'");
}

TEST(PolicyParseError, BadHostnames) {
    EXPECT_EQ(parse_err("[process]\nhostname = \"-bad\"\n"),
              "t.toml:2:12: process.hostname: '-bad' is not a valid hostname (RFC 1123: "
              "dot-separated labels of letters, digits and '-', 1 to 63 characters each, not "
              "starting or ending with '-')");
    EXPECT_NE(parse_err("[process]\nhostname = 'a..b'\n").find("'a..b' is not a valid hostname"),
              std::string::npos);
    EXPECT_NE(parse_err("[process]\nhostname = 'under_score'\n").find("not a valid hostname"),
              std::string::npos);
    EXPECT_NE(parse_err("[process]\nhostname = 'x-'\n").find("not a valid hostname"),
              std::string::npos);
    std::string label64(64, 'a');
    EXPECT_NE(parse_err("[process]\nhostname = '" + label64 + "'\n").find("not a valid hostname"),
              std::string::npos);
    std::string long_name = std::string(40, 'a') + "." + std::string(24, 'b');  // 65 chars
    EXPECT_EQ(parse_err("[process]\nhostname = '" + long_name + "'\n"),
              "t.toml:2:12: process.hostname: hostname '" + long_name +
                  "' is longer than 64 characters");
    // 64 characters exactly, labels under 63: accepted.
    std::string max_name = std::string(40, 'a') + "." + std::string(23, 'b');
    EXPECT_EQ(parse_ok("[process]\nhostname = '" + max_name + "'\n").hostname.value, max_name);
    EXPECT_EQ(parse_ok("[process]\nhostname = '0day'\n").hostname.value, "0day");
}

TEST(PolicyParseError, BadEnvNames) {
    EXPECT_EQ(parse_err("[environment]\nset = { 1X = 'v' }\n"),
              "t.toml:2:9: environment.set.1X: '1X' is not a valid environment variable name "
              "(letters, digits and _, not starting with a digit)");
    EXPECT_EQ(parse_err("[environment]\nset = { \"A-B\" = 'v' }\n"),
              "t.toml:2:9: environment.set.A-B: 'A-B' is not a valid environment variable name "
              "(letters, digits and _, not starting with a digit)");
    EXPECT_EQ(parse_err("[environment]\nset = { \"A*\" = 'v' }\n").find("t.toml:2:9: "), 0u);
    EXPECT_EQ(parse_err("[environment]\nallow = ['PATH', 'A=B']\n"),
              "t.toml:2:18: environment.allow[1]: 'A=B' is not a valid environment variable "
              "name or pattern (letters, digits, _ and the globs * and ?, not starting with a "
              "digit)");
    EXPECT_EQ(parse_err("[environment]\ndeny = ['9*']\n").find("t.toml:2:9: environment.deny[0]: "
                                                              "'9*' is not a valid"),
              0u);
    EXPECT_EQ(parse_err("[environment]\nset = { A = \"x\\u0000y\" }\n"),
              "t.toml:2:13: environment.set.A: a value may not contain a NUL character");
}

TEST(PolicyParseError, RelativePaths) {
    const std::string expect_tail =
        "expected an absolute path or one starting with ~, {workspace}, {tmp} or {state}, got ";
    EXPECT_EQ(parse_err("[filesystem]\nro = ['/usr', 'usr/lib']\n"),
              "t.toml:2:15: filesystem.ro[1]: " + expect_tail + "'usr/lib'");
    EXPECT_EQ(parse_err("[filesystem]\nrw = [{ src = '/a', dst = 'b' }]\n"),
              "t.toml:2:27: filesystem.rw[0].dst: " + expect_tail + "'b'");
    EXPECT_EQ(parse_err("[filesystem]\nhide = ['.ssh']\n"),
              "t.toml:2:9: filesystem.hide[0]: " + expect_tail + "'.ssh'");
    EXPECT_EQ(parse_err("[filesystem]\ntmpfs = ['./tmp']\n"),
              "t.toml:2:10: filesystem.tmpfs[0]: " + expect_tail + "'./tmp'");
    EXPECT_EQ(parse_err("[process]\ncwd = 'src'\n"),
              "t.toml:2:7: process.cwd: " + expect_tail + "'src'");
    // Roots must be whole path components: "~user" and "{workspace}x" are typos.
    EXPECT_EQ(parse_err("[filesystem]\nhide = ['~root/.ssh']\n"),
              "t.toml:2:9: filesystem.hide[0]: " + expect_tail + "'~root/.ssh'");
    EXPECT_EQ(parse_err("[filesystem]\nhide = ['{workspace}.env']\n"),
              "t.toml:2:9: filesystem.hide[0]: " + expect_tail + "'{workspace}.env'");
    EXPECT_EQ(parse_err("[filesystem]\nhide = ['{WORKSPACE}/.env']\n"),
              "t.toml:2:9: filesystem.hide[0]: " + expect_tail + "'{WORKSPACE}/.env'");
    // Each root alone is a path.
    Policy p = parse_ok("[filesystem]\nro = ['~', '{workspace}', '{tmp}', '/']\n");
    EXPECT_EQ(p.ro.size(), 4u);
}

TEST(PolicyParseError, EmptyStrings) {
    EXPECT_EQ(parse_err("[filesystem]\nro = ['']\n"),
              "t.toml:2:7: filesystem.ro[0]: expected a non-empty string");
    EXPECT_EQ(parse_err("description = ''\n"), "t.toml:1:15: description: expected a non-empty string");
    EXPECT_EQ(parse_err("[process]\nhostname = ''\n"),
              "t.toml:2:12: process.hostname: expected a non-empty string");
    EXPECT_EQ(parse_err("[environment]\nallow = ['']\n"),
              "t.toml:2:10: environment.allow[0]: expected a non-empty string");
    EXPECT_EQ(parse_err("extends = ''\n"), "t.toml:1:11: extends: expected a non-empty string");
    EXPECT_EQ(parse_err("[filesystem]\nro = [{ path = '' }]\n"),
              "t.toml:2:16: filesystem.ro[0].path: expected a non-empty string");
}

TEST(PolicyParseError, MountTablesNeedPathOrSrc) {
    EXPECT_EQ(parse_err("[filesystem]\nro = [{ optional = true }]\n"),
              "t.toml:2:7: filesystem.ro[0]: expected a table with 'path' or 'src' (and 'dst')");
    EXPECT_EQ(parse_err("[filesystem]\nro = [{ path = '/a', src = '/b' }]\n"),
              "t.toml:2:22: filesystem.ro[0].src: give either 'path' or 'src', not both");
    EXPECT_EQ(parse_err("[filesystem]\nrw = [{ path = '/a', dst = '/b' }]\n"),
              "t.toml:2:22: filesystem.rw[0].dst: 'dst' goes with 'src' (use 'src' and 'dst' "
              "to bind elsewhere inside)");
    EXPECT_EQ(parse_err("[filesystem]\nrw = [{ dst = '/b' }]\n"),
              "t.toml:2:7: filesystem.rw[0]: expected a table with 'path' or 'src' (and 'dst')");
}

TEST(PolicyParseError, SectionsMustBeTables) {
    // [limits] (issue 4), [network] (issue 5) and [workspace] (issue 10) are no
    // longer reserved: their own tests are in test_limits_parse.cc, test_net_policy.cc
    // and below.
    EXPECT_EQ(parse_err("seccomp = 'strict'\n"),
              "t.toml:1:11: seccomp: expected a table, got a string");
    EXPECT_EQ(parse_err("workspace = 'clone'\n"),
              "t.toml:1:13: workspace: expected a table, got a string (the workspace's access is "
              "set with filesystem.workspace, its mode with [workspace] mode)");
}

// [workspace]: the mode, protect and unprotect, with origins; errors with
// file:line:col.
TEST(PolicyParse, WorkspaceSection) {
    Policy d = parse_ok("");
    EXPECT_EQ(d.workspace_mode.value, WorkspaceMode::direct);
    Policy p = parse_ok("[workspace]\nmode = 'clone'\nprotect = ['.idea', '{workspace}/**/x']\n");
    EXPECT_EQ(p.workspace_mode.value, WorkspaceMode::clone);
    EXPECT_EQ(p.workspace_mode.origin.describe(), "t.toml:2:8 (workspace.mode)");
    ASSERT_EQ(p.protect.size(), 2u);
    EXPECT_EQ(p.protect[1].pattern, "{workspace}/**/x");
    EXPECT_EQ(parse_ok("[workspace]\nmode = 'overlay'\n").workspace_mode.value, WorkspaceMode::overlay);
    EXPECT_TRUE(p.protect[0].placeholder);
    Policy t = parse_ok("[workspace]\nprotect = [{ path = 'x.yml', placeholder = false }, { path = 'y' }]\n");
    ASSERT_EQ(t.protect.size(), 2u);
    EXPECT_EQ(t.protect[0].pattern, "x.yml");
    EXPECT_FALSE(t.protect[0].placeholder);
    EXPECT_TRUE(t.protect[1].placeholder);
    EXPECT_EQ(t.protect[0].origin.describe(), "t.toml:2:12 (workspace.protect[0])");
}

TEST(PolicyParseError, WorkspaceSection) {
    EXPECT_EQ(parse_err("[workspace]\nmode = 'copy'\n"),
              "t.toml:2:8: workspace.mode: expected \"direct\", \"clone\" or \"overlay\", got "
              "\"copy\"");
    EXPECT_EQ(parse_err("[workspace]\nprotect = ['/etc/passwd']\n"),
              "t.toml:2:12: workspace.protect[0]: expected a path relative to the workspace "
              "(\".git/hooks\", \"**/.envrc\") or starting with {workspace}/, got '/etc/passwd'");
    EXPECT_EQ(parse_err("[workspace]\nprotect = ['a/../../b']\n"),
              "t.toml:2:12: workspace.protect[0]: 'a/../../b' leaves the workspace (..)");
    EXPECT_EQ(parse_err("[workspace]\nprotect = ['{workspace}']\n"),
              "t.toml:2:12: workspace.protect[0]: '{workspace}' names the workspace itself; "
              "protect a path inside it");
    EXPECT_EQ(parse_err("[workspace]\nunprotect = ['.idea']\n"),
              "t.toml:2:14: workspace.unprotect[0]: '.idea' is not protected by any policy this "
              "one extends (explain lists the protected paths)");
    EXPECT_EQ(parse_err("[workspace]\nclone = 1\n").substr(0, 30), "t.toml:2:1: workspace.clone: u");
    EXPECT_EQ(parse_err("[workspace]\nprotect = [{ placeholder = false }]\n"),
              "t.toml:2:12: workspace.protect[0]: expected a table with 'path' (and 'placeholder')");
    EXPECT_EQ(parse_err("[workspace]\nprotect = [{ path = 'x', placehold = false }]\n"),
              "t.toml:2:26: workspace.protect[0].placehold: unknown key; did you mean 'placeholder'?");
    EXPECT_EQ(parse_err("[workspace]\nprotect = [{ path = 'x', placeholder = 'no' }]\n").substr(0, 51),
              "t.toml:2:40: workspace.protect[0].placeholder: expe");
    EXPECT_EQ(parse_err("[workspace]\nprotect = [1]\n").substr(0, 34), "t.toml:2:12: workspace.protect[0]:");
    EXPECT_EQ(parse_err("[workspace]\nunprotect = [{ path = 'x' }]\n").substr(0, 36),
              "t.toml:2:14: workspace.unprotect[0]:");
    EXPECT_EQ(parse_err("[filesystem]\nworkspace = 'ro'\n[workspace]\nmode = 'clone'\n"),
              "t.toml:4:8: workspace.mode: workspace mode \"clone\" needs a read-write workspace, "
              "but t.toml:2:13 (filesystem.workspace) sets workspace = \"ro\"");
}

// [log] allow_in_sandbox: off by default, a boolean with its origin, and errors
// with file:line:col like every key.
TEST(PolicyParse, LogAllowInSandbox) {
    Policy d = parse_ok("");
    EXPECT_FALSE(d.log_in_sandbox.value);
    EXPECT_EQ(d.log_in_sandbox.origin.describe(), "built-in default (log.allow_in_sandbox)");
    Policy p = parse_ok("[log]\nallow_in_sandbox = true\n");
    EXPECT_TRUE(p.log_in_sandbox.value);
    EXPECT_EQ(p.log_in_sandbox.origin.describe(), "t.toml:2:20 (log.allow_in_sandbox)");
    std::string e = parse_err("[log]\nallow_in_sandbox = \"yes\"\n");
    EXPECT_NE(e.find("t.toml:2:20"), std::string::npos) << e;
    EXPECT_NE(e.find("log.allow_in_sandbox"), std::string::npos) << e;
    e = parse_err("[log]\nallow_in_sandboxx = true\n");
    EXPECT_NE(e.find("t.toml:2:1"), std::string::npos) << e;
    EXPECT_NE(e.find("allow_in_sandbox"), std::string::npos) << e;
}

}  // namespace
}  // namespace agentjail::policy
