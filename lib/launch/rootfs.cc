// SPDX-License-Identifier: Apache-2.0
// Builds the sandbox's root in the child: detached clones of every bind source,
// a tmpfs staging root, mount points opened component by component without
// following symlinks, then pivot_root and a detached old root.
#include "launch/rootfs.hpp"

#include "sys/syscalls.hpp"

#include <fcntl.h>
#include <limits.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

namespace agentjail::launch {

namespace {

using plan::MountKind;

// Every lookup inside the new root stays beneath it and never follows a symlink:
// a link planted in the workspace by an earlier session (FS-04) cannot redirect a
// mount onto a host path. Magic links (/proc/self/fd/N) are refused for the same reason.
constexpr std::uint64_t kInRoot = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
// Bind sources are canonical paths from the plan: any symlink met now was swapped in
// after planning, so refuse it rather than follow it.
constexpr std::uint64_t kSource = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;

constexpr const char* kMaskFile = ".agentjail-mask";

int err() { return -errno; }

// Writes v in decimal at `at`, NUL-terminated (at most 11 bytes); returns the NUL.
char* put_uint(char* at, unsigned v) {
    char digits[12];
    int n = 0;
    do {
        digits[n++] = static_cast<char>('0' + v % 10);
        v /= 10;
    } while (v != 0);
    while (n > 0) *at++ = digits[--n];
    *at = '\0';
    return at;
}

// "/proc/self/fd/N" for the classic mount(2) calls that take a path: the kernel
// resolves the magic link to exactly the object we opened and checked.
void fd_path(char (&buf)[40], int fd) {
    static const char prefix[] = "/proc/self/fd/";
    std::memcpy(buf, prefix, sizeof prefix - 1);
    put_uint(buf + sizeof prefix - 1, static_cast<unsigned>(fd));
}

// Opens the mount point `rel` beneath root_fd, creating missing components when
// `create` (in our own tmpfs; the plan checked that none is needed inside a bind, and
// a mount point there is opened with create false: a name the host removed since is
// -ENOENT, never made anew). Returns an O_PATH fd.
int open_mount_point(int root_fd, const char* rel, bool is_dir, bool create = true) {
    if (*rel == '\0') return sys::openat2(root_fd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC, kInRoot);
    // The walk starts at root_fd itself (the caller's to close) and owns each
    // directory it opens below it.
    int dir = root_fd;
    auto release = [&dir, root_fd] {
        if (dir != root_fd) ::close(dir);
    };
    char comp[NAME_MAX + 1];
    const char* p = rel;
    for (;;) {
        const char* slash = std::strchr(p, '/');
        size_t len = slash != nullptr ? static_cast<size_t>(slash - p) : std::strlen(p);
        if (len == 0 || len > NAME_MAX) {
            release();
            return -EINVAL;
        }
        std::memcpy(comp, p, len);
        comp[len] = '\0';
        const bool last = slash == nullptr;
        const bool want_dir = !last || is_dir;
        const std::uint64_t oflags = O_PATH | O_CLOEXEC | (want_dir ? O_DIRECTORY : 0);
        int fd = sys::openat2(dir, comp, oflags, kInRoot);
        if (fd == -ENOENT && create) {
            int r = 0;
            if (want_dir) {
                r = ::mkdirat(dir, comp, 0755) < 0 ? err() : 0;
            } else {
                int f = ::openat(dir, comp, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0644);
                r = f < 0 ? err() : (::close(f), 0);
            }
            if (r < 0 && r != -EEXIST) {
                release();
                return r;
            }
            fd = sys::openat2(dir, comp, oflags, kInRoot);
        }
        release();
        if (fd < 0 || last) return fd;
        dir = fd;
        p = slash + 1;
    }
}

// The directory the last mount point was opened in, kept for the next one: the
// workspace's protected names, /proc's and /etc's masks come in runs that share a
// parent, and each walk from the root costs an openat2 per component.
struct ParentCache {
    char rel[PATH_MAX];
    int fd = -1;
    void drop() {
        if (fd >= 0) ::close(fd);
        fd = -1;
    }
    // A mount on `rel` hides what the kept descriptor names when it is that directory
    // or one of its ancestors: the next walk must see the new mount.
    void covered_by(const char* mounted) {
        if (fd < 0) return;
        size_t n = std::strlen(mounted);
        if (n == 0 || (std::strncmp(this->rel, mounted, n) == 0 && (this->rel[n] == '\0' || this->rel[n] == '/')))
            drop();
    }
};

// Splits rel into its parent (copied into buf) and last component.
const char* split_parent(const char* rel, char (&buf)[PATH_MAX]) {
    const char* slash = std::strrchr(rel, '/');
    if (slash == nullptr) {
        buf[0] = '\0';
        return rel;
    }
    size_t len = static_cast<size_t>(slash - rel);
    if (len >= sizeof buf) len = sizeof buf - 1;
    std::memcpy(buf, rel, len);
    buf[len] = '\0';
    return slash + 1;
}

// open_mount_point, starting from the kept parent directory when `rel` is in it.
int open_mount_point_cached(int root_fd, const char* rel, bool is_dir, bool create, ParentCache& cache) {
    char parent[PATH_MAX];
    const char* name = split_parent(rel, parent);
    if (*rel == '\0' || *parent == '\0') return open_mount_point(root_fd, rel, is_dir, create);
    if (cache.fd < 0 || std::strcmp(cache.rel, parent) != 0) {
        cache.drop();
        int dir = open_mount_point(root_fd, parent, true, create);
        if (dir < 0) return dir;
        cache.fd = dir;
        std::memcpy(cache.rel, parent, std::strlen(parent) + 1);
    }
    return open_mount_point(cache.fd, name, is_dir, create);
}

int set_tree_attr(int tree_fd, std::uint64_t attr) {
    sys::MountAttr a{attr, 0, 0, 0};
    return sys::mount_setattr(tree_fd, "", AT_EMPTY_PATH | AT_RECURSIVE, &a);
}

// Clones the source into a detached tree (build_root sets its final flags before it is
// ever reachable from the new root). Once the staging tmpfs covers the staging
// directory, a source below it (a workspace under /tmp) is reached through `under`,
// that directory as it was before the cover (a lookup from it starts below the mount
// on it); staging null: by its path (before the cover).
int clone_source(const ChildMount& m, const char* staging = nullptr, int under = -1) {
    const std::size_t n = staging == nullptr ? 0 : std::strlen(staging);
    const bool below = n > 0 && std::strncmp(m.src, staging, n) == 0 && m.src[n] == '/' && m.src[n + 1] != '\0';
    const int src = below ? sys::openat2(under, m.src + n + 1, O_PATH | O_CLOEXEC, kSource)
                          : sys::openat2(AT_FDCWD, m.src, O_PATH | O_CLOEXEC, kSource);
    if (src < 0) return src;
    int tree = sys::open_tree(src, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | AT_RECURSIVE);
    ::close(src);
    return tree;
}

int attach(int tree_fd, int target_fd) {
    return sys::move_mount(tree_fd, "", target_fd, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH);
}

// Clones dirfd/path, makes the clone read-only (and nosuid, nodev, noexec) while it
// is still detached, and attaches it on target: never writable for an instant.
int attach_sealed_clone(int dirfd, const char* path, unsigned flags, int target);

// A mask_file that shows text: written to a file of the staging root (0444), bound
// sealed over the target, then unlinked there (the bind keeps it). No allocation.
int attach_view(int root, const ChildMount& m, int index, int target) {
    char name[32] = ".aj-view-";
    put_uint(name + std::strlen(name), static_cast<unsigned>(index));
    int f = ::openat(root, name, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0444);
    if (f < 0) return err();
    std::size_t done = 0;
    while (done < m.text_len) {
        ssize_t w = ::write(f, m.text + done, m.text_len - done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            int e = w < 0 ? err() : -EIO;
            ::close(f);
            return e;
        }
        done += static_cast<std::size_t>(w);
    }
    ::close(f);
    int r = attach_sealed_clone(root, name, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC, target);
    if (::unlinkat(root, name, 0) < 0 && r == 0) r = err();
    return r;
}

int attach_sealed_clone(int dirfd, const char* path, unsigned flags, int target) {
    int tree = sys::open_tree(dirfd, path, flags);
    if (tree < 0) return tree;
    int r = set_tree_attr(tree, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
    if (r >= 0) r = attach(tree, target);
    ::close(tree);
    return r;
}

// The overlay over the workspace, as a detached mount with its final flags (so it
// is never reachable without nosuid, nodev). The layers are named to the kernel as
// /proc/self/fd/N of directories opened here without following symlinks: a layer
// path that a link was swapped into after planning is refused, not followed.
int make_overlay(const ChildMount& m, Stage* stage) {
    *stage = Stage::clone_tree;
    int fds[3] = {-1, -1, -1};
    const char* paths[3] = {m.src, m.upper, m.work};
    int r = 0;
    for (int i = 0; i < 3 && r >= 0; ++i) {
        fds[i] = sys::openat2(AT_FDCWD, paths[i], O_PATH | O_DIRECTORY | O_CLOEXEC, kSource);
        r = fds[i];
    }
    int fs = -1;
    if (r >= 0) {
        *stage = Stage::overlay_open;
        r = fs = sys::fsopen("overlay", FSOPEN_CLOEXEC);
    }
    static const char* const keys[3] = {"lowerdir", "upperdir", "workdir"};
    char path[40];
    for (int i = 0; i < 3 && r >= 0; ++i) {
        *stage = Stage::overlay_layers;
        fd_path(path, fds[i]);
        r = sys::fsconfig(fs, FSCONFIG_SET_STRING, keys[i], path, 0);
    }
    // In a user namespace (ours, whoever the caller is) overlayfs can keep what it
    // records about the layers (opaque directories, copy-up origins) only in
    // user.overlay.* xattrs: trusted.* needs CAP_SYS_ADMIN in the initial namespace.
    if (r >= 0) r = sys::fsconfig(fs, FSCONFIG_SET_FLAG, "userxattr", nullptr, 0);
    if (r >= 0) {
        *stage = Stage::overlay_create;
        r = sys::fsconfig(fs, FSCONFIG_CMD_CREATE, nullptr, nullptr, 0);
    }
    int tree = -1;
    if (r >= 0) r = tree = sys::fsmount(fs, FSMOUNT_CLOEXEC, static_cast<unsigned>(m.attr));
    if (fs >= 0) ::close(fs);
    for (int fd : fds)
        if (fd >= 0) ::close(fd);
    return r < 0 ? r : tree;
}

int fail_with(Failure* f, Stage s, int e, int index) {
    f->stage = s;
    f->err = -e;
    f->index = index;
    return -1;
}

}  // namespace

int build_root(RootPlan& rp, Failure* fail) {
    // Our copy of the host's mounts must not propagate back (nor receive host events).
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) < 0)
        return fail_with(fail, Stage::mount_private, err(), -1);

