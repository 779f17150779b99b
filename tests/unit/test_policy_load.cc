// SPDX-License-Identifier: Apache-2.0
// Unit tests of policy loading: the built-ins, load() by name and path, extends
// chains (merge order, cycles, missing files) and the cross-field validation.
#include "policy/embedded.hpp"
#include "policy/internal.hpp"
#include "policy/parser.hpp"
#include "policy/policy.hpp"

#include "test_support.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

namespace agentjail::policy {
namespace {

template <class T>
std::vector<std::string> values(const std::vector<Located<T>>& v) {
    std::vector<std::string> out;
    for (const auto& x : v) out.push_back(x.value);
    return out;
}

std::vector<std::string> srcs(const std::vector<MountRule>& v) {
    std::vector<std::string> out;
    for (const auto& x : v) out.push_back(x.src);
    return out;
}

std::vector<std::string> patterns(const std::vector<HideRule>& v) {
    std::vector<std::string> out;
    for (const auto& x : v) out.push_back(x.pattern);
    return out;
}

const EnvSet* find_set(const Policy& p, const std::string& name) {
    for (const auto& e : p.env_set)
        if (e.name == name) return &e;
    return nullptr;
}

Policy load_ok(const std::string& name) {
    auto r = load(name);
    EXPECT_TRUE(r.has_value()) << (r ? std::string() : r.error().message());
    return r ? std::move(r).value() : Policy{};
}

std::string load_err(const std::string& name) {
    auto r = load(name);
    if (r) return "(no error)";
    return r.error().message();
}

// ---- built-ins ----

TEST(PolicyBuiltins, ListsDefaultAndMinimalWithDescriptions) {
    const auto& all = builtins();
    std::vector<std::string> names;
    for (const auto& b : all) names.push_back(b.name);
    // The agent presets (claude, codex, gemini, aider, agent) sit beside the four
    // general policies; the network presets (net-*) are not policies.
    EXPECT_EQ(names, (std::vector<std::string>{"agent", "aider", "ci", "claude", "codex", "default", "gemini",
                                               "minimal", "strict"}));
    for (const auto& b : all) {
        EXPECT_FALSE(b.description.empty()) << b.name;
        EXPECT_NE(b.text.find("description = "), std::string::npos) << b.name;
    }
    EXPECT_NE(all[7].description.find("Bare isolation"), std::string::npos);
}

TEST(PolicyBuiltins, EveryBuiltinLoadsAndValidates) {
    for (const auto& b : builtins()) {
        auto p = load(b.name);
        ASSERT_TRUE(p.has_value()) << b.name << ": " << p.error().message();
        EXPECT_EQ(p->name, b.name);
        EXPECT_EQ(p->description, b.description);
        auto ok = validate(*p);
        EXPECT_TRUE(ok.has_value()) << b.name << ": " << ok.error().message();
    }
}

// A run parses the embedded policies without the prescan a user's file gets
// (detail::Source::embedded): every one of them must pass it.
TEST(PolicyBuiltins, EveryEmbeddedTextPassesThePrescan) {
    const auto& embedded = embedded_policies();
    ASSERT_FALSE(embedded.empty());
    for (const auto& e : embedded)
        EXPECT_FALSE(detail::non_ascii_outside_strings(e.text, std::string(e.name) + ".toml")) << e.name;
    // Control: the prescan does refuse what it is for.
    EXPECT_TRUE(detail::non_ascii_outside_strings("a = 1 # ok\n\xc3\xa9 = 2\n", "x.toml"));
}

// The description and [agent] commands are read at build time so that no run parses
// every built-in (cmake/embed_policies.cmake): they must say what the parser says,
// for every embedded file, the network presets included.
TEST(PolicyBuiltins, BuildTimeFieldsAgreeWithTheParser) {
    const auto& embedded = embedded_policies();
    ASSERT_FALSE(embedded.empty());
    int with_commands = 0;
    for (const auto& e : embedded) {
        auto layer = detail::parse_layer(e.text, std::string(e.name) + ".toml");
        ASSERT_TRUE(layer.has_value()) << e.name << ": " << layer.error().message();
        EXPECT_EQ(e.description, layer->description ? layer->description->value : "") << e.name;
        std::string commands;
        if (layer->agent_commands)
            for (const auto& c : *layer->agent_commands) commands += (commands.empty() ? "" : " ") + c.value;
        EXPECT_EQ(e.agent_commands, commands) << e.name;
        with_commands += commands.empty() ? 0 : 1;
    }
    EXPECT_GE(with_commands, 4);  // claude, codex, gemini, aider: the scan found them
    ASSERT_NE(preset_for_command("/usr/local/bin/claude"), nullptr);
    EXPECT_EQ(preset_for_command("/usr/local/bin/claude")->name, "claude");
    EXPECT_EQ(preset_for_command("ls"), nullptr);
}

TEST(PolicyBuiltins, Minimal) {
    Policy p = load_ok("minimal");
    EXPECT_EQ(p.layers, std::vector<std::string>{"minimal"});
    EXPECT_EQ(srcs(p.ro), (std::vector<std::string>{"/usr", "/bin", "/sbin", "/lib", "/lib32",
                                                    "/lib64", "/libx32", "/etc", "/opt"}));
    EXPECT_FALSE(p.ro[0].optional) << "/usr is the one system dir every host has";
    for (size_t i = 1; i < p.ro.size(); ++i) EXPECT_TRUE(p.ro[i].optional) << p.ro[i].src;
    EXPECT_EQ(p.ro[0].origin.file, "minimal.toml");
    EXPECT_EQ(p.ro[0].origin.key, "filesystem.ro[0]");
    EXPECT_GT(p.ro[0].origin.line, 0);
    EXPECT_TRUE(p.rw.empty());
    ASSERT_EQ(p.tmpfs.size(), 1u);
    EXPECT_EQ(p.tmpfs[0].path, "/tmp");
    // The host's /etc credentials are hidden even here: root can read them, and a
    // root run is no weaker than a user run.
    ASSERT_GE(p.hide.size(), 4u);
    EXPECT_EQ(p.hide[0].pattern, "/etc/shadow*");
    EXPECT_EQ(p.hide[1].pattern, "/etc/gshadow*");
    // And the host session's control sockets, for a policy that binds /tmp or /run.
    for (const auto& h : p.hide)
        EXPECT_TRUE(h.pattern.rfind("/etc/", 0) == 0 || h.pattern.rfind("/tmp/", 0) == 0 ||
                    h.pattern.rfind("/run/", 0) == 0)
            << h.pattern;
    EXPECT_TRUE(std::any_of(p.hide.begin(), p.hide.end(), [](const auto& h) { return h.pattern == "/tmp/tmux-*"; }));
    EXPECT_TRUE(std::any_of(p.hide.begin(), p.hide.end(), [](const auto& h) { return h.pattern == "/run/user/*/bus"; }));
    EXPECT_EQ(p.workspace.value, WorkspaceAccess::none);
    EXPECT_EQ(p.workspace.origin.file, "minimal.toml");
    EXPECT_FALSE(p.private_home.value);
    EXPECT_TRUE(p.proc.value);
    EXPECT_TRUE(p.dev.value);
    EXPECT_EQ(values(p.env_allow), (std::vector<std::string>{"PATH", "TERM", "LANG", "LC_*", "TZ"}));
    EXPECT_TRUE(p.env_deny.empty());
    // PATH is the caller's, filtered by the plan (lib/plan/toolchain.cc), not set.
    EXPECT_TRUE(p.env_set.empty());
    EXPECT_FALSE(p.path_tools.value);
    EXPECT_TRUE(p.ns_net.value);
}

TEST(PolicyBuiltins, DefaultExtendsMinimal) {
    Policy p = load_ok("default");
    EXPECT_EQ(p.name, "default");
    EXPECT_EQ(p.layers, (std::vector<std::string>{"minimal", "default"}));
    EXPECT_EQ(p.ro.size(), 9u) << "minimal's system dirs are inherited";
    EXPECT_EQ(p.workspace.value, WorkspaceAccess::rw);
    EXPECT_EQ(p.workspace.origin.file, "default.toml") << "the later layer's origin";
    EXPECT_EQ(p.workspace.origin.key, "filesystem.workspace");
    EXPECT_TRUE(p.private_home.value);
    EXPECT_EQ(p.private_home.origin.file, "default.toml");
    EXPECT_EQ(values(p.env_allow),
              (std::vector<std::string>{"PATH", "TERM", "LANG", "LC_*", "TZ", "HOME", "USER",
                                        "LOGNAME", "SHELL", "COLORTERM", "TERM_PROGRAM",
                                        "NO_COLOR", "EDITOR", "VISUAL", "PAGER", "LESS"}));
    EXPECT_EQ(values(p.env_deny),
              (std::vector<std::string>{
                  "*_KEY", "*_KEYS", "*KEY_ID", "*_TOKEN", "*TOKEN*", "*SECRET*", "*PASSWORD*",
                  "*PASSWD*", "*CREDENTIAL*", "*_AUTH", "*AUTH_TOKEN*", "SSH_AUTH_SOCK",
                  "SSH_AGENT_PID", "GPG_AGENT_INFO", "DBUS_SESSION_BUS_ADDRESS", "DISPLAY",
                  "WAYLAND_DISPLAY", "XAUTHORITY", "TMUX", "TMUX_PANE", "STY",
                  "VSCODE_IPC_HOOK*", "KUBECONFIG", "LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT"}));
    // minimal's /etc credentials first (the base layer), then default's own.
    const std::vector<std::string> etc = {"/etc/shadow*",
                                          "/etc/gshadow*",
                                          "/etc/security/opasswd*",
                                          "/etc/sudoers*",
                                          "/etc/ssh/ssh_host_*",
                                          "/etc/ssl/private",
                                          "/etc/letsencrypt",
                                          "/etc/krb5.keytab*",
                                          "/etc/ipsec.secrets*",
                                          "/etc/ipsec.d/private",
                                          "/etc/ppp/*-secrets",
                                          "/etc/wireguard",
                                          "/etc/NetworkManager/system-connections",
                                          "/etc/credstore*"};
    // minimal's hides in its own order: the /etc ones above, then the session's sockets.
    auto minimal = load("minimal");
    ASSERT_TRUE(minimal);
    std::vector<std::string> hides = patterns(minimal->hide);
    ASSERT_GT(hides.size(), etc.size());
    EXPECT_EQ(std::vector<std::string>(hides.begin(), hides.begin() + static_cast<std::ptrdiff_t>(etc.size())), etc);
    const size_t base = hides.size();
    for (const char* h :
         {"~/.ssh", "~/.aws", "~/.gnupg", "~/.config/gcloud", "~/.azure", "~/.kube", "~/.docker",
          "~/.netrc", "~/.git-credentials", "~/.npmrc", "~/.pypirc", "~/.cargo/credentials",
          "~/.cargo/credentials.toml", "~/.gem/credentials", "~/.config/composer/auth.json",
          "~/.composer/auth.json", "~/.config/gh",
          "~/.password-store", "~/.local/share/keyrings", "~/.config/agentjail", "~/.bash_history",
          "~/.zsh_history", "~/.python_history", "~/.claude/.credentials.json", "~/.codex/auth.json",
          "~/.gemini/oauth_creds.json", "~/.gemini/mcp-oauth-tokens.json", "{workspace}/**/.env*",
          "{workspace}/**/*.pem", "{workspace}/**/id_rsa*", "{workspace}/**/id_ed25519*",
          "{workspace}/**/.npmrc", "{workspace}/**/.pypirc", "{workspace}/**/.netrc"})
        hides.emplace_back(h);
    EXPECT_EQ(patterns(p.hide), hides);
    EXPECT_EQ(p.hide[0].origin.file, "minimal.toml");
    EXPECT_EQ(p.hide[base].origin.file, "default.toml");
    EXPECT_EQ(p.hide[base].origin.key, "filesystem.hide[0]");
    EXPECT_EQ(p.hostname.value, "agentjail");
    EXPECT_EQ(p.hostname.origin.file, "default.toml");
    EXPECT_TRUE(p.die_with_parent.value);
    EXPECT_TRUE(p.ns_net.value && p.ns_ipc.value && p.ns_uts.value && p.ns_cgroup.value);
    EXPECT_EQ(p.ns_net.origin.file, "default.toml");
    EXPECT_TRUE(p.path_tools.value);
    EXPECT_EQ(p.path_tools.origin.file, "default.toml");
    EXPECT_EQ(find_set(p, "PATH"), nullptr);
}

// HOME and XDG_CONFIG_HOME as a test sets them, put back after.
struct ConfigEnv {
    std::string home, xdg;
    bool had_home, had_xdg;
    explicit ConfigEnv(const char* new_home) {
        const char* h = std::getenv("HOME");
        const char* x = std::getenv("XDG_CONFIG_HOME");
        had_home = h != nullptr;
        had_xdg = x != nullptr;
        if (h) home = h;
        if (x) xdg = x;
        ::setenv("HOME", new_home, 1);
        ::unsetenv("XDG_CONFIG_HOME");
    }
    ~ConfigEnv() {
        if (had_home) ::setenv("HOME", home.c_str(), 1); else ::unsetenv("HOME");
        if (had_xdg) ::setenv("XDG_CONFIG_HOME", xdg.c_str(), 1);
    }
};

TEST(PolicyBuiltins, UnknownNameListsTheBuiltinsAndYourDirectory) {
    ConfigEnv env("/nonexistent-home");
    EXPECT_EQ(load_err("defualt"),
              "unknown policy 'defualt' (built-in policies: agent, aider, ci, claude, codex, default, gemini, minimal, strict; "
              "yours: ~/.config/agentjail/policies/NAME.toml; or give a path to a .toml file)");
    EXPECT_EQ(load_err("/nonexistent/x.toml"),
              "unknown policy '/nonexistent/x.toml' (built-in policies: agent, aider, ci, claude, codex, "
              "default, gemini, minimal, strict; yours: ~/.config/agentjail/policies/NAME.toml; or give a path to a .toml file)");
    EXPECT_EQ(load(std::string()).error().kind(), ErrorKind::invalid_input);
}

// ---- files and extends ----

TEST(PolicyLoad, AFileByPath) {
    ajtest::TempDir dir("aj-policy");
    std::string path = dir.write("mine.toml", "extends = 'default'\n[filesystem]\nhide = ['~/.x']\n");
    Policy p = load_ok(path);
    EXPECT_EQ(p.name, path);
    EXPECT_EQ(p.layers, (std::vector<std::string>{"minimal", "default", path}));
    ASSERT_FALSE(p.hide.empty());
    EXPECT_EQ(p.hide.back().pattern, "~/.x");
    EXPECT_EQ(p.hide.back().origin.describe(), path + ":3:9 (filesystem.hide[0])");
    EXPECT_EQ(p.hide.front().origin.file, "minimal.toml") << "base layers come first";
}

TEST(PolicyLoad, ADirectoryIsNotAPolicy) {
    ajtest::TempDir dir("aj-policy");
    EXPECT_EQ(load_err(dir.path()), "cannot read policy file '" + dir.path() + "': is a directory");
}

TEST(PolicyLoad, ErrorsNameTheFileAsGiven) {
    ajtest::TempDir dir("aj-policy");
    std::string path = dir.write("bad.toml", "\n[filesystem]\nro = [1]\n");
    EXPECT_EQ(load_err(path),
              path + ":3:7: filesystem.ro[0]: expected a path string or a table, got an integer");
}

TEST(PolicyLoad, ExtendsIsRelativeToTheExtendingFile) {
    ajtest::TempDir dir("aj-policy");
    dir.write("c.toml", "extends = 'minimal'\n[process]\nhostname = 'c'\ncwd = '/c'\n"
                        "[filesystem]\nhide = ['/c']\n");
    dir.write("sub/b.toml", "extends = '../c.toml'\n[process]\nhostname = 'b'\n"
                            "[filesystem]\nhide = ['/b']\n[environment]\nset = { PATH = '/b' }\n");
    std::string a = dir.write("a.toml", "extends = 'sub/b.toml'\n[filesystem]\nhide = ['/a']\n");
    Policy p = load_ok(a);
    const std::string b = dir.path() + "/sub/b.toml";
    const std::string c = dir.path() + "/sub/../c.toml";
    EXPECT_EQ(p.layers, (std::vector<std::string>{"minimal", c, b, a}));
    // Lists accumulate base first.
    auto hides = patterns(p.hide);
    ASSERT_GE(hides.size(), 3u);
    EXPECT_EQ(hides.front(), "/etc/shadow*") << "minimal's own, first";
    EXPECT_EQ(std::vector<std::string>(hides.end() - 3, hides.end()),
              (std::vector<std::string>{"/c", "/b", "/a"}));
    // Scalars: the latest layer that sets one wins, with its origin.
    EXPECT_EQ(p.hostname.value, "b");
    EXPECT_EQ(p.hostname.origin.describe(), b + ":3:12 (process.hostname)");
    EXPECT_EQ(p.cwd.value, "/c");
    EXPECT_EQ(p.cwd.origin.file, c);
    // Minimal's scalars survive where no later layer sets them.
    EXPECT_EQ(p.workspace.value, WorkspaceAccess::none);
    // env set: last wins per name, one entry.
    ASSERT_EQ(p.env_set.size(), 1u);
    EXPECT_EQ(p.env_set[0].value, "/b");
    EXPECT_EQ(p.env_set[0].origin.file, b);
}

TEST(PolicyLoad, ExtendsArrayAppliesInOrderAndADiamondOnce) {
    ajtest::TempDir dir("aj-policy");
    dir.write("b.toml", "extends = 'minimal'\nprocess.hostname = 'b'\nfilesystem.hide = ['/b']\n");
    dir.write("c.toml", "extends = 'minimal'\nprocess.hostname = 'c'\nfilesystem.hide = ['/c']\n");
    std::string a = dir.write("a.toml", "extends = ['b.toml', 'c.toml']\n");
    Policy p = load_ok(a);
    EXPECT_EQ(p.layers, (std::vector<std::string>{"minimal", dir.path() + "/b.toml",
                                                  dir.path() + "/c.toml", a}));
    EXPECT_EQ(p.hostname.value, "c") << "the later entry of extends is the later layer";
    auto hides = patterns(p.hide);  // minimal's own first, once
    ASSERT_GE(hides.size(), 2u);
    EXPECT_EQ(std::vector<std::string>(hides.end() - 2, hides.end()),
              (std::vector<std::string>{"/b", "/c"}));
    EXPECT_EQ(std::count(hides.begin(), hides.end(), "/etc/shadow*"), 1);
    // minimal is applied once: one /tmp (a second would be a duplicate-tmpfs error).
    EXPECT_EQ(p.tmpfs.size(), 1u);
    EXPECT_EQ(p.ro.size(), 9u);
}

TEST(PolicyLoad, ExtendsCycleNamesTheChain) {
    ajtest::TempDir dir("aj-policy");
    std::string a = dir.write("a.toml", "extends = 'b.toml'\n");
    std::string b = dir.write("b.toml", "description = 'b'\nextends = ['minimal', 'a.toml']\n");
    EXPECT_EQ(load_err(a), b + ":2:23: extends[1]: extends cycle: " + a + " -> " + b + " -> " + a);
}

TEST(PolicyLoad, SelfExtendsIsACycleEvenSpelledDifferently) {
    ajtest::TempDir dir("aj-policy");
    std::string a = dir.write("a.toml", "extends = './a.toml'\n");
    EXPECT_EQ(load_err(a),
              a + ":1:11: extends: extends cycle: " + a + " -> " + dir.path() + "/./a.toml");
}

TEST(PolicyLoad, CycleThroughLoadText) {
    ajtest::TempDir dir("aj-policy");
    dir.write("b.toml", "extends = 'a.toml'\n");
    const std::string a = dir.path() + "/a.toml";  // never written: load_text stands in for it
    auto r = load_text("extends = 'b.toml'\n", a);
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().message(), dir.path() + "/b.toml:1:11: extends: extends cycle: " + a +
                                       " -> " + dir.path() + "/b.toml -> " + a);
}

TEST(PolicyLoad, MissingExtendsFilePointsAtTheExtendsValue) {
    ajtest::TempDir dir("aj-policy");
    std::string a = dir.write("a.toml", "# base\nextends = [\n  'minimal',\n  'gone.toml',\n]\n");
    EXPECT_EQ(load_err(a),
              a + ":4:3: extends[1]: policy file '" + dir.path() + "/gone.toml' not found");
}

TEST(PolicyLoad, UnknownBuiltinInExtends) {
    ConfigEnv env("/nonexistent-home");
    auto r = load_text("extends = 'defualt'\n", "t.toml");
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().message(),
              "t.toml:1:11: extends: unknown policy 'defualt' (built-in policies: "
              "agent, aider, ci, claude, codex, default, gemini, minimal, strict; yours: "
              "~/.config/agentjail/policies/NAME.toml; a file path must contain '/' or end in .toml)");
}

