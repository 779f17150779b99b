// SPDX-License-Identifier: Apache-2.0
// Escape tests, a root run is no weaker than a user run: the host's credential files
// under /etc (SEC-01), the host's device inodes behind /dev (EXP-05) and the kernel
// files only root may read in /proc (EXP-01). Each runs as whoever runs the tier;
// scripts/test.sh runs it as root and as a user and compares the two.
#include "common.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>

using namespace ajesc;

namespace {

bool is_root() { return geteuid() == 0; }

bool regular_file(const std::string& path) {
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// A file planted on the host for one test and removed again, whatever happens.
struct Planted {
    std::string path;
    Planted(std::string p, const std::string& content) : path(std::move(p)) {
        int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        if (fd < 0) throw std::runtime_error("cannot plant " + path);
        bool ok =
            ::write(fd, content.data(), content.size()) == static_cast<ssize_t>(content.size());
        ::close(fd);
        if (!ok) throw std::runtime_error("cannot write " + path);
    }
    ~Planted() { std::remove(path.c_str()); }
    Planted(const Planted&) = delete;
    Planted& operator=(const Planted&) = delete;
};

// Reads each file with the probe and prints "R<i>=" plus its exit status (the errno),
// then the first 64 bytes on their own line after "C<i>=" (empty when unreadable).
std::string read_each(const std::vector<std::string>& files) {
    std::string t = helper("trysys"), s;
    for (size_t i = 0; i < files.size(); ++i) {
        std::string n = std::to_string(i);
        s += t + " read '" + files[i] + "' >/dev/null 2>&1; echo R" + n + "=$?; echo C" + n +
             "=$(head -c 64 '" + files[i] + "' 2>/dev/null | tr -dc '[:print:]');";
    }
    return s + " true";
}

}  // namespace

// SEC-01 for the host's own secrets: /etc/shadow, /etc/gshadow, their '-' backups and
// any other copy (shadow.*, gshadow~...), sudoers and the ssh host keys are unreadable
// inside under both minimal and default, even for root, who can read them outside.
// As root the test also plants a backup-style copy (/etc/shadow.aj-...) holding a
// canary: the hide is a class (a glob), not a list of names.
TEST_F(Escape, SEC01_EtcCredentialsHiddenEvenFromRoot) {
    std::vector<std::string> files;
    for (const char* f : {"/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-",
                          "/etc/sudoers", "/etc/security/opasswd", "/etc/ssh/ssh_host_rsa_key",
                          "/etc/ssh/ssh_host_ecdsa_key", "/etc/ssh/ssh_host_ed25519_key"})
        if (regular_file(f)) files.emplace_back(f);
    if (files.empty()) GTEST_SKIP() << "no shadow, sudoers or ssh host key file on this host";

    std::vector<std::unique_ptr<Planted>> planted;
    std::vector<std::string> canaries;
    if (is_root()) {
        for (const char* base : {"/etc/shadow.aj-", "/etc/gshadow~aj-", "/etc/sudoers.aj-"}) {
            std::string canary = jail.new_canary();
            try {
                planted.push_back(
                    std::make_unique<Planted>(base + unique_name(""), "root:" + canary + ":\n"));
            } catch (const std::exception& e) {
                // A read-only /etc (some CI images): the host's own files still count.
                std::cout << "[   NOTE   ] " << e.what() << ": testing the host's files only\n";
                break;
            }
            canaries.push_back(canary);
            files.push_back(planted.back()->path);
        }
    }
    const std::string script = read_each(files);
    for (const std::string policy : {"minimal", "default"}) {
        auto r =
            policy == "minimal"
                ? jail.run({"-p", "minimal", "--ro", AJ_HELPERS_DIR, "--", "/bin/sh", "-c", script})
                : jail.sh(script);
        ASSERT_EQ(r.status, 0) << policy << "\n" << describe(r);
        for (size_t i = 0; i < files.size(); ++i) {
            std::string n = std::to_string(i);
            EXPECT_NE(field(r.out, "R" + n), "0") << policy << ": " << files[i] << " is readable\n"
                                                  << r.out;
            EXPECT_EQ(field(r.out, "C" + n), "") << policy << ": " << files[i] << "\n" << r.out;
        }
        for (const auto& c : canaries) EXPECT_FALSE(ajtest::contains(r.out, c)) << policy;
    }

    // Positive control: on the host every file exists, and whoever may read it does
    // (root: all of them, the planted canaries included).
    auto c = jail.host_sh(script);
    for (size_t i = 0; i < files.size(); ++i) {
        EXPECT_TRUE(regular_file(files[i])) << files[i];
        if (is_root()) {
            EXPECT_EQ(field(c.out, "R" + std::to_string(i)), "0")
                << "control: root cannot read " << files[i] << " on the host\n"
                << c.out;
        }
    }
    for (const auto& k : canaries)
        EXPECT_TRUE(ajtest::contains(c.out, k)) << "control: the planted copy is unreadable\n"
                                                << c.out;
    if (!is_root())
        std::cout << "[   NOTE   ] not root: the host files are unreadable here too; the root "
                     "pass reads them and plants backup copies\n";
}

namespace {
struct NodeState {
    struct stat st {};
    bool ok = false;
};

NodeState state_of(const char* path) {
    NodeState n;
    n.ok = ::lstat(path, &n.st) == 0;
    return n;
}

bool same(const NodeState& a, const NodeState& b) {
    return a.ok && b.ok && a.st.st_ino == b.st.st_ino && a.st.st_mode == b.st.st_mode &&
           a.st.st_uid == b.st.st_uid && a.st.st_gid == b.st.st_gid &&
           a.st.st_mtim.tv_sec == b.st.st_mtim.tv_sec &&
           a.st.st_mtim.tv_nsec == b.st.st_mtim.tv_nsec &&
           a.st.st_ctim.tv_sec == b.st.st_ctim.tv_sec &&
           a.st.st_ctim.tv_nsec == b.st.st_ctim.tv_nsec;
}

std::string show(const NodeState& n) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "mode 0%o uid %u gid %u mtime %lld.%09ld ctime %lld.%09ld",
                  static_cast<unsigned>(n.st.st_mode & 07777), static_cast<unsigned>(n.st.st_uid),
                  static_cast<unsigned>(n.st.st_gid), static_cast<long long>(n.st.st_mtim.tv_sec),
                  n.st.st_mtim.tv_nsec, static_cast<long long>(n.st.st_ctim.tv_sec),
                  n.st.st_ctim.tv_nsec);
    return buf;
}