    // The workspace's overlay is made, and the staging directory kept open, before the
    // staging tmpfs covers it: a bind source below it (a workspace under /tmp) is
    // then cloned through that descriptor, as each bind is attached, so that the
    // build holds a few descriptors, not one per bind (a workspace with many
    // repositories has thousands of protected names; issue 25).
    const int n = static_cast<int>(rp.mounts.size());
    // Raised to the hard limit in the sandbox's own processes anyway; the command gets
    // the caller's limit back before execve (launch.cc lists it in its rlimits).
    struct rlimit nofile {};
    if (::syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, nullptr, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
        nofile.rlim_cur = nofile.rlim_max;
        (void)::syscall(SYS_prlimit64, 0, RLIMIT_NOFILE, &nofile, nullptr);
    }
    bool need_mask_file = false;
    const std::size_t staging_len = std::strlen(rp.staging);
    for (int i = 0; i < n; ++i) {
        ChildMount& m = rp.mounts[static_cast<size_t>(i)];
        if (m.kind == MountKind::mask_file) need_mask_file = true;
        if (m.kind == MountKind::overlay) {
            Stage stage = Stage::none;
            m.tree_fd = make_overlay(m, &stage);
            if (m.tree_fd < 0) return fail_with(fail, stage, m.tree_fd, i);
            continue;
        }
        // A source that is the staging directory or above it: its recursive clone
        // would take the staging tmpfs along once that is mounted, so it is made now.
        if (m.kind != MountKind::bind || m.src == nullptr) continue;
        const std::size_t len = std::strlen(m.src);
        const bool above = (std::strcmp(m.src, "/") == 0 ||
                            (len <= staging_len && std::strncmp(rp.staging, m.src, len) == 0 &&
                             (rp.staging[len] == '\0' || rp.staging[len] == '/')));
        if (!above) continue;
        m.tree_fd = clone_source(m);
        if (m.tree_fd == -ENOENT && m.may_vanish) {
            m.tree_fd = -1;
            m.gone = true;
            continue;
        }
        if (m.tree_fd < 0) return fail_with(fail, Stage::clone_tree, m.tree_fd, i);
        if (int r = set_tree_attr(m.tree_fd, m.attr); r < 0) return fail_with(fail, Stage::set_attr, r, i);
    }
    const int under = ::open(rp.staging, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (under < 0) return fail_with(fail, Stage::staging_root, err(), -1);

    if (::mount("tmpfs", rp.staging, "tmpfs", MS_NOSUID | MS_NODEV, rp.root_data) < 0)
        return fail_with(fail, Stage::staging_root, err(), -1);
    const int root = ::open(rp.staging, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (root < 0) return fail_with(fail, Stage::staging_root, err(), -1);

    if (need_mask_file) {
        int f = ::openat(root, kMaskFile, O_CREAT | O_EXCL | O_RDONLY | O_CLOEXEC | O_NOFOLLOW, 0000);
        if (f < 0) return fail_with(fail, Stage::mask, err(), -1);
        ::close(f);
    }
    ParentCache parents;

    char path[40];
    char parent[PATH_MAX];
    for (int i = 0; i < n; ++i) {
        ChildMount& m = rp.mounts[static_cast<size_t>(i)];
        if (m.kind == MountKind::symlink) {
            const char* name = split_parent(m.rel, parent);
            int dir = open_mount_point(root, parent, true);
            if (dir < 0) return fail_with(fail, Stage::mount_point, dir, i);
            int r = ::symlinkat(m.src, dir, name) < 0 ? err() : 0;
            ::close(dir);
            if (r < 0) return fail_with(fail, Stage::make_symlink, r, i);
            continue;
        }
        if (m.gone) continue;
        if (m.kind == MountKind::bind && m.tree_fd < 0) {
            m.tree_fd = clone_source(m, rp.staging, under);
            // Removed on the host since the plan: as gone as a mount point that is.
            if (m.tree_fd == -ENOENT && m.may_vanish) continue;
            if (m.tree_fd < 0) return fail_with(fail, Stage::clone_tree, m.tree_fd, i);
            int r = set_tree_attr(m.tree_fd, m.attr);
            if (r < 0) {
                ::close(m.tree_fd);
                return fail_with(fail, Stage::set_attr, r, i);
            }
        }
        int target = open_mount_point_cached(root, m.rel, m.is_dir, !m.no_create, parents);
        if (target == -ENOENT && m.may_vanish) {  // gone from the host: nothing to hide
            if (m.tree_fd >= 0) ::close(m.tree_fd);
            m.tree_fd = -1;
            continue;
        }
        if (target < 0) return fail_with(fail, Stage::mount_point, target, i);
        int r = 0;
        Stage stage = Stage::mount_fs;
        switch (m.kind) {
            case MountKind::bind:
            case MountKind::overlay:
                stage = Stage::attach;
                r = attach(m.tree_fd, target);
                ::close(m.tree_fd);
                m.tree_fd = -1;
                break;
            case MountKind::mask_file:
                // Sealed per mask: one sealed mount cloned for each would save the
                // mount_setattr, but taking it off again costs an unmount, whose RCU
                // grace period costs more than all the calls it saves.
                stage = Stage::mask;
                if (m.text != nullptr) {
                    // A view (a .env with placeholders): its own read-only file in the
                    // staging tmpfs, gone from there once bound.
                    r = attach_view(root, m, i, target);
                    break;
                }
                r = attach_sealed_clone(root, kMaskFile, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC, target);
                break;
            case MountKind::tmpfs:
            case MountKind::mask_dir:
                stage = m.kind == MountKind::mask_dir ? Stage::mask : Stage::mount_fs;
                fd_path(path, target);
                r = ::mount("tmpfs", path, "tmpfs", m.flags, m.data) < 0 ? err() : 0;
                break;
            case MountKind::proc:
                fd_path(path, target);
                r = ::mount("proc", path, "proc", m.flags, nullptr) < 0 ? err() : 0;
                break;
            case MountKind::devpts:
                fd_path(path, target);
                r = ::mount("devpts", path, "devpts", m.flags, m.data) < 0 ? err() : 0;
                break;
            case MountKind::readonly:
                // A clone of what is mounted there now, stacked on top: the writable
                // mount underneath is unreachable from inside.
                stage = Stage::set_attr;
                r = attach_sealed_clone(target, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | AT_RECURSIVE,
                                        target);
                break;
            case MountKind::view: {
                stage = Stage::view_open;
                const int fuse = ::open("/dev/fuse", O_RDWR | O_CLOEXEC);
                if (fuse < 0) {
                    r = err();
                    break;
                }
                char data[256];
                const std::size_t dl = std::strlen(m.data);
                if (dl + 12 > sizeof data) {
                    ::close(fuse);
                    r = -E2BIG;
                    break;
                }
                std::memcpy(data, m.data, dl);
                put_uint(data + dl, static_cast<unsigned>(fuse));
                fd_path(path, target);
                stage = Stage::view_mount;
                r = ::mount("agentjail", path, "fuse", m.flags, data) < 0 ? err() : 0;
                // The supervisor serves it from now on; nothing may look below it first.
                // (A failure to pass it is the mount's: view_fd reports carry a descriptor.)
                if (r == 0) r = send_fd(rp.report_fd, Stage::view_fd, fuse);
                ::close(fuse);
                break;
            }
            case MountKind::symlink:
                break;
        }
        ::close(target);
        // Removed on the host between our open and the mount (the kernel refuses a
        // mount on an unlinked name): as gone as when the open found nothing.
        if (r == -ENOENT && m.may_vanish) continue;
        if (r < 0) return fail_with(fail, stage, r, i);
        parents.covered_by(m.rel);
    }
    parents.drop();
    ::close(under);
    if (need_mask_file && ::unlinkat(root, kMaskFile, 0) < 0) return fail_with(fail, Stage::mask, err(), -1);

    // The root itself is read-only: nothing can be planted beside the planned mounts.
    sys::MountAttr ro{MOUNT_ATTR_RDONLY, 0, 0, 0};
    int r = sys::mount_setattr(root, "", AT_EMPTY_PATH, &ro);
    if (r < 0) return fail_with(fail, Stage::root_readonly, r, -1);

    // pivot_root(".", ".") stacks the old root on the new one; detaching it leaves no
    // path back to the host (FS-01) and needs no directory for the old root.
    if (::fchdir(root) < 0) return fail_with(fail, Stage::pivot_root, err(), -1);
    ::close(root);
    r = sys::pivot_root(".", ".");
    if (r < 0) return fail_with(fail, Stage::pivot_root, r, -1);
    if (::umount2(".", MNT_DETACH) < 0) return fail_with(fail, Stage::detach_old_root, err(), -1);
    if (::chdir("/") < 0) return fail_with(fail, Stage::pivot_root, err(), -1);
    return 0;
}

}  // namespace agentjail::launch
