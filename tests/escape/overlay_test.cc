// SPDX-License-Identifier: Apache-2.0
// Overlay mode's escape tests: links the run leaves are applied as links and
// never followed, an apply through a link the workspace gained meanwhile is
// refused, and a hidden file stays hidden when the host rewrites it mid-run.
#include "common.hpp"
#include "../integration/overlay_support.hpp"

#include <sys/stat.h>

namespace {

using ajesc::describe;
using ajesc::Escape;
using ajtest::contains;
using ajtest::exists;
using ajtest::read_file;

std::string only_run(const std::string& home) {
    auto ids = ajov::run_ids(home);
    EXPECT_EQ(ids.size(), 1u);
    return ids.empty() ? std::string("<none>") : ids.back();
}

bool is_symlink(const std::string& path) {
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode);
}

// The run plants `keys -> ~/.ssh` and writes through it inside (where ~ is a
// throwaway tmpfs). Applied, keys is a link on the host; nothing was written
// through it into the real ~/.ssh.
TEST_F(Escape, OVL01_SymlinkToSshIsAppliedAsALinkNeverFollowed) {
    const std::string ssh = jail.home() + "/.ssh";
    auto r = jail.sh("ln -s \"$HOME/.ssh\" keys && mkdir -p \"$HOME/.ssh\" && "
                     "echo 'ssh-ed25519 AAAA attacker' > keys/authorized_keys",
                     {"--workspace-mode", "overlay"});
    ASSERT_EQ(r.status, 0) << describe(r);
    auto a = jail.run({"apply", only_run(jail.home())});
    ASSERT_EQ(a.status, 0) << describe(a);
    EXPECT_TRUE(is_symlink(jail.ws() + "/keys"));
    EXPECT_EQ(ajesc::host_link(jail.ws() + "/keys"), ssh);
    EXPECT_FALSE(exists(ssh + "/authorized_keys"));
    // Positive control: the link leads to the real ~/.ssh on the host, so a
    // write that followed it would have landed there.
    EXPECT_TRUE(exists(jail.ws() + "/keys/id_ed25519"));
}

// Between the run and the apply the workspace's `sub` becomes a link to a
// directory outside it; the run's sub/new.txt must not be written through it,
// not even with --force.
TEST_F(Escape, OVL02_ApplyThroughALinkGainedMeanwhileIsRefused) {
    jail.ws_dir().mkdir("sub");
    ajtest::TempDir outside("aj-ov-outside");
    auto r = jail.sh("echo planted > sub/new.txt", {"--workspace-mode", "overlay"});
    ASSERT_EQ(r.status, 0) << describe(r);
    const std::string id = only_run(jail.home());
    ASSERT_EQ(::rename((jail.ws() + "/sub").c_str(), (jail.ws() + "/sub.real").c_str()), 0);
    ASSERT_EQ(::symlink(outside.path().c_str(), (jail.ws() + "/sub").c_str()), 0);
    // Positive control: through the host's name, sub/ now is the outside directory.
    auto probe = jail.host_sh("echo probe > '" + jail.ws() + "/sub/probe.txt'");
    ASSERT_EQ(probe.status, 0) << describe(probe);
    ASSERT_TRUE(exists(outside.path() + "/probe.txt"));

    for (const char* flag : {"", "--force"}) {
        std::vector<std::string> args{"apply"};
        if (*flag != '\0') args.push_back(flag);
        args.push_back(id);
        auto a = jail.run(args);
        EXPECT_EQ(a.status, 1) << flag << describe(a);
        EXPECT_TRUE(contains(a.err, "symlink")) << describe(a);
        EXPECT_FALSE(exists(outside.path() + "/new.txt")) << flag;
        EXPECT_FALSE(exists(jail.ws() + "/sub.real/new.txt")) << flag;
    }
}

// A hidden .env stays masked inside, also when the host rewrites it during the
// run with sed -i (a new inode under the same name, which drops a mask that sits
// on the host's name). In overlay mode the mask sits on the overlay's own entry.
TEST_F(Escape, OVL03_HiddenEnvStaysHiddenWhenHostRewritesIt) {
    ajtest::TempDir sync("aj-ov-sync");
    ::chmod(sync.path().c_str(), 0777);
    const std::string fresh = jail.new_canary();
    const std::string late = ajesc::unique_name("late-");
    // The probe: read before, wait for the host's rewrite, read again; the same
    // for a file that is not hidden (the positive control: the probe sees host
    // changes that happen during the run).
    const std::string script =
        "cat .env; cat visible.txt > /dev/null; touch " + sync.path() + "/ready; "
        "i=0; while [ ! -e " + sync.path() + "/go ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done; "
        "echo ---; cat .env; cat late.txt";
    jail.ws_dir().write("visible.txt", "v1\n");
    ajtest::RunOptions opts;
    opts.env = {"HOME=" + jail.home()};
    std::vector<std::string> args = jail.base();
    for (const char* f : {"--workspace-mode", "overlay", "--rw"}) args.push_back(f);
    args.push_back(sync.path());
    for (const char* f : {"--", "/bin/sh", "-c"}) args.push_back(f);
    args.push_back(script);
    ajtest::Child child(ajesc::cat({ajtest::agentjail_bin()}, args), opts);
    ASSERT_TRUE(ajtest::wait_for_file(sync.path() + "/ready", 20000));
    // The user's own edit of the secret, as sed -i does it (write aside, rename over).
    auto sed = jail.host_sh("sed -i 's/^.*$/KEY=" + fresh + "/' '" + jail.ws() + "/.env' && echo " + late +
                            " > '" + jail.ws() + "/late.txt'");
    ASSERT_EQ(sed.status, 0) << describe(sed);
    ASSERT_TRUE(contains(read_file(jail.ws() + "/.env"), fresh));
    jail.host_sh("touch " + sync.path() + "/go");
    auto r = child.wait(30000);
    jail.record(r);
    EXPECT_EQ(r.status, 0) << describe(r);
    EXPECT_FALSE(contains(r.out, fresh)) << describe(r);
    EXPECT_FALSE(contains(r.out, jail.secret("ws/.env"))) << describe(r);
    // Positive control: a name the host made during the run is seen inside.
    EXPECT_TRUE(contains(r.out, late)) << describe(r);
}

}  // namespace
