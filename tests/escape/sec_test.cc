// SPDX-License-Identifier: Apache-2.0
// Escape tests, secrets: credential files in the home directory (SEC-01) and secrets
// in the inherited environment, including the init's (SEC-02).
#include "common.hpp"

#include <unistd.h>

#include <filesystem>

using namespace ajesc;

namespace {
const char* const kHomeFiles[] = {".ssh/id_ed25519", ".aws/credentials", ".config/gh/hosts.yml", ".netrc"};
const char* const kMoreHomeFiles[] = {
    ".config/gcloud/credentials.db", ".azure/accessTokens.json", ".kube/config", ".docker/config.json",
    ".git-credentials", ".npmrc", ".pypirc", ".gnupg/private-keys-v1.d/key.key", ".password-store/site.gpg",
    ".local/share/keyrings/login.keyring", ".bash_history"};

// Reads every seeded credential through `home`, lists the directories, then greps the
// whole sandbox (but the kernel filesystems and the read-only software trees /usr
// and /opt, too slow to scan in every run) for the canaries.
std::string read_secrets_script(const std::string& home, const std::vector<std::string>& canaries) {
    std::string s;
    for (const char* f : kHomeFiles) s += "cat '" + home + "/" + f + "' 2>&1; ";
    for (const char* f : kMoreHomeFiles) s += "cat '" + home + "/" + f + "' 2>&1; ";
    s += "ls -la '" + home + "' '" + home + "/.ssh' '" + home + "/.aws' 2>&1; ";
    if (!canaries.empty()) {
        s += "grep -rlsF";
        for (const auto& c : canaries) s += " -e '" + c + "'";
        s += " / --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev --exclude-dir=usr --exclude-dir=opt | sed 's/^/FOUND /'; ";
    }
    return s + "true";
}
}  // namespace

// SEC-01: ~/.ssh, ~/.aws, ~/.config/gh and ~/.netrc are unreadable, through $HOME, the
// real home path, and a symlinked $HOME; no canary anywhere in the sandbox.
// (sandbox-runtime README "exfiltrate SSH keys"; bubblewrap test-run.sh.)
TEST_F(Escape, SEC01_HomeCredentialsUnreadable) {
    std::vector<std::string> home_canaries;
    for (const char* f : kHomeFiles) home_canaries.push_back(jail.secret(std::string("home/") + f));
    // More credential stores, seeded for this test only.
    for (const char* f : kMoreHomeFiles) {
        home_canaries.push_back(jail.new_canary());
        jail.home_dir().write(f, home_canaries.back() + "\n", 0600);
    }
    std::string script = read_secrets_script(jail.home(), home_canaries) + "; " +
                         read_secrets_script("$HOME", {});
    auto r = jail.sh(script);
    EXPECT_EQ(r.status, 0) << describe(r);
    for (const auto& c : home_canaries) EXPECT_FALSE(ajtest::contains(r.out + r.err, c)) << r.out;
    EXPECT_FALSE(ajtest::contains(r.out, "FOUND ")) << r.out;

    // The same with HOME given through a symlink: both spellings stay unreadable.
    ajtest::TempDir alias_dir("aj-homealias");
    std::string alias = alias_dir.path() + "/home";
    std::filesystem::create_directory_symlink(jail.home(), alias);
    ajtest::RunOptions opts;
    opts.env.push_back("HOME=" + alias);
    auto a = jail.sh(read_secrets_script("$HOME", {}) + "; " + read_secrets_script(jail.home(), {}), {}, opts);
    EXPECT_EQ(a.status, 0) << describe(a);
    for (const auto& c : home_canaries) EXPECT_FALSE(ajtest::contains(a.out + a.err, c)) << a.out;

    // The host files are untouched.
    EXPECT_EQ(ajtest::read_file(jail.home() + "/.netrc"),
              "machine example.com login me password " + jail.secret("home/.netrc") + "\n");

    // Positive control: with a policy that mounts the fake home and hides nothing, the
    // same probe prints every canary and the grep finds them.
    auto c = jail.control({"-p", "minimal", "--ro", jail.home(), "--", "/bin/sh", "-c",
                           read_secrets_script(jail.home(), home_canaries)});
    for (const auto& k : home_canaries) EXPECT_TRUE(ajtest::contains(c.out, k)) << "control\n" << describe(c);
    EXPECT_TRUE(ajtest::contains(c.out, "FOUND " + jail.home())) << "control: grep finds nothing\n" << c.out;
}