// Puts a host device node back the way it was, should a broken sandbox change it.
struct RestoreNode {
    const char* path;
    NodeState before;
    ~RestoreNode() {
        NodeState now = state_of(path);
        if (!before.ok || same(before, now)) return;
        (void)::chmod(path, before.st.st_mode & 07777);
        (void)::chown(path, before.st.st_uid, before.st.st_gid);
        timespec times[2] = {before.st.st_atim, before.st.st_mtim};
        (void)::utimensat(AT_FDCWD, path, times, 0);
    }
};

const char* const kMetadataOps[] = {"chmod", "chown_keep", "chown_root",
                                    "utime", "xattr",      "truncate"};

// The metadata calls on PATH, each printed as "<tag>_<op>=<errno>".
std::string metadata_ops(const std::string& path, const std::string& tag) {
    std::string t = helper("trysys"), p = "'" + path + "'";
    return t + " chmod " + p + " 600 >/dev/null; echo " + tag + "_chmod=$?; " + t + " chown " + p +
           " -1 -1 >/dev/null; echo " + tag + "_chown_keep=$?; " + t + " chown " + p +
           " 0 0 >/dev/null; echo " + tag + "_chown_root=$?; " + t + " utime " + p +
           " >/dev/null; echo " + tag + "_utime=$?; " + t + " setxattr " + p +
           " user.agentjail x >/dev/null; echo " + tag + "_xattr=$?; " + t + " truncate " + p +
           " 0 >/dev/null; echo " + tag + "_truncate=$?; ";
}
}  // namespace

