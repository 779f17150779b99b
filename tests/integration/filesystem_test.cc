// SPDX-License-Identifier: Apache-2.0
// Integration: the constructed root: what is writable, what is hidden, the old root,
// and the --ro/--rw/--tmpfs/--cwd flags, checked from inside and on the host.
#include "common.hpp"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

using ajit::describe;
using ajit::field;
using ajit::helper;
using ajit::Sandbox;
using ajit::words;

namespace {
bool is_refusal(const std::string& rc) {
    int e = std::atoi(rc.c_str());
    return e == EROFS || e == EACCES || e == ENOENT;
}
}  // namespace

TEST_F(Sandbox, NothingWritableOutsideWorkspaceTmpAndHome) {
    std::string name = ajit::unique_name("aj-probe-");
    std::string t = helper("trysys");
    std::string script;
    for (const char* d : {"/", "/usr", "/etc", "/var/tmp"})
        script += t + " create " + std::string(d == std::string("/") ? "" : d) + "/" + name +
                  " >/dev/null; echo \"" + d + "=$?\";";
    script += t + " create " + jail.ws() + "/" + name + " >/dev/null; echo ws=$?;";
    script += t + " create /tmp/" + name + " >/dev/null; echo tmp=$?;";
    script += t + " create \"$HOME/" + name + "\" >/dev/null; echo home=$?;";
    auto r = jail.sh(script);
    ASSERT_EQ(r.status, 0) << describe(r);
    for (const char* d : {"/", "/usr", "/etc", "/var/tmp"})
        EXPECT_TRUE(is_refusal(field(r.out, d))) << d << " is writable (errno " << field(r.out, d) << ")";
    EXPECT_EQ(field(r.out, "ws"), "0") << r.out;
    EXPECT_EQ(field(r.out, "tmp"), "0") << r.out;
    EXPECT_EQ(field(r.out, "home"), "0") << r.out;

    // The workspace write landed on the host, owned by the caller.
    struct stat st{};
    ASSERT_EQ(stat((jail.ws() + "/" + name).c_str(), &st), 0) << "workspace write not on the host";
    EXPECT_EQ(st.st_uid, getuid());
    EXPECT_EQ(st.st_gid, getgid());
    // /tmp and HOME are private: nothing reaches the host.
    EXPECT_FALSE(ajtest::exists("/tmp/" + name)) << "sandbox /tmp is the host's";
    EXPECT_FALSE(ajtest::exists(jail.home() + "/" + name)) << "sandbox HOME is the host's";
    for (const char* d : {"/usr/", "/etc/", "/var/tmp/", "/"}) {
        std::string p = std::string(d) + name;
        EXPECT_FALSE(ajtest::exists(p)) << p << " written on the host";
        std::remove(p.c_str());
    }
    std::remove(("/tmp/" + name).c_str());
}

TEST_F(Sandbox, HiddenPathsUnreadableFromFlagsAndDefaultPolicy) {
    std::string dir_canary = jail.new_canary(), file_canary = jail.new_canary();
    jail.plant("secretdir/inner.txt", dir_canary + "\n");
    jail.plant("secret.txt", file_canary + "\n");
    std::string ws = jail.ws();
    std::string script = "cat " + ws + "/secret.txt; echo file=$?; ls -A " + ws + "/secretdir; cat " + ws +
                         "/secretdir/inner.txt; echo dir=$?; cat " + ws + "/.env; cat " + ws +
                         "/.env.local; ls -la " + ws + "; true";
    auto r = jail.sh(script, {"--hide", ws + "/secretdir", "--hide", ws + "/secret.txt"});
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_FALSE(ajtest::contains(r.out, file_canary)) << "--hide of a file does not hide it";
    EXPECT_FALSE(ajtest::contains(r.out, dir_canary)) << "--hide of a directory does not hide it";
    EXPECT_FALSE(ajtest::contains(r.out, jail.secret("ws/.env"))) << "{workspace}/.env readable";
    EXPECT_FALSE(ajtest::contains(r.out, jail.secret("ws/.env.local"))) << "{workspace}/.env.local readable";
    // The hidden paths are still unchanged on the host.
    EXPECT_EQ(ajtest::read_file(ws + "/secret.txt"), file_canary + "\n");
    EXPECT_EQ(ajtest::read_file(ws + "/.env"), "API_KEY=" + jail.secret("ws/.env") + "\n");

    // Positive control: without the hides (and with a policy that hides nothing), the
    // same script prints every canary.
    auto c = jail.control({"-p", "minimal", "--ro", ws, "--ro", AJ_HELPERS_DIR, "--", "/bin/sh", "-c", script});
    EXPECT_TRUE(ajtest::contains(c.out, file_canary)) << describe(c);
    EXPECT_TRUE(ajtest::contains(c.out, dir_canary)) << describe(c);
    EXPECT_TRUE(ajtest::contains(c.out, jail.secret("ws/.env"))) << describe(c);
}