namespace {
// Variables a launcher's environment typically holds. LD_PRELOAD is left out: a bogus
// value would make the dynamic loader of agentjail itself print it.
const char* const kEnvSecrets[] = {
    "AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "NPM_TOKEN",
    "SSH_AUTH_SOCK", "DBUS_SESSION_BUS_ADDRESS", "DISPLAY", "WAYLAND_DISPLAY", "XAUTHORITY",
    "TMUX", "STY", "VSCODE_IPC_HOOK_CLI", "KUBECONFIG", "MY_DB_PASSWORD", "SOME_SECRET_VALUE"};
}  // namespace

// SEC-02: none of the launcher's secrets or socket pointers are in the command's
// environment, in /proc/self/environ, or in the init's /proc/1/environ.
// (bubblewrap --clearenv; minijail --env-reset; nsjail keep_env: false.)
TEST_F(Escape, SEC02_EnvironmentSecretsAbsent) {
    ajtest::RunOptions opts;
    std::vector<std::string> values;
    for (const char* n : kEnvSecrets) {
        values.push_back(jail.new_canary());
        opts.env.push_back(std::string(n) + "=" + values.back());
    }
    std::string probe = "env; echo ---; tr '\\0' '\\n' < /proc/self/environ; echo ---; "
                        "tr '\\0' '\\n' < /proc/1/environ; echo init_environ=$?; "
                        "for p in /proc/[0-9]*; do tr '\\0' '\\n' < $p/environ; done 2>/dev/null; true";
    auto r = jail.sh(probe, {}, opts);
    EXPECT_EQ(r.status, 0) << describe(r);
    for (size_t i = 0; i < values.size(); ++i) {
        EXPECT_FALSE(ajtest::contains(r.out + r.err, values[i])) << kEnvSecrets[i] << " visible inside";
        EXPECT_FALSE(ajtest::contains(r.out, std::string("\n") + kEnvSecrets[i] + "=")) << kEnvSecrets[i];
    }

    // Positive controls. 1: the probe finds the secrets when they are passed with -e.
    std::vector<std::string> pass;
    for (const char* n : kEnvSecrets) pass.insert(pass.end(), {"-e", n});
    auto c = jail.control_sh(probe, pass, opts);
    for (size_t i = 0; i < values.size(); ++i)
        EXPECT_TRUE(ajtest::contains(c.out, values[i])) << "control misses " << kEnvSecrets[i] << "\n" << c.out;
    // 2: the launcher really holds them: its own /proc/PID/environ (which a forked init
    // inherits) shows them, so the init's environ above was a real probe.
    ajtest::RunOptions live = opts;
    live.env.push_back("HOME=" + jail.home());
    ajtest::Child aj({ajtest::agentjail_bin(), "-C", jail.ws(), "--", "sh", "-c",
                      ": > " + jail.ws() + "/ready; sleep 0.3"},
                     live);
    ASSERT_TRUE(ajtest::wait_for_file(jail.ws() + "/ready", 5000));
    std::string launcher_env = ajtest::read_file("/proc/" + std::to_string(aj.pid()) + "/environ");
    EXPECT_TRUE(ajtest::contains(launcher_env, values[0])) << "control: the launcher lacks the canary";
    jail.record(aj.wait(5000));
}

// SEC-02, spelled otherwise: deny patterns ignore case. LC_github_token gets past the
// LC_* allow of every policy, and under an allow-all policy npm_config__authToken
// (npm's own spelling), github_token and aws_secret_access_key would reach the
// command if "*_TOKEN" and "*SECRET*" matched only upper case.
TEST_F(Escape, SEC02_DenyPatternsIgnoreCase) {
    const char* const names[] = {"LC_github_token", "npm_config__authToken", "github_token",
                                 "aws_secret_access_key", "Openai_Api_Key"};
    ajtest::RunOptions opts;
    std::vector<std::string> values;
    for (const char* n : names) {
        values.push_back(jail.new_canary());
        opts.env.push_back(std::string(n) + "=" + values.back());
    }
    opts.env.push_back("aj_harmless_lowercase=visible-" + unique_name(""));
    ajtest::TempDir dir("aj-sec02");
    std::string allow_all =
        dir.write("allow-all.toml", "extends = 'default'\n[environment]\nallow = ['*']\n");
    const std::string probe =
        "env; tr '\\0' '\\n' < /proc/self/environ; echo harmless=$aj_harmless_lowercase";
    auto d = jail.sh(probe, {}, opts);
    auto a = jail.sh(probe, {"-p", allow_all}, opts);
    ASSERT_EQ(d.status, 0) << describe(d);
    ASSERT_EQ(a.status, 0) << describe(a);
    for (size_t i = 0; i < values.size(); ++i) {
        EXPECT_FALSE(ajtest::contains(d.out + d.err, values[i])) << names[i] << " under default";
        EXPECT_FALSE(ajtest::contains(a.out + a.err, values[i])) << names[i] << " under allow-all";
    }
    // Positive controls: the allow-all policy does pass other lower-case names, and
    // each secret reaches the command when named exactly (-e NAME).
    EXPECT_EQ(field(a.out, "harmless").rfind("visible-", 0), 0u) << a.out;
    std::vector<std::string> pass;
    for (const char* n : names) pass.insert(pass.end(), {"-e", n});
    auto c = jail.control_sh(probe, pass, opts);
    for (size_t i = 0; i < values.size(); ++i)
        EXPECT_TRUE(ajtest::contains(c.out, values[i])) << "control misses " << names[i] << "\n"
                                                        << c.out;
}

