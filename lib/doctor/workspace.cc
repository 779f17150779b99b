// SPDX-License-Identifier: Apache-2.0
// Doctor checks for the workspace modes: what direct mode's masks are worth on this
// kernel (tried: a mount in another mount namespace over a name the host renames
// over), and whether an unprivileged overlayfs can be mounted for overlay mode.
#include "doctor/workspace.hpp"

#include "sys/fd.hpp"
#include "sys/syscalls.hpp"
#include "util/strings.hpp"

#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#ifndef STATX_ATTR_MOUNT_ROOT
#define STATX_ATTR_MOUNT_ROOT 0x00002000
#endif

namespace agentjail::doctor {

namespace {

using Status = Check::Status;

// A scratch directory, removed with its few files.
struct Scratch {
    std::string dir;
    Scratch() {
        const char* t = ::getenv("TMPDIR");
        std::string tmpl = std::string(t && *t == '/' ? t : "/tmp") + "/agentjail-doctor-XXXXXX";
        if (::mkdtemp(tmpl.data()) != nullptr) dir = tmpl;
    }
    ~Scratch() {
        if (dir.empty()) return;
        for (const char* n : {"name", "new", "lower/f", "upper/f", "work/work", "lower", "upper", "work", "merged"}) {
            std::string p = dir + "/" + n;
            if (::unlink(p.c_str()) != 0) (void)::rmdir(p.c_str());
        }
        (void)::rmdir(dir.c_str());
    }
};

bool write_file(const std::string& p, const char* text) {
    int fd = ::open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return false;
    bool ok = ::write(fd, text, std::strlen(text)) == static_cast<ssize_t>(std::strlen(text));
    ::close(fd);
    return ok;
}

// Writes "0 0 1"-style maps so the probe child can create files (overlayfs needs it).
bool map_self(pid_t pid, uid_t uid, gid_t gid) {
    const std::string proc = "/proc/" + std::to_string(pid);
    return write_file(proc + "/uid_map", (std::to_string(uid) + " " + std::to_string(uid) + " 1\n").c_str()) &&
           write_file(proc + "/setgroups", "deny") &&
           write_file(proc + "/gid_map", (std::to_string(gid) + " " + std::to_string(gid) + " 1\n").c_str());
}

// The probe child: a user and mount namespace of its own, told when to go on. The
// child makes only system calls (the host may be multi-threaded).
struct Probe {
    int to_child[2] = {-1, -1};
    int from_child[2] = {-1, -1};
    long pid = -1;
    bool start() {
        if (::pipe2(to_child, O_CLOEXEC) != 0 || ::pipe2(from_child, O_CLOEXEC) != 0) return false;
        pid = sys::raw_fork();
        return pid >= 0;
    }
    // In the child.
    int wait_go() {
        char c;
        return ::read(to_child[0], &c, 1) == 1 ? 0 : -1;
    }
    [[noreturn]] void report(int a, int b) {
        int msg[2] = {a, b};
        (void)!::write(from_child[1], msg, sizeof msg);
        ::_exit(0);
    }
    // In the parent.
    void go() { (void)!::write(to_child[1], "g", 1); }
    bool result(int& a, int& b) {
        ::close(from_child[1]);
        from_child[1] = -1;
        int msg[2] = {-1, 0};
        ssize_t n;
        do {
            n = ::read(from_child[0], msg, sizeof msg);
        } while (n < 0 && errno == EINTR);
        a = msg[0];
        b = msg[1];
        return n == sizeof msg;
    }
    ~Probe() {
        if (pid > 0) {
            go();
            int st = 0;
            while (::waitpid(static_cast<pid_t>(pid), &st, 0) < 0 && errno == EINTR) {
            }
        }
        for (int fd : {to_child[0], to_child[1], from_child[0], from_child[1]})
            if (fd >= 0) ::close(fd);
    }
};

bool is_mount_root(const char* path) {
    struct statx stx {};
    if (::syscall(SYS_statx, AT_FDCWD, path, AT_SYMLINK_NOFOLLOW, STATX_INO, &stx) != 0) return false;
    return (stx.stx_attributes & STATX_ATTR_MOUNT_ROOT) != 0;
}

}  // namespace

Check check_direct_mode() {
    Check c{"direct mode masks", Status::warn, "", ""};
    const std::string strong = "for a workspace where nothing the host does can open a hidden name, use "
                               "--workspace-mode clone or overlay";
    Scratch s;
    if (s.dir.empty()) {
        c.detail = "could not make a scratch directory to try it: " + util::errno_text(errno);
        c.fix = strong;
        return c;
    }
    const std::string name = s.dir + "/name", fresh = s.dir + "/new";
    if (!write_file(name, "old\n") || !write_file(fresh, "new\n")) {
        c.detail = "could not write in " + s.dir;
        c.fix = strong;
        return c;
    }
    // A read-only bind of the name over itself, in a mount namespace of its own:
    // what the sandbox has over a protected name.
    Probe q;
    if (!q.start()) {
        c.detail = "could not start the probe: " + util::errno_text(errno);
        c.fix = strong;
        return c;
    }
    if (q.pid == 0) {
        if (::unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) q.report(1, errno);
        if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) q.report(1, errno);
        if (::mount(name.c_str(), name.c_str(), nullptr, MS_BIND, nullptr) != 0) q.report(1, errno);
        (void)!::write(q.from_child[1], "r", 1);
        if (q.wait_go() != 0) q.report(1, EPIPE);
        q.report(2, is_mount_root(name.c_str()) ? 1 : 0);
    }
    char r = 0;
    if (::read(q.from_child[0], &r, 1) != 1) {
        int a = 0, b = 0;
        q.result(a, b);
        c.detail = "could not try it (no mount namespace for this caller: " + util::errno_text(b) + ")";
        c.fix = strong;
        return c;
    }
    // The host side: an editor's save, a rename over the name.
    int renamed = ::rename(fresh.c_str(), name.c_str()) == 0 ? 0 : errno;
    q.go();
    int a = -1, b = 0;
    if (!q.result(a, b) || a != 2) {
        c.detail = "the probe failed";
        c.fix = strong;
        return c;
    }
    if (renamed != 0) {
        c.status = Status::ok;
        c.detail = "the kernel refuses to replace a name another mount namespace has a mount on (" +
                   util::errno_text(renamed) + "): hidden and protected names hold for the whole run";
        return c;
    }
    if (b == 1) {
        c.status = Status::ok;
        c.detail = "a mount over a name survives the host replacing it: hidden and protected names hold";
        return c;
    }
    c.detail =
        "the kernel drops a mask or read-only bind when the host replaces or removes its name (an editor's "
        "save, sed -i, git config); agentjail's supervisor notices and re-applies it, typically within a "
        "millisecond, or stops the run. In between the sandbox could open the new file, and the temporary "
        "file an editor or sed writes before renaming is never covered by a mask on the name";
    c.fix = strong;
    return c;
}

