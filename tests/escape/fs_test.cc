// SPDX-License-Identifier: Apache-2.0
// Escape tests, filesystem: the old root and unplanned host paths (FS-01), writes
// outside the writable roots (FS-09), leaked fds and a cwd outside the root (FS-12).
#include "common.hpp"

#include <fcntl.h>
#include <pty.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <set>
#include <sstream>

using namespace ajesc;

namespace {
struct MountInfo {
    std::string dev, root, mount_point, fstype, source, options;
};

std::vector<MountInfo> parse_mountinfo(const std::string& text) {
    std::vector<MountInfo> v;
    for (const auto& l : ajtest::lines(text)) {
        auto w = words(l);
        auto sep = std::find(w.begin(), w.end(), "-");
        if (w.size() < 7 || sep == w.end() || sep + 2 >= w.end()) continue;
        v.push_back({w[2], w[3], w[4], *(sep + 1), *(sep + 2), w[5]});
    }
    return v;
}

bool under(const std::string& path, const std::string& dir) {
    if (dir == "/") return true;
    return path == dir || (path.size() > dir.size() && path.compare(0, dir.size(), dir) == 0 && path[dir.size()] == '/');
}

std::string top_component(const std::string& p) {
    auto b = p.find_first_not_of('/');
    if (b == std::string::npos) return {};
    return p.substr(b, p.find('/', b) - b);
}
}  // namespace

// FS-01: after pivot_root nothing of the old root is left: no old-root directory, no
// host root in mountinfo, no top-level entry and no mount the plan did not list, no
// unplanned host path reachable. (bubblewrap tests/test-run.sh "oldroot should not be
// visible"; minijail -P.)
TEST_F(Escape, FS01_OldRootAbsent) {
    std::vector<std::string> run_flags = cat(jail.base(), {});
    std::string error;
    auto plan = ajtest::planned_mounts(cat(run_flags, {"--", "true"}), {"HOME=" + jail.home()}, &error);
    ASSERT_FALSE(plan.empty()) << error;
    std::set<std::string> planned_tops;
    for (const auto& m : plan) planned_tops.insert(top_component(m.dst));

    // Unplanned host paths holding a marker: one under $TMPDIR, one beside the build.
    std::string marker = jail.new_canary();
    std::vector<std::unique_ptr<ajtest::TempDir>> outside;
    outside.push_back(std::make_unique<ajtest::TempDir>("aj-unplanned"));
    try {
        outside.push_back(std::make_unique<ajtest::TempDir>(
            "aj-unplanned", std::filesystem::path(AJ_HELPERS_DIR).parent_path().string()));
    } catch (const std::exception&) {
        // Not writable as this user: the $TMPDIR candidate still covers the check.
    }
    std::string probe;
    for (const auto& d : outside) {
        bool bound = false;
        for (const auto& m : plan)
            bound = bound || (m.kind != "tmpfs" && !m.dst.empty() && m.dst != "/" && under(d->path(), m.dst));
        if (bound) continue;  // legitimately visible through a planned bind
        d->write("marker", marker);
        probe += "cat " + d->path() + "/marker 2>/dev/null; ";
    }
    ASSERT_FALSE(probe.empty()) << "every candidate host path is under a planned bind";

    auto r = jail.sh("ls -A /; echo ---; cat /proc/self/mountinfo; echo ---; " + probe +
                     "for d in /oldroot /.oldroot /old_root /put_old /.pivot_root /mnt/oldroot /tmp/oldroot; do"
                     " test -e $d && echo oldroot=$d; done; true", {});
    ASSERT_EQ(r.status, 0) << describe(r);
    auto first = r.out.find("---\n");
    auto second = r.out.find("---\n", first + 4);
    ASSERT_NE(second, std::string::npos) << r.out;
    auto top = words(r.out.substr(0, first));
    auto inside = parse_mountinfo(r.out.substr(first + 4, second - first - 4));
    ASSERT_FALSE(inside.empty()) << r.out;

    EXPECT_FALSE(ajtest::contains(r.out, "oldroot=")) << r.out;
    EXPECT_FALSE(ajtest::contains(r.out, marker)) << "an unplanned host path is readable";
    for (const auto& e : top) EXPECT_TRUE(planned_tops.count(e)) << "unplanned entry /" << e;

    // The host's root filesystem (its "/" dentry) must not be mounted anywhere inside.
    auto host = parse_mountinfo(ajtest::read_file("/proc/self/mountinfo"));
    const MountInfo* host_root = nullptr;
    for (const auto& m : host)
        if (m.mount_point == "/") host_root = &m;
    ASSERT_NE(host_root, nullptr);
    for (const auto& m : inside) {
        EXPECT_FALSE(m.dev == host_root->dev && m.root == host_root->root)
            << "host root mounted at " << m.mount_point;
        bool planned = m.mount_point == "/";
        for (const auto& p : plan) planned = planned || m.mount_point == p.dst;
        planned = planned || under(m.mount_point, "/proc") || under(m.mount_point, "/dev");
        EXPECT_TRUE(planned) << "unplanned mount point " << m.mount_point << " (" << m.fstype << ")";
    }

    // Positive controls: on the host the same comparisons do find unplanned entries,
    // the host root, and the marker.
    size_t unplanned_on_host = 0;
    for (const auto& e : std::filesystem::directory_iterator("/"))
        unplanned_on_host += planned_tops.count(e.path().filename().string()) ? 0 : 1;
    EXPECT_GT(unplanned_on_host, 0u) << "control: the host root has only planned entries";
    auto c = jail.host_sh(probe);
    EXPECT_TRUE(ajtest::contains(c.out, marker)) << "control: the marker probe fails on the host";
}