TEST_F(Sandbox, OldRootAndUnplannedHostPathsUnreachable) {
    ajtest::TempDir outside("aj-outside");
    std::string marker = jail.new_canary();
    outside.write("marker", marker);
    auto r = jail.sh("ls -A /; echo ---; cat /proc/self/mountinfo; echo ---; cat " + outside.path() +
                     "/marker; echo marker=$?; ls -A /proc/self/root/ | wc -l");
    ASSERT_EQ(r.status, 0) << describe(r);
    auto top = words(r.out.substr(0, r.out.find("---")));
    for (const auto& e : top) {
        EXPECT_EQ(e.find("old"), std::string::npos) << "old root left at /" << e;
        EXPECT_NE(e, ".pivot_root");
        EXPECT_NE(e, "put_old");
    }
    EXPECT_NE(field(r.out, "marker"), "0") << "an unplanned host path is readable";
    EXPECT_FALSE(ajtest::contains(r.out, marker));
    // Positive control: the host sees the marker.
    EXPECT_EQ(ajtest::read_file(outside.path() + "/marker"), marker);
}

TEST_F(Sandbox, RoAndRwBindsWithAndWithoutDestination) {
    ajtest::TempDir ro("aj-ro"), rw("aj-rw");
    ro.write("f", "ro-content\n");
    std::string t = helper("trysys");
    auto r = jail.sh("cat /mnt/aj-ro/f; " + t + " create /mnt/aj-ro/new >/dev/null; echo ro_dst=$?;"
                     "cat " + ro.path() + "/f; " + t + " create " + ro.path() + "/new >/dev/null; echo ro_same=$?;"
                     "echo data > /mnt/aj-rw/new && echo rw_dst=ok; echo more > " + rw.path() + "/same && echo rw_same=ok",
                     {"--ro", ro.path() + ":/mnt/aj-ro", "--ro", ro.path(), "--rw", rw.path() + ":/mnt/aj-rw",
                      "--rw", rw.path()});
    ASSERT_EQ(r.status, 0) << describe(r);
    auto first = r.out.find("ro-content");
    ASSERT_NE(first, std::string::npos) << r.out;
    EXPECT_NE(r.out.find("ro-content", first + 1), std::string::npos) << "--ro SRC (same path) not readable\n" << r.out;
    EXPECT_EQ(std::atoi(field(r.out, "ro_dst").c_str()), EROFS) << r.out;
    EXPECT_EQ(std::atoi(field(r.out, "ro_same").c_str()), EROFS) << r.out;
    EXPECT_EQ(field(r.out, "rw_dst"), "ok") << r.out;
    EXPECT_EQ(field(r.out, "rw_same"), "ok") << r.out;
    EXPECT_FALSE(ajtest::exists(ro.path() + "/new"));
    EXPECT_EQ(ajtest::read_file(rw.path() + "/new"), "data\n");
    EXPECT_EQ(ajtest::read_file(rw.path() + "/same"), "more\n");
}