// Your policies by name: -p NAME and extends = "NAME" find
// ~/.config/agentjail/policies/NAME.toml; a built-in's name stays the built-in.
TEST(PolicyLoad, YourPoliciesAreFoundByName) {
    ajtest::TempDir home("aj-cfg");
    ConfigEnv env(home.path().c_str());
    home.write(".config/agentjail/policies/mine.toml", "extends = 'default'\n[process]\nhostname = 'mine-host'\n");
    home.write(".config/agentjail/policies/team.toml", "extends = 'mine'\n[limits]\npids = 77\n");
    home.write(".config/agentjail/policies/default.toml", "[process]\nhostname = 'shadow'\n");
    auto p = load("team");
    ASSERT_TRUE(p) << p.error().message();
    EXPECT_EQ(p->hostname.value, "mine-host");
    EXPECT_EQ(p->hostname.origin.file, home.path() + "/.config/agentjail/policies/mine.toml");
    EXPECT_EQ(p->limits.pids.value, std::optional<std::uint64_t>(77));
    auto d = load("default");
    ASSERT_TRUE(d);
    EXPECT_EQ(d->hostname.value, "agentjail") << "a built-in's name is the built-in";
    // Only plain names: no path through the directory.
    EXPECT_EQ(user_policy_file("../x"), std::nullopt);
    EXPECT_EQ(user_policy_file("mine"), home.path() + "/.config/agentjail/policies/mine.toml");
    // XDG_CONFIG_HOME moves it.
    ::setenv("XDG_CONFIG_HOME", (home.path() + "/xdg").c_str(), 1);
    EXPECT_EQ(user_policy_file("mine"), std::nullopt);
    home.write("xdg/agentjail/policies/mine.toml", "extends = 'minimal'\n");
    EXPECT_EQ(user_policy_file("mine"), home.path() + "/xdg/agentjail/policies/mine.toml");
}