// FS-09: system and home paths are read-only or absent; /tmp and HOME are private
// tmpfs, so what is written there never reaches the host. (nsjail Makefile test target;
// codex landlock.rs test_root_write.)
TEST_F(Escape, FS09_NoWritesOutsideWritableRoots) {
    std::string name = unique_name("aj-fs09-");
    std::string t = helper("trysys");
    std::vector<std::string> refused = {"/", "/usr", "/etc", "/var/tmp", "/opt", "/root", "/home", "/var", "/srv"};
    std::string script;
    for (const auto& d : refused)
        script += t + " create " + (d == "/" ? "" : d) + "/" + name + " >/dev/null; echo \"" + d + "=$?\";";
    script += t + " create /tmp/" + name + " >/dev/null; echo tmp=$?;";
    script += t + " create " + jail.home() + "/" + name + " >/dev/null; echo home=$?;";
    script += t + " create " + jail.home() + "/.ssh/" + name + " >/dev/null; echo ssh=$?;";
    script += t + " create " + jail.ws() + "/" + name + " >/dev/null; echo ws=$?;";
    auto r = jail.sh(script);
    ASSERT_EQ(r.status, 0) << describe(r);
    for (const auto& d : refused) {
        int e = std::atoi(field(r.out, d).c_str());
        EXPECT_TRUE(e == EROFS || e == EACCES || e == ENOENT) << d << ": errno " << field(r.out, d);
        std::string host_path = (d == "/" ? "" : d) + "/" + name;
        EXPECT_FALSE(ajtest::exists(host_path)) << host_path << " created on the host";
        std::remove(host_path.c_str());
    }
    EXPECT_FALSE(ajtest::exists("/tmp/" + name)) << "the sandbox /tmp is the host's";
    EXPECT_FALSE(ajtest::exists(jail.home() + "/" + name)) << "a HOME write reached the host home";
    EXPECT_FALSE(ajtest::exists(jail.home() + "/.ssh/" + name)) << "a write reached the host ~/.ssh";
    std::remove(("/tmp/" + name).c_str());

    // Positive controls: the probe writes, and the host-side check sees it, in the
    // workspace; on the host itself the probe can create a file in /var/tmp.
    EXPECT_EQ(field(r.out, "ws"), "0") << r.out;
    EXPECT_TRUE(ajtest::exists(jail.ws() + "/" + name));
    std::string host_var = "/var/tmp/" + name + "-control";
    auto c = jail.host_sh(t + " create " + host_var);
    EXPECT_EQ(c.status, 0) << describe(c);
    EXPECT_TRUE(ajtest::exists(host_var));
    std::remove(host_var.c_str());
}