TEST_F(Sandbox, TmpfsFlagGivesAnEmptyPrivateWritableDirWithSize) {
    jail.ws_dir().write("cache/host.txt", "host\n");
    std::string ws = jail.ws();
    auto r = jail.sh("echo scratch=$(ls -A /aj-scratch | wc -l); echo x > /aj-scratch/f && echo wrote=$(cat /aj-scratch/f);"
                     "echo cache=$(ls -A " + ws + "/cache | wc -l); echo y > " + ws + "/cache/inside;"
                     "head -c 3000000 /dev/zero > /aj-small/big 2>/dev/null; echo small=$?",
                     {"--tmpfs", "/aj-scratch", "--tmpfs", "/aj-small:1M", "--tmpfs", ws + "/cache"});
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_EQ(field(r.out, "scratch"), "0");
    EXPECT_EQ(field(r.out, "wrote"), "x");
    EXPECT_EQ(field(r.out, "cache"), "0") << "the tmpfs over the workspace dir shows host files";
    EXPECT_NE(field(r.out, "small"), "0") << "a 1M tmpfs took 3 MB";
    EXPECT_FALSE(ajtest::exists(ws + "/cache/inside")) << "a tmpfs write reached the host";
    EXPECT_TRUE(ajtest::exists(ws + "/cache/host.txt"));
}

TEST_F(Sandbox, CwdDefaultsToWorkspaceAndFollowsTheFlag) {
    jail.ws_dir().mkdir("sub");
    auto def = jail.sh("pwd");
    ASSERT_EQ(def.status, 0) << describe(def);
    EXPECT_EQ(ajtest::trim(def.out), jail.ws());
    auto tmp = jail.sh("pwd", {"--cwd", "/tmp"});
    ASSERT_EQ(tmp.status, 0) << describe(tmp);
    EXPECT_EQ(ajtest::trim(tmp.out), "/tmp");
    auto sub = jail.sh("pwd", {"--cwd", jail.ws() + "/sub"});
    ASSERT_EQ(sub.status, 0) << describe(sub);
    EXPECT_EQ(ajtest::trim(sub.out), jail.ws() + "/sub");
}

// Direct mode's view needs /dev/fuse. Where it is missing (a container started without
// the device), a run in a project fails closed: exit 125, one line naming /dev/fuse
// and both fixes (pass the device, or --view mounts), and nothing made in the project.
// The test hides /dev/fuse in a mount namespace of its own (a user namespace's as a
// user) with the rest of /dev kept. Control: --view mounts runs there.
TEST_F(Sandbox, WithoutDevFuseTheViewRefusesAndSaysHowToRun) {
    const std::string script =
        "d='" + jail.home() + "/host-dev' && mkdir \"$d\" && mount --rbind /dev \"$d\" && mount -t tmpfs -o mode=0755 tmpfs /dev && "
        "for n in null zero full random urandom tty ptmx; do touch /dev/$n && mount --bind \"$d/$n\" /dev/$n || exit 90; done; "
        "mkdir /dev/pts /dev/shm && mount --bind \"$d/pts\" /dev/pts && mount -t tmpfs tmpfs /dev/shm || exit 90; "
        "test -e /dev/fuse && exit 91; "
        "'" + ajtest::agentjail_bin() + "' -C '" + jail.ws() + "' -- true; echo view=$?; "
        "'" + ajtest::agentjail_bin() + "' -C '" + jail.ws() + "' --view mounts -- true; echo mounts=$?";
    std::vector<std::string> argv = {"unshare", "-m", "--propagation", "private", "/bin/sh", "-c", script};
    if (::geteuid() != 0) argv.insert(argv.begin() + 1, "-Ur");
    const auto before = ajtest::dir_entries(jail.ws());
    auto r = ajtest::run(argv, {"HOME=" + jail.home(), "PATH=/usr/bin:/bin"});
    ASSERT_NE(r.status, 90) << "could not hide /dev/fuse here\n" << describe(r);
    ASSERT_NE(r.status, 91) << "/dev/fuse is still there\n" << describe(r);
    EXPECT_EQ(field(r.out, "view"), "125") << describe(r);
    EXPECT_EQ(field(r.out, "mounts"), "0") << "control: the namespace runs the mounts view\n" << describe(r);
    const auto lines = ajtest::lines(r.err);
    const std::string first = lines.empty() ? "" : lines.front();
    EXPECT_TRUE(ajtest::contains(first, "/dev/fuse") && ajtest::contains(first, "--device /dev/fuse") &&
                ajtest::contains(first, "--view mounts"))
        << describe(r);
    EXPECT_EQ(ajtest::dir_entries(jail.ws()), before) << "the refused run left something in the project";
}