TEST(PolicyLoad, ErrorsInABaseNameTheBaseFile) {
    ajtest::TempDir dir("aj-policy");
    std::string base = dir.write("base.toml", "[process]\nhostname = 'no_underscores'\n");
    std::string a = dir.write("a.toml", "extends = 'base.toml'\n");
    std::string m = load_err(a);
    EXPECT_EQ(m.rfind(base + ":2:12: process.hostname: 'no_underscores' is not a valid hostname", 0),
              0u)
        << m;
}

TEST(PolicyLoad, ExtendsWithAbsolutePath) {
    ajtest::TempDir dir("aj-policy");
    std::string base = dir.write("x/base.toml", "filesystem.hide = ['/base']\n");
    std::string a = dir.write("y/a.toml", "extends = '" + base + "'\n");
    Policy p = load_ok(a);
    EXPECT_EQ(p.layers, (std::vector<std::string>{base, a}));
}

// ---- validate ----

TEST(PolicyValidate, DuplicateTmpfsAcrossLayers) {
    Policy minimal = load_ok("minimal");
    ASSERT_EQ(minimal.tmpfs.size(), 1u);
    auto r = load_text("extends = 'minimal'\n[filesystem]\ntmpfs = ['/tmp/']\n", "t.toml");
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().message(), "t.toml:3:10: filesystem.tmpfs[0]: duplicate tmpfs path '/tmp/' "
                                   "(already at " + minimal.tmpfs[0].origin.describe() + ")");
    EXPECT_EQ(minimal.tmpfs[0].origin.describe().rfind("minimal.toml:", 0), 0u);
}