namespace {
// The leaks of FS-12: the host root, the fake ~/.ssh as an O_PATH fd, the key itself,
// the fake home, an O_PATH fd on "/", a terminal, a pidfd on the caller, a socket.
struct Leaks {
    std::vector<int> fds;
    ajtest::RunOptions opts;
    explicit Leaks(const ajtest::Jail& jail) {
        add(open("/", O_RDONLY | O_DIRECTORY), 7);
        add(open((jail.home() + "/.ssh").c_str(), O_PATH | O_DIRECTORY), 8);
        add(open((jail.home() + "/.ssh/id_ed25519").c_str(), O_RDONLY), 9);
        add(open(jail.home().c_str(), O_RDONLY | O_DIRECTORY), 10);
        add(open("/", O_PATH | O_DIRECTORY), 11);
        // A terminal: the controlling tty when there is one, else a fresh pty slave.
        int tty = open("/dev/tty", O_RDWR | O_NOCTTY);
        if (tty < 0) {
            int master = -1;
            if (openpty(&master, &tty, nullptr, nullptr, nullptr) == 0) fds.push_back(master);
        }
        add(tty, 12);
        add(static_cast<int>(syscall(SYS_pidfd_open, getpid(), 0)), 13);  // a pidfd on the caller
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) throw std::runtime_error("socketpair");
        fds.push_back(sv[1]);
        add(sv[0], 14);
    }
    void add(int fd, int target) {
        if (fd < 0) throw std::runtime_error("open for a leak failed");
        fds.push_back(fd);
        opts.leak_fds.emplace_back(fd, target);
    }
    ~Leaks() {
        for (int fd : fds) close(fd);
    }
};
}  // namespace

// FS-12 (CVE-2024-21626 class): descriptors the caller leaked into agentjail never
// reach the command, so nothing can be read through them. (runc create.bats "detect fd
// leak"; bubblewrap fdwalk(close_extra_fds).)
TEST_F(Escape, FS12_LeakedFdsDoNotReachTheCommand) {
    Leaks leaks(jail);
    auto r = jail.run(cat(jail.base(), {"--", helper("fdprobe")}), leaks.opts);
    EXPECT_EQ(r.status, 0) << "descriptors above 2 reached the command\n" << describe(r);
    EXPECT_TRUE(ajtest::contains(r.out, "extra 0")) << r.out;
    auto s = jail.sh("ls -l /proc/self/fd; cat /proc/self/fd/8/id_ed25519 /proc/self/fd/9; "
                     "(cd /proc/self/fd/7 && ls ../../..); (cd /proc/self/fd/10 && cat .ssh/id_ed25519); true",
                     {}, leaks.opts);
    EXPECT_EQ(s.status, 0) << describe(s);

    // Positive control: the same probe with the same leaks, run on the host, reads the key.
    auto c = ajtest::run_with({helper("fdprobe")}, leaks.opts);
    EXPECT_TRUE(ajtest::contains(c.out, jail.secret("home/.ssh/id_ed25519")))
        << "control: fdprobe cannot read through leaked fds\n" << describe(c);
}

// FS-12: a cwd under /proc/self/fd/ would start the command in a host directory
// outside the new root; it is refused before clone with 125.
TEST_F(Escape, FS12_CwdUnderProcSelfFdRejected) {
    Leaks leaks(jail);
    for (const char* cwd : {"/proc/self/fd/10", "/proc/self/fd/7", "/proc/thread-self/fd/10"}) {
        auto r = jail.run(cat(jail.base(), {"--cwd", cwd, "--", "/bin/sh", "-c",
                                            "pwd; cat .ssh/id_ed25519; ls -A ../../.."}),
                          leaks.opts);
        EXPECT_EQ(r.status, 125) << "--cwd " << cwd << " accepted\n" << describe(r);
    }
    // Positive control: on the host a cwd through the leaked fd does reach the key.
    auto c = jail.host_sh("cd /proc/self/fd/10 && cat .ssh/id_ed25519", leaks.opts);
    EXPECT_TRUE(ajtest::contains(c.out, jail.secret("home/.ssh/id_ed25519"))) << describe(c);
}

// FS-12: the caller's cwd (a host directory the plan does not mount) is not inherited:
// the command starts inside the new root, and getcwd never reports "(unreachable)".
TEST_F(Escape, FS12_CwdIsInsideTheNewRoot) {
    ajtest::TempDir outside("aj-callercwd");
    std::string marker = jail.new_canary();
    outside.write("marker", marker);
    ajtest::RunOptions opts;
    opts.cwd = outside.path();
    auto r = jail.run(cat(jail.base(), {"--", "/bin/sh", "-c",
                                        helper("trysys") + " getcwd; echo link=$(readlink /proc/self/cwd); cat marker; ls -A .. ../.."}),
                      opts);
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_TRUE(ajtest::contains(r.out, "cwd " + jail.ws() + "\n")) << r.out;
    EXPECT_EQ(field(r.out, "link"), jail.ws());
    EXPECT_FALSE(ajtest::contains(r.out, "unreachable")) << r.out;
    EXPECT_FALSE(ajtest::contains(r.out, marker));
    // Positive control: the probe reports the cwd it runs in.
    auto c = ajtest::run_with({helper("trysys"), "getcwd"}, opts);
    EXPECT_TRUE(ajtest::contains(c.out, "cwd " + outside.path() + "\n")) << describe(c);
}