Check check_overlay() {
    Check c{"unprivileged overlayfs", Status::warn, "", ""};
    const std::string fix =
        "overlay mode needs overlayfs mountable in a user namespace (Linux 5.11 or newer, or a distribution "
        "kernel that allows it); use --workspace-mode clone instead, or run on a newer kernel";
    Scratch s;
    if (s.dir.empty()) {
        c.detail = "could not make a scratch directory to try it: " + util::errno_text(errno);
        c.fix = fix;
        return c;
    }
    for (const char* d : {"lower", "upper", "work", "merged"}) (void)::mkdir((s.dir + "/" + d).c_str(), 0755);
    if (!write_file(s.dir + "/lower/f", "x\n")) {
        c.detail = "could not write in " + s.dir;
        c.fix = fix;
        return c;
    }
    const std::string opts = "lowerdir=" + s.dir + "/lower,upperdir=" + s.dir + "/upper,workdir=" + s.dir + "/work";
    const std::string merged = s.dir + "/merged";
    const uid_t uid = ::geteuid();
    const gid_t gid = ::getegid();
    Probe p;
    if (!p.start()) {
        c.detail = "could not start the probe: " + util::errno_text(errno);
        c.fix = fix;
        return c;
    }
    if (p.pid == 0) {
        if (::unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0) p.report(1, errno);
        (void)!::write(p.from_child[1], "r", 1);
        if (p.wait_go() != 0) p.report(1, EPIPE);  // the id maps are written
        if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) p.report(1, errno);
        if (::mount("overlay", merged.c_str(), "overlay", 0, opts.c_str()) != 0) p.report(2, errno);
        // A write through it lands in the upper layer.
        int fd = ::open((merged + "/f").c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
        if (fd < 0) p.report(3, errno);
        ::close(fd);
        p.report(0, 0);
    }
    char r = 0;
    if (::read(p.from_child[0], &r, 1) != 1) {
        int a = 0, b = 0;
        p.result(a, b);
        c.detail = "no user namespace to try it in: " + util::errno_text(b);
        c.fix = fix;
        return c;
    }
    (void)map_self(static_cast<pid_t>(p.pid), uid, gid);
    p.go();
    int a = -1, b = 0;
    if (!p.result(a, b)) {
        c.detail = "the probe failed";
        c.fix = fix;
        return c;
    }
    if (a == 0) {
        c.status = Status::ok;
        c.detail = "overlayfs can be mounted in a user namespace: overlay mode is available";
        return c;
    }
    c.detail = std::string(a == 2 ? "mounting overlayfs in a user namespace failed: "
                                  : "overlayfs in a user namespace did not work: ") +
               util::errno_text(b);
    c.fix = fix;
    return c;
}

Check check_fuse() {
    Check c{"FUSE (direct mode's view)", Status::ok, "", ""};
    const int fd = ::open("/dev/fuse", O_RDWR | O_CLOEXEC);
    if (fd >= 0) {
        ::close(fd);
        c.detail = "/dev/fuse opens: direct mode can be served through the view (docs/workspace.md)";
        return c;
    }
    const int e = errno;
    // Direct mode is the default and its view the default view: a run in a project
    // refuses without it.
    c.status = Status::fail;
    c.detail = "/dev/fuse: " + util::errno_text(e) + ": direct mode (the default) refuses to run through its view; "
               "--view mounts does not need it";
    c.fix = std::string(e == ENOENT ? "in a container, pass the device (docker run --device /dev/fuse); on a host, "
                                      "modprobe fuse"
                                    : "let this user open /dev/fuse (mode 0666 is usual)") +
            "; or run with --view mounts ([workspace] view = \"mounts\")";
    return c;
}

}  // namespace agentjail::doctor
