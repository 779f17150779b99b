// SPDX-License-Identifier: Apache-2.0
// Package managers and TLS stacks through the proxy's interception (issue 27, item
// 4): each trusts the run's CA by its own setting, which the plan sets. npm against
// the real registry (reachable from this project's machines; skipped, saying so,
// where it is not), and npm, Python, Node, curl and git against a local TLS stand-in
// behind a method rule (so its tunnel is intercepted). Each with its control: the
// same client pointed at the system's CAs alone fails to verify.
#include "common.hpp"
#include "net_support.hpp"

#include <unistd.h>

namespace ajit {
namespace {

using ajnet::NetPolicy;
using ajnet::TestServer;

class PackageManagers : public ajit::Sandbox {
protected:
    ajtest::TempDir scratch{"aj-pm"};
    ajtest::RunOutput run(const std::vector<std::string>& flags, const std::string& script,
                          std::vector<std::string> env = {}) {
        std::vector<std::string> args = {"-C", jail.ws()};
        args.insert(args.end(), flags.begin(), flags.end());
        args.insert(args.end(), {"--", "/bin/sh", "-c", script});
        ajtest::RunOptions o;
        o.timeout_ms = 120000;
        o.env = std::move(env);
        return jail.run(args, o);
    }
};

const char* system_bundle() {
    for (const char* p : {"/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt"})
        if (::access(p, R_OK) == 0) return p;
    return nullptr;
}

// The real registry through the balanced preset: registry.npmjs.org has method
// rules there, so its tunnel is intercepted, and npm (which ignores
// NODE_EXTRA_CA_CERTS for its own requests) trusts the run's CA by npm_config_cafile.
TEST_F(PackageManagers, NpmViewAndInstallFromTheRealRegistryThroughTheBalancedPreset) {
    if (::access("/usr/bin/npm", X_OK) != 0) GTEST_SKIP() << "needs Debian's npm (/usr/bin/npm)";
    // On the host with a scratch cache: the runner's own ~/.npm is not touched.
    ajtest::RunOptions ho;
    ho.env = {"HOME=" + scratch.path(), "npm_config_cache=" + scratch.path() + "/npm-cache"};
    ho.cwd = scratch.path();
    ho.timeout_ms = 60000;
    auto host = ajtest::run_with({"/usr/bin/npm", "view", "left-pad", "version", "--fetch-retries=0"}, ho);
    if (host.status != 0 || ajtest::trim(host.out) != "1.3.0")
        GTEST_SKIP() << "registry.npmjs.org is not reachable from this machine: " << host.err;

    auto view = run({"--net-preset", "balanced"}, "npm view left-pad version --fetch-retries=0");
    ASSERT_EQ(view.status, 0) << describe(view);
    EXPECT_EQ(ajtest::trim(view.out), "1.3.0") << describe(view);
    auto install = run({"--net-preset", "balanced"}, "npm install --no-audit --no-fund left-pad@1.3.0 >/dev/null && "
                                                     "cat node_modules/left-pad/package.json");
    ASSERT_EQ(install.status, 0) << describe(install);
    EXPECT_TRUE(ajtest::contains(ajtest::read_file(jail.ws() + "/node_modules/left-pad/package.json"), "\"1.3.0\""));

    // Control: npm with the system's CAs alone meets the run's certificate and fails.
    const char* sys = system_bundle();
    if (!sys) GTEST_SKIP() << "no system CA bundle for the control";
    auto control = run({"--net-preset", "balanced"},
                       std::string("npm_config_cafile=") + sys + " npm view left-pad version --fetch-retries=0");
    EXPECT_NE(control.status, 0) << describe(control);
    EXPECT_TRUE(ajtest::contains(control.out + control.err, "UNABLE_TO_VERIFY") ||
                ajtest::contains(control.out + control.err, "unable to verify"))
        << describe(control);
}

// A local registry stand-in behind a method rule: npm (npm_config_cafile), Python's
// urllib (OpenSSL's SSL_CERT_FILE), curl and git (GIT_SSL_CAINFO)
// each reach it over the intercepted tunnel, and each fails against the system's
// CAs alone.
TEST_F(PackageManagers, EachClientTrustsTheRunsCaByItsOwnSetting) {
    auto c = ajnet::make_cert(scratch.path() + "/ca.pem", scratch.path() + "/key.pem", {"registry.test"});
    TestServer s({"registry", &c});
    const std::string port = std::to_string(s.port());
    const std::string base = "https://registry.test:" + port;
    s.set_body("/left-pad",
               R"({"name":"left-pad","dist-tags":{"latest":"9.9.9"},"versions":{"9.9.9":{"name":"left-pad","version":"9.9.9"}}})");
    s.set_body("/hello", "hello over tls");
    NetPolicy p;
    p.allow_toml = {"{ host = \"registry.test:" + port + "\", methods = [\"GET\", \"HEAD\"] }"};
    p.hosts = {{"registry.test", "127.0.0.1"}};
    const std::string pol = scratch.write("pm.toml", ajnet::toml(p));
    // agentjail itself verifies the stand-in against the test CA, as it would a real
    // registry against the system's.
    const std::vector<std::string> env = {"SSL_CERT_FILE=" + c.cert_path};

    std::string script;
    if (::access("/usr/bin/npm", X_OK) == 0)
        script += "echo npm=$(npm view left-pad version --registry " + base + "/ --fetch-retries=0 2>&1 | tail -1); ";
    script +=
        "echo python=$(python3 -c \"import urllib.request; print(urllib.request.urlopen('" + base +
        "/hello').read().decode())\" 2>&1 | tail -1); ";
    script += "echo curl=$(curl -sS --max-time 20 " + base + "/hello 2>&1); ";
    // git's smart HTTP needs a real server; what matters here is that TLS verified:
    // the stand-in's answer is not a repository, so git fails after the handshake.
    script += "echo git=$(git ls-remote " + base + "/repo.git 2>&1 | grep -ciE 'certificate (problem|verification failed)'); ";
    auto r = run({"-p", pol}, script, env);
    ASSERT_EQ(r.status, 0) << describe(r);
    if (::access("/usr/bin/npm", X_OK) == 0) {
        EXPECT_EQ(field(r.out, "npm"), "9.9.9") << describe(r);
    }
    EXPECT_EQ(field(r.out, "python"), "hello over tls") << describe(r);
    EXPECT_EQ(field(r.out, "curl"), "hello over tls") << describe(r);
    EXPECT_EQ(field(r.out, "git"), "0") << describe(r);
    bool git_reached = false;
    for (const auto& req : s.requests()) git_reached = git_reached || ajtest::contains(req.head, "/repo.git/info/refs");
    EXPECT_TRUE(git_reached) << "git did not get past the handshake";

    // Control: each client pointed at the system's CAs alone fails to verify.
    const char* sys = system_bundle();
    if (!sys) GTEST_SKIP() << "no system CA bundle for the control";
    const std::string s_ = sys;
    std::string control;
    if (::access("/usr/bin/npm", X_OK) == 0)
        control += "echo npm=$(npm_config_cafile=" + s_ + " npm view left-pad version --registry " + base +
                   "/ --fetch-retries=0 2>&1 | grep -c -i 'verify'); ";
    control += "echo python=$(SSL_CERT_FILE=" + s_ + " python3 -c \"import urllib.request; urllib.request.urlopen('" +
               base + "/hello')\" 2>&1 | grep -q CERTIFICATE_VERIFY_FAILED && echo 1); ";
    control += "echo curl=$(curl -sS --max-time 20 --cacert " + s_ + " " + base + "/hello 2>&1 | grep -q -i certificate && echo 1); ";
    control += "echo git=$(GIT_SSL_CAINFO=" + s_ + " git ls-remote " + base + "/repo.git 2>&1 | grep -ciE 'certificate (problem|verification failed)'); ";
    auto k = run({"-p", pol}, control, env);
    ASSERT_EQ(k.status, 0) << describe(k);
    if (::access("/usr/bin/npm", X_OK) == 0) {
        EXPECT_NE(field(k.out, "npm"), "0") << describe(k);
    }
    EXPECT_EQ(field(k.out, "python"), "1") << describe(k);
    EXPECT_EQ(field(k.out, "curl"), "1") << describe(k);
    EXPECT_EQ(field(k.out, "git"), "1") << describe(k);
}

}  // namespace
}  // namespace ajit