TEST(PolicyValidate, DuplicateTmpfsInOneFile) {
    auto r = load_text("filesystem.tmpfs = ['/run', { path = '/run//', size = '1M' }]\n", "t.toml");
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().message(),
              "t.toml:1:29: filesystem.tmpfs[1]: duplicate tmpfs path '/run//' (already at "
              "t.toml:1:21 (filesystem.tmpfs[0]))");
}

TEST(PolicyValidate, CwdInTheWorkspaceNeedsAWorkspace) {
    auto r = load_text("extends = 'minimal'\nprocess.cwd = '{workspace}/src'\n", "t.toml");
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().message(), "t.toml:2:15: process.cwd: '{workspace}/src' uses {workspace}, "
                                   "but " + load_ok("minimal").workspace.origin.describe() +
                                       " sets workspace = \"none\"");
    // With the workspace turned back on it is fine.
    auto ok = load_text("extends = 'minimal'\nprocess.cwd = '{workspace}/src'\n"
                        "filesystem.workspace = 'ro'\n",
                        "t.toml");
    EXPECT_TRUE(ok.has_value()) << ok.error().message();
}

TEST(PolicyValidate, HidingTheRootIsRefused) {
    auto r = load_text("filesystem.hide = ['//']\n", "t.toml");
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().message(),
              "t.toml:1:20: filesystem.hide[0]: cannot hide '/' (the whole sandbox would be empty)");
}