// SEC-07: the key that makes secret placeholders stable ($XDG_STATE_HOME/agentjail/
// placeholder.key) is unreadable even when the user binds its directory read-write
// (--rw), and the sandbox can neither move it aside nor link it to a name it can
// read; the host's key is unchanged afterwards. Positive control: a file beside it,
// through the same bind, is read by the same probe.
TEST_F(Escape, SEC07_PlaceholderKeyUnreadableWithItsDirectoryReadWrite) {
    ajtest::TempDir scratch("aj-phkey");
    const std::string state = scratch.path() + "/state";
    const std::string dir = state + "/agentjail";
    const std::string key = dir + "/placeholder.key";
    ajtest::RunOptions o;
    o.env = {"XDG_STATE_HOME=" + state, "AJ_TEST_PH_SECRET=" + unique_name("sk-")};
    // A first run with a secret makes the key.
    auto first = jail.sh("true", {"--secret", "K=env:AJ_TEST_PH_SECRET@api.test"}, o);
    ASSERT_EQ(first.status, 0) << describe(first);
    ASSERT_TRUE(ajtest::exists(key));
    const std::string host_hex =
        ajtest::trim(ajtest::run_with({"/bin/sh", "-c", "od -An -tx1 '" + key + "' | tr -d ' \\n'"}, {}).out);
    ASSERT_EQ(host_hex.size(), 64u) << host_hex;
    const std::string beside = unique_name("beside-");  // not a secret: read on purpose
    scratch.write("state/agentjail/beside.txt", beside + "\n", 0600);
    std::string probe =
        "echo key=$(od -An -tx1 '" + key + "' 2>/dev/null | tr -d ' \\n'); "
        "mv '" + key + "' '" + dir + "/moved' 2>/dev/null && echo moved=yes; "
        "ln '" + key + "' '" + dir + "/linked' 2>/dev/null && echo linked=$(od -An -tx1 '" + dir +
        "/linked' | tr -d ' \\n'); "
        "cp '" + key + "' '" + dir + "/copied' 2>/dev/null; echo copied=$(od -An -tx1 '" + dir +
        "/copied' 2>/dev/null | tr -d ' \\n'); "
        "echo beside=$(cat '" + dir + "/beside.txt')";
    auto r = jail.sh(probe, {"--secret", "K=env:AJ_TEST_PH_SECRET@api.test", "--rw", dir}, o);
    EXPECT_EQ(r.status, 0) << describe(r);
    EXPECT_FALSE(ajtest::contains(r.out, host_hex)) << describe(r);
    EXPECT_EQ(field(r.out, "key"), "") << describe(r);
    EXPECT_EQ(field(r.out, "moved"), "<missing>") << describe(r);
    EXPECT_EQ(field(r.out, "copied"), "") << describe(r);
    // The same with only the parent (the state home) bound read-write.
    auto p = jail.sh(probe, {"--secret", "K=env:AJ_TEST_PH_SECRET@api.test", "--rw", state}, o);
    EXPECT_EQ(p.status, 0) << describe(p);
    EXPECT_FALSE(ajtest::contains(p.out, host_hex)) << describe(p);
    // The host's key is the same file, with the same bytes.
    EXPECT_EQ(ajtest::trim(ajtest::run_with({"/bin/sh", "-c", "od -An -tx1 '" + key + "' | tr -d ' \\n'"}, {}).out),
              host_hex);
    // Positive control: the file beside the key is read through the same bind.
    auto c = jail.control_sh(probe, {"--secret", "K=env:AJ_TEST_PH_SECRET@api.test", "--rw", dir}, o);
    EXPECT_EQ(field(c.out, "beside"), beside) << "control\n" << describe(c);
}