TEST_F(Sandbox, HomeIsThePrivateEmptyCallersHomePath) {
    auto r = jail.sh("echo home=$HOME; echo entries=$(ls -A \"$HOME\" | wc -l); echo x > \"$HOME/f\" && echo write=ok");
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_EQ(field(r.out, "home"), jail.home());
    EXPECT_EQ(field(r.out, "entries"), "0") << "the host home's files are visible";
    EXPECT_EQ(field(r.out, "write"), "ok");
    EXPECT_FALSE(ajtest::exists(jail.home() + "/f"));
}

// A workspace holding many repositories (an earlier run may plant them: issue 25)
// needs, through the mounts view, a bind for each of their hidden and protected names:
// 150 repositories are over a thousand, more than the usual limit of 1024 descriptors.
// The sandbox clones and attaches one bind at a time, so even a hard limit of 256
// builds the root, the nested repositories' configs stay read-only, and the command
// gets the caller's limits. Control: the plan has more binds than that limit, so a
// build that held a descriptor for each (as it did) could not. The default view makes
// no bind below the workspace and holds the same under the same limit.
TEST_F(Sandbox, ManyRepositoriesInTheWorkspaceNeedFewDescriptors) {
    std::string plant = "cd '" + jail.ws() + "' && git init -q . && for i in $(seq 1 150); do "
                        "mkdir -p r$i/.git/refs r$i/.git/objects && echo 'ref: refs/heads/main' > r$i/.git/HEAD && "
                        "printf '[core]\\n' > r$i/.git/config; done && echo PLANTED";
    auto planted = jail.host_sh(plant);
    ASSERT_TRUE(ajtest::contains(planted.out, "PLANTED")) << describe(planted);
    std::string error;
    const auto mounts =
        ajtest::planned_mounts({"-C", jail.ws(), "--view", "mounts", "--", "true"}, {"HOME=" + jail.home()}, &error);
    ASSERT_TRUE(error.empty()) << error;
    EXPECT_GT(mounts.size(), 256u) << "control: the plan has fewer binds than the limit, which proves nothing";
    for (const char* view : {"mounts", "fuse"}) {
        const std::string run = "'" + ajtest::agentjail_bin() + "' -C '" + jail.ws() + "' --view " + view +
                                " -- sh -c 'ulimit -Sn; ulimit -Hn; echo x >> r77/.git/config 2>/dev/null; echo write=$?'";
        auto r = jail.host_sh("ulimit -n 256 && " + run);
        ASSERT_EQ(r.status, 0) << view << ": " << describe(r);
        const auto lines = ajtest::lines(r.out);
        ASSERT_EQ(lines.size(), 3u) << view << ": " << r.out;
        EXPECT_EQ(lines[0], "256") << view << ": the command did not get the caller's soft limit back";
        EXPECT_EQ(lines[1], "256") << view << ": the command did not get the caller's hard limit";
        EXPECT_NE(lines[2], "write=0") << view << ": a nested repository's config was written";
        EXPECT_EQ(ajtest::read_file(jail.ws() + "/r77/.git/config"), "[core]\n") << view;
    }
}

