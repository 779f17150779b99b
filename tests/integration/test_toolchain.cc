// SPDX-License-Identifier: Apache-2.0
// The caller's tools in real sandboxes (issue 27, item 1): programs installed under
// the home the way version managers and installers put them (an nvm node with a
// global package, rustup's proxies in ~/.cargo/bin, a pipx program linked from
// ~/.local/bin) run inside with no flag, read-only, their credentials still out.
// Each has its control: with path_tools = false the same command is not found.
#include "common.hpp"

#include <sys/stat.h>
#include <unistd.h>

namespace ajit {
namespace {

class Toolchains : public Sandbox {
protected:
    std::string h(const std::string& rel) const { return jail.home() + "/" + rel; }
    void link(const std::string& target, const std::string& rel) {
        ASSERT_EQ(::symlink(target.c_str(), h(rel).c_str()), 0) << rel;
    }
    ajtest::RunOptions with_path(const std::string& path) const {
        ajtest::RunOptions o;
        o.env = {"PATH=" + path};
        return o;
    }
    // A policy like default with the tools turned off: the positive control.
    std::string no_tools() {
        jail.home_dir().write("no-tools.toml", "extends = 'default'\n[filesystem]\npath_tools = false\n");
        return h("no-tools.toml");
    }
};

TEST_F(Toolchains, AnNvmGlobalPackageRunsWithItsNodeReadOnly) {
    const std::string v = ".nvm/versions/node/v20.11.0";
    jail.home_dir().write(v + "/bin/node", "#!/bin/sh\necho \"node ran $1\"\n", 0755);
    jail.home_dir().write(v + "/lib/node_modules/fakecli/cli.js", "#!/usr/bin/env node\n", 0755);
    link("../lib/node_modules/fakecli/cli.js", v + "/bin/fakecli");
    const auto opts = with_path(h(v + "/bin") + ":/usr/bin:/bin");

    auto r = jail.run({"-C", jail.ws(), "--", "fakecli"}, opts);
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_EQ(r.out, "node ran " + h(v + "/bin/fakecli") + "\n");
    auto explain = jail.run({"explain", "-C", jail.ws(), "--", "fakecli"}, opts);
    EXPECT_TRUE(ajtest::contains(explain.out, "tools: " + h(v) + " read-only (PATH entry " + h(v + "/bin") + ")"))
        << explain.out;

    // Read-only: the host's node cannot be replaced from inside.
    auto write = jail.run({"-C", jail.ws(), "--", "sh", "-c", "echo evil > " + h(v + "/bin/node")}, opts);
    EXPECT_NE(write.status, 0) << describe(write);
    EXPECT_EQ(ajtest::read_file(h(v + "/bin/node")), "#!/bin/sh\necho \"node ran $1\"\n");

    // Control: without the tools the same command is not there.
    auto off = jail.run({"-C", jail.ws(), "-p", no_tools(), "--", "fakecli"}, opts);
    EXPECT_EQ(off.status, 127) << describe(off);
}

TEST_F(Toolchains, RustupsProxiesFindTheirToolchainsAndCargosTokenStaysOut) {
    const std::string canary = jail.new_canary();
    jail.home_dir().write(".cargo/bin/cargo",
                          "#!/bin/sh\nexec \"$HOME/.rustup/toolchains/stable/bin/cargo\" \"$@\"\n", 0755);
    jail.home_dir().write(".rustup/toolchains/stable/bin/cargo", "#!/bin/sh\necho \"cargo $*\"\n", 0755);
    jail.home_dir().write(".cargo/credentials.toml", "[registry]\ntoken = \"" + canary + "\"\n", 0600);
    const auto opts = with_path(h(".cargo/bin") + ":/usr/bin:/bin");

    auto r = jail.run({"-C", jail.ws(), "--", "cargo", "build"}, opts);
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_EQ(r.out, "cargo build\n");
    // The token is not there, and cargo's caches are the sandbox's own (the private
    // home): written inside, never the host's.
    auto probe = jail.run({"-C", jail.ws(), "--", "sh", "-c",
                           "cat ~/.cargo/credentials.toml; mkdir -p ~/.cargo/registry && echo x > "
                           "~/.cargo/registry/planted && echo wrote"},
                          opts);
    EXPECT_FALSE(ajtest::contains(probe.out, canary)) << describe(probe);
    EXPECT_TRUE(ajtest::contains(probe.out, "wrote")) << describe(probe);
    struct stat st {};
    EXPECT_NE(::lstat(h(".cargo/registry/planted").c_str(), &st), 0) << "a cache write reached the host";
    // Control: the token is readable on the host, where the probe would find it.
    auto host = jail.host_sh("cat ~/.cargo/credentials.toml");
    EXPECT_TRUE(ajtest::contains(host.out, canary)) << describe(host);

    auto off = jail.run({"-C", jail.ws(), "-p", no_tools(), "--", "cargo", "build"}, opts);
    EXPECT_EQ(off.status, 127) << describe(off);
}

TEST_F(Toolchains, APipxProgramLinkedFromLocalBinRunsItsVirtualEnvironmentsPython) {
    if (::access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "needs /usr/bin/python3 (Debian's python3)";
    const std::string venv = ".local/share/pipx/venvs/greet";
    jail.home_dir().mkdir(venv + "/bin");
    link("/usr/bin/python3", venv + "/bin/python");
    jail.home_dir().write(venv + "/pyvenv.cfg", "home = /usr/bin\n");
    jail.home_dir().write(venv + "/bin/greet",
                          "#!" + h(venv + "/bin/python") + "\nimport sys\nprint('greet from', sys.prefix)\n", 0755);
    jail.home_dir().mkdir(".local/bin");
    link("../share/pipx/venvs/greet/bin/greet", ".local/bin/greet");
    const auto opts = with_path(h(".local/bin") + ":/usr/bin:/bin");

    auto r = jail.run({"-C", jail.ws(), "--", "greet"}, opts);
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_EQ(r.out, "greet from " + h(venv) + "\n");
    // ~/.local/share itself is not shown: only the environment.
    auto ls = jail.run({"-C", jail.ws(), "--", "ls", h(".local/share")}, opts);
    EXPECT_EQ(ls.out, "pipx\n") << describe(ls);

    auto off = jail.run({"-C", jail.ws(), "-p", no_tools(), "--", "greet"}, opts);
    EXPECT_EQ(off.status, 127) << describe(off);
}

TEST_F(Toolchains, PathInsideIsTheCallersLessWhatTheSandboxLacks) {
    jail.home_dir().write("bin/mytool", "#!/bin/sh\necho mytool\n", 0755);
    const auto opts = with_path(h("bin") + ":" + h(".nowhere") + ":.:/usr/local/bin:/usr/bin:/bin");
    auto r = jail.run({"-C", jail.ws(), "--", "sh", "-c", "echo \"$PATH\"; mytool"}, opts);
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_EQ(r.out, h("bin") + ":/usr/local/bin:/usr/bin:/bin\nmytool\n");
}

}  // namespace
}  // namespace ajit