// EXP-05, the nodes themselves: /dev/null and /dev/full inside are the host's inodes,
// so chmod, chown, utimes, xattrs or truncate through them would change the host's
// (root inside is uid 0 outside; utimes needs only write access, which /dev/null
// gives everyone). They are read-only binds: every such call fails, the host's inode
// keeps its mode, owner and times, and the devices still read and write. Control:
// the same calls on a workspace file inside work, and the host sees the new mode.
TEST_F(Escape, EXP05_DeviceNodesCannotBeChanged) {
    const char* const nodes[] = {"/dev/null", "/dev/full"};
    std::vector<std::unique_ptr<RestoreNode>> guards;
    std::string script;
    for (const char* n : nodes) {
        guards.push_back(std::make_unique<RestoreNode>(RestoreNode{n, state_of(n)}));
        ASSERT_TRUE(guards.back()->before.ok) << n;
        script += metadata_ops(n, std::string(n).substr(5));
    }
    jail.ws_dir().write("victim", "x\n", 0644);
    script += metadata_ops(jail.ws() + "/victim", "ws");
    script +=
        "echo x > /dev/null; echo write_null=$?; echo x > /dev/full 2>/dev/null; "
        "echo write_full=$?; echo zero=$(head -c 4 /dev/zero | wc -c)";
    auto r = jail.sh(script);
    ASSERT_EQ(r.status, 0) << describe(r);
    for (size_t i = 0; i < guards.size(); ++i) {
        const std::string tag = std::string(nodes[i]).substr(5);
        for (const char* op : kMetadataOps)
            EXPECT_NE(field(r.out, tag + "_" + op), "0") << nodes[i] << ": " << op << " worked\n"
                                                         << r.out;
        NodeState after = state_of(nodes[i]);
        EXPECT_TRUE(same(guards[i]->before, after))
            << "the host's " << nodes[i] << " changed: " << show(guards[i]->before) << " -> "
            << show(after);
    }
    // The devices still work as devices.
    EXPECT_EQ(field(r.out, "write_null"), "0") << r.out;
    EXPECT_NE(field(r.out, "write_full"), "0") << r.out;  // ENOSPC, as on the host
    EXPECT_EQ(field(r.out, "zero"), "4") << r.out;

    // Positive control: the probe changes a host inode reachable through a writable
    // bind (the workspace), and the host sees it.
    EXPECT_EQ(field(r.out, "ws_chmod"), "0") << r.out;
    EXPECT_EQ(field(r.out, "ws_chown_keep"), "0") << r.out;
    EXPECT_EQ(field(r.out, "ws_utime"), "0") << r.out;
    EXPECT_EQ(field(r.out, "ws_truncate"), "0") << r.out;
    struct stat st {};
    ASSERT_EQ(::stat((jail.ws() + "/victim").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0600u) << "control: the workspace chmod did not reach the host";
    EXPECT_EQ(st.st_size, 0) << "control: the workspace truncate did not reach the host";
}

namespace {
bool all_digits(const std::string& s) {
    return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos;
}

// Kernel files of /proc that must be unreadable inside: runc/Docker's masked paths
// and the allocator and page files (`known`, also read on the host as the control),
// and every other top-level file the host lets only root read (`root_only`).
// /proc/kmsg is left out of both: reading it blocks and takes the messages away
// from the host's log.
struct ProcFiles {
    std::vector<std::string> known, root_only;
};

ProcFiles proc_files_to_mask() {
    ProcFiles v;
    for (const char* f :
         {"/proc/kcore", "/proc/keys", "/proc/timer_list", "/proc/sched_debug",
          "/proc/latency_stats", "/proc/timer_stats", "/proc/interrupts", "/proc/slabinfo",
          "/proc/pagetypeinfo", "/proc/vmallocinfo", "/proc/kpagecount", "/proc/kpageflags"})
        if (regular_file(f)) v.known.emplace_back(f);
    if (DIR* d = ::opendir("/proc")) {
        while (dirent* e = ::readdir(d)) {
            std::string name = e->d_name, path = "/proc/" + name;
            if (name[0] == '.' || all_digits(name) || name == "sysrq-trigger" || name == "kmsg")
                continue;
            struct stat st {};
            if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
            if ((st.st_mode & S_IROTH) == 0 &&
                std::find(v.known.begin(), v.known.end(), path) == v.known.end())
                v.root_only.push_back(path);
        }
        ::closedir(d);
    }
    return v;
}
}  // namespace

// EXP-01: the /proc files runc and Docker mask, and every kernel file only root may
// read (slabinfo and pagetypeinfo show the kernel heap to a heap-shaping exploit,
// kcore is kernel memory), are unreadable inside, for root as for a user; the masked
// directories are empty. Control: on the host the same probe reads each file that
// the current user may read (root: all of them).
TEST_F(Escape, EXP01_RootOnlyProcFilesMasked) {
    auto pf = proc_files_to_mask();
    ASSERT_FALSE(pf.known.empty());
    std::vector<std::string> files = pf.known;
    files.insert(files.end(), pf.root_only.begin(), pf.root_only.end());
    std::string script = read_each(files);
    std::vector<std::string> dirs;
    for (const char* d : {"/proc/acpi", "/proc/asound", "/proc/scsi"}) {
        struct stat st {};
        if (::lstat(d, &st) == 0 && S_ISDIR(st.st_mode)) dirs.emplace_back(d);
    }
    for (size_t i = 0; i < dirs.size(); ++i)
        script += "; echo D" + std::to_string(i) + "=$(ls -A " + dirs[i] + " 2>/dev/null | wc -l)";
    auto r = jail.sh(script);
    ASSERT_EQ(r.status, 0) << describe(r);
    for (size_t i = 0; i < files.size(); ++i) {
        std::string n = std::to_string(i);
        EXPECT_NE(field(r.out, "R" + n), "0") << files[i] << " is readable inside\n" << r.out;
        EXPECT_EQ(field(r.out, "C" + n), "") << files[i] << "\n" << r.out;
    }
    for (size_t i = 0; i < dirs.size(); ++i)
        EXPECT_EQ(field(r.out, "D" + std::to_string(i)), "0") << dirs[i] << " is not empty";

    // Positive control: the probe reads the known ones on the host wherever the mode
    // lets us (the others are kernel files of unknown effect: not read outside).
    std::string control = read_each(pf.known);
    for (size_t i = 0; i < dirs.size(); ++i)
        control += "; echo D" + std::to_string(i) + "=$(ls -A " + dirs[i] + " 2>/dev/null | wc -l)";
    auto c = jail.host_sh(control);
    size_t readable = 0;
    for (size_t i = 0; i < pf.known.size(); ++i) {
        struct stat st {};
        ASSERT_EQ(::stat(files[i].c_str(), &st), 0) << files[i];
        bool may = is_root() || (st.st_mode & S_IROTH) != 0;
        if (!may) continue;
        // kcore needs CAP_SYS_RAWIO: root outside has it.
        EXPECT_EQ(field(c.out, "R" + std::to_string(i)), "0")
            << "control: " << files[i] << " unreadable on the host\n"
            << c.out;
        ++readable;
    }
    EXPECT_GT(readable, 0u) << "control: nothing in the list is readable on the host";
    size_t full = 0;
    for (size_t i = 0; i < dirs.size(); ++i)
        full += field(c.out, "D" + std::to_string(i)) != "0" ? 1 : 0;
    if (!dirs.empty())
        std::cout << "[   NOTE   ] " << full << " of " << dirs.size()
                  << " masked /proc directories have entries on the host\n";
}