namespace {

// A chain of `depth` directories of 15-character names below dir; returns the
// deepest one's descriptor (the caller closes it). Made with *at calls: the path
// grows past PATH_MAX.
int deep_chain(const std::string& dir, int depth) {
    int fd = ::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    for (int i = 0; i < depth && fd >= 0; ++i) {
        const std::string name = "deep-" + std::to_string(1000000000 + i);
        if (::mkdirat(fd, name.c_str(), 0755) != 0 && errno != EEXIST) {
            ::close(fd);
            return -1;
        }
        int next = ::openat(fd, name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        ::close(fd);
        fd = next;
    }
    return fd;
}

}  // namespace

// Work outside the limits (issue 25): a run fills its workspace with hard links deep
// down a long path, which the next run's walk at start and the check after it read.
// agentjail holds each entry's name, not its path spelled out: its own memory stays
// small (was about 3 KiB per link here, a gigabyte for 2.3 MB of links).
TEST_F(Sandbox, DeepHardLinksInTheWorkspaceCostAgentjailOnlyTheirNames) {
    // agentjail's largest resident set in one run of it in `ws`, in KiB: measured by a
    // process of its own that only runs it, so the figure is that run's alone.
    const std::string measure =
        "import resource, subprocess, sys\n"
        "r = subprocess.run([sys.argv[1], '-C', sys.argv[2], '--', '/bin/true'])\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss if r.returncode == 0 else -1)\n";
    ajtest::TempDir empty;
    auto rss = [&](const std::string& ws) {
        auto r = ajtest::run({"python3", "-c", measure, ajtest::agentjail_bin(), ws}, {"HOME=" + jail.home(), "PATH=/usr/bin:/bin"});
        EXPECT_EQ(r.status, 0) << describe(r);
        return std::atol(r.out.c_str());
    };
    // The control: the same run in an empty workspace (what a build with sanitizers
    // takes is more, for both).
    const long base = rss(empty.path());
    ASSERT_GT(base, 0);
    int deep = deep_chain(jail.ws(), 200);
    ASSERT_GE(deep, 0) << std::strerror(errno);
    int f = ::openat(deep, "f", O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
    ASSERT_GE(f, 0);
    ::close(f);
    for (int i = 0; i < 20000; ++i)
        ASSERT_EQ(::linkat(deep, "f", deep, ("l" + std::to_string(i)).c_str(), 0), 0) << std::strerror(errno);
    ::close(deep);
    const long linked = rss(jail.ws());
    ASSERT_GT(linked, 0);
    // The paths spelled out would be 20,000 x 3 KiB, twice (measured: +124 MB); the
    // names are about 1 MB.
    EXPECT_LT(linked - base, 16 * 1024) << "agentjail's largest resident set, KiB: " << base << " in an empty workspace, "
                                        << linked << " with the links";
}

// Deeper than the walk goes (it holds a descriptor per level): the run works, the plan
// says where its ** patterns stop, and the check after the run names the directory.
TEST_F(Sandbox, ATreeDeeperThanTheWalkIsNamedNotFatal) {
    int deep = deep_chain(jail.ws(), 1100);
    ASSERT_GE(deep, 0) << std::strerror(errno);
    ::close(deep);
    auto r = jail.run({"-v", "-C", jail.ws(), "--", "/bin/true"});
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_TRUE(ajtest::contains(r.err, "the ** patterns do not look below")) << r.err;
    EXPECT_TRUE(ajtest::contains(r.err, "deeper than the post-run check looks")) << r.err;
    // Positive control: at the depth the walk goes, neither is said.
    ASSERT_EQ(jail.host_sh("rm -rf '" + jail.ws() + "/deep-1000000000'").status, 0);
    deep = deep_chain(jail.ws(), 100);
    ASSERT_GE(deep, 0);
    ::close(deep);
    auto shallow = jail.run({"-v", "-C", jail.ws(), "--", "/bin/true"});
    ASSERT_EQ(shallow.status, 0) << describe(shallow);
    EXPECT_FALSE(ajtest::contains(shallow.err, "do not look below")) << shallow.err;
}