TEST(PolicyValidate, RechecksValuesTheOverridesAdded) {
    Policy p = load_ok("default");
    ASSERT_TRUE(validate(p).has_value());

    Policy bad_ro = p;
    add_ro(bad_ro, "relative/dir", "", {"command line", 0, 0, "--ro"});
    EXPECT_EQ(validate(bad_ro).error().message(),
              "command line: --ro: expected an absolute path or one starting with ~, "
              "{workspace}, {tmp} or {state}, got 'relative/dir'");

    Policy bad_dst = p;
    add_rw(bad_dst, "/src", "dst", {"command line", 0, 0, "--rw"});
    EXPECT_EQ(validate(bad_dst).error().message(),
              "command line: --rw: expected an absolute path or one starting with ~, "
              "{workspace}, {tmp} or {state}, got 'dst'");

    Policy bad_hide = p;
    add_hide(bad_hide, "", {"command line", 0, 0, "--hide"});
    EXPECT_EQ(validate(bad_hide).error().message(),
              "command line: --hide: expected a path, got an empty string");

    Policy bad_env = p;
    set_env(bad_env, "NOT-A-NAME", "x", {"command line", 0, 0, "--env"});
    EXPECT_EQ(validate(bad_env).error().message(),
              "command line: --env: 'NOT-A-NAME' is not a valid environment variable name "
              "(letters, digits and _, not starting with a digit)");

    Policy bad_pass = p;
    pass_env(bad_pass, "A B", {"command line", 0, 0, "--env"});
    EXPECT_FALSE(validate(bad_pass).has_value());

    Policy bad_host = p;
    bad_host.hostname = {"bad host", {"command line", 0, 0, "--hostname"}};
    EXPECT_EQ(validate(bad_host).error().message().rfind(
                  "command line: --hostname: 'bad host' is not a valid hostname", 0),
              0u);

    Policy bad_cwd = p;
    bad_cwd.cwd = {"src", {"command line", 0, 0, "--cwd"}};
    EXPECT_EQ(validate(bad_cwd).error().message(),
              "command line: --cwd: expected an absolute path or one starting with ~, "
              "{workspace}, {tmp} or {state}, got 'src'");

    Policy dup = p;
    dup.tmpfs.push_back({"/tmp", 0, {"command line", 0, 0, "--tmpfs"}});
    EXPECT_EQ(validate(dup).error().message().rfind(
                  "command line: --tmpfs: duplicate tmpfs path '/tmp' (already at minimal.toml:", 0),
              0u);

    Policy empty_ws = p;
    empty_ws.workspace_path = Located<std::string>{"", {"command line", 0, 0, "-C"}};
    EXPECT_EQ(validate(empty_ws).error().message(),
              "command line: -C: expected a directory, got an empty string");
}

// ---- the format document ----

TEST(PolicyDocs, TheExampleInPolicyFormatMdIsAValidPolicy) {
    // docs/policy-format.md is the schema users read: its example must load.
    std::string doc = ajtest::read_file(std::string(AJ_SOURCE_DIR) + "/docs/policy-format.md");
    size_t start = doc.find("```toml\n");
    ASSERT_NE(start, std::string::npos);
    start += 8;
    size_t end = doc.find("```", start);
    ASSERT_NE(end, std::string::npos);
    auto r = load_text(doc.substr(start, end - start), "policy-format.md");
    ASSERT_TRUE(r.has_value()) << r.error().message();
    EXPECT_EQ(r->layers, (std::vector<std::string>{"minimal", "default", "policy-format.md"}));
    EXPECT_EQ(r->description, "What this policy is for");
}

}  // namespace
}  // namespace agentjail::policy
