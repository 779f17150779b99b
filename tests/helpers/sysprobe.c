// SPDX-License-Identifier: Apache-2.0
// System-call probe for the seccomp tests: makes raw system calls (each in its own
// forked child, so a kill or a side effect stays there) and prints what happened as
// "name=RESULT" or "NR RESULT" lines. RESULT is "ok" (the call returned >= 0), an
// errno name ("EPERM"), a signal name ("SIGSYS") or "timeout". Static, so it runs
// in any constructed root. Operations:
//
//   call NAME...          named probes from the table below (or "all"); each is the
//                         attack's call with arguments that make it fail harmlessly
//                         (or succeed harmlessly) when the kernel is reached
//   list                  the names "call" knows
//   sweep ABI FROM TO     every number FROM..TO on ABI x86_64, i386 (int $0x80) or
//                         x32 (nr | 0x40000000), all arguments -1; numbers whose call
//                         has side effects print "skip:REASON"
//   threads               SYS-05: starts 4 threads, prints Seccomp, Seccomp_filters and
//                         NoNewPrivs of every /proc/self/task/*/status, and a blocked
//                         call (ptrace) made from each thread
//   stack                 SYS-05: stacks an allow-all filter and then a filter with a
//                         notification listener that answers CONTINUE, calling a
//                         blocked syscall (modify_ldt read) after each
//   three                 exactly three refused calls, ptrace, bpf and unshare, made
//                         directly (no fork): the denial-log test
//   flood N               N refused ptrace calls and N refused bpf calls, directly:
//                         the bounded-log test (prints refused=COUNT)
//   tty                   TTY-01: TIOCSTI (plain and with bit 32 set) and TIOCLINUX on
//                         fds 0-2 and /dev/tty, plus TIOCSTI on a pty the probe owns
//                         and controls (the kernel allows that one: the control)
//
// Exit status: 0 when the probe ran (whatever the calls returned), 2 on bad usage.
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/filter.h>
#include <linux/io_uring.h>
#include <linux/perf_event.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <linux/tiocl.h>
#include <linux/userfaultfd.h>
#include <linux/vm_sockets.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/quota.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timex.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#ifndef __x86_64__
#error "sysprobe is x86-64 only (it tests the i386 and x32 ABIs from an x86-64 process)"
#endif

#define X32_BIT 0x40000000L
#define NR_open_tree_attr 467  // Linux 6.15; glibc 2.36 does not name it
#define NO_SUCH_PID 999999999  // above any pid_max: ptrace/kill reach nobody

// ---- results -------------------------------------------------------------------

static const char* errno_name(int e) {
    switch (e) {
    case EPERM: return "EPERM";
    case ENOENT: return "ENOENT";
    case ESRCH: return "ESRCH";
    case EINTR: return "EINTR";
    case EIO: return "EIO";
    case ENXIO: return "ENXIO";
    case E2BIG: return "E2BIG";
    case EBADF: return "EBADF";
    case ECHILD: return "ECHILD";
    case EAGAIN: return "EAGAIN";
    case ENOMEM: return "ENOMEM";
    case EACCES: return "EACCES";
    case EFAULT: return "EFAULT";
    case EBUSY: return "EBUSY";
    case EEXIST: return "EEXIST";
    case ENODEV: return "ENODEV";
    case ENOTDIR: return "ENOTDIR";
    case EISDIR: return "EISDIR";
    case EINVAL: return "EINVAL";
    case ENFILE: return "ENFILE";
    case EMFILE: return "EMFILE";
    case ENOTTY: return "ENOTTY";
    case EFBIG: return "EFBIG";
    case ENOSPC: return "ENOSPC";
    case ESPIPE: return "ESPIPE";
    case EROFS: return "EROFS";
    case EMLINK: return "EMLINK";
    case EPIPE: return "EPIPE";
    case EDOM: return "EDOM";
    case ERANGE: return "ERANGE";
    case ENAMETOOLONG: return "ENAMETOOLONG";
    case ENOSYS: return "ENOSYS";
    case ENOTEMPTY: return "ENOTEMPTY";
    case ELOOP: return "ELOOP";
    case ENOMSG: return "ENOMSG";
    case ENODATA: return "ENODATA";
    case ENOSTR: return "ENOSTR";
    case EOVERFLOW: return "EOVERFLOW";
    case EBADFD: return "EBADFD";
    case EUSERS: return "EUSERS";
    case ENOTSOCK: return "ENOTSOCK";
    case EPROTOTYPE: return "EPROTOTYPE";
    case ENOPROTOOPT: return "ENOPROTOOPT";
    case EPROTONOSUPPORT: return "EPROTONOSUPPORT";
    case ESOCKTNOSUPPORT: return "ESOCKTNOSUPPORT";
    case EOPNOTSUPP: return "EOPNOTSUPP";
    case EAFNOSUPPORT: return "EAFNOSUPPORT";
    case EADDRINUSE: return "EADDRINUSE";
    case EADDRNOTAVAIL: return "EADDRNOTAVAIL";
    case ENETDOWN: return "ENETDOWN";
    case ENETUNREACH: return "ENETUNREACH";
    case ENOTCONN: return "ENOTCONN";
    case ETIMEDOUT: return "ETIMEDOUT";
    case ECONNREFUSED: return "ECONNREFUSED";
    case EALREADY: return "EALREADY";
    case EINPROGRESS: return "EINPROGRESS";
    case ESTALE: return "ESTALE";
    case EDQUOT: return "EDQUOT";
    case ECANCELED: return "ECANCELED";
    case ENOKEY: return "ENOKEY";
    case EKEYREVOKED: return "EKEYREVOKED";
    case EOWNERDEAD: return "EOWNERDEAD";
    case ERFKILL: return "ERFKILL";
    case EHWPOISON: return "EHWPOISON";
    case 512: return "ERESTARTSYS";
    case 516: return "ERESTART_RESTARTBLOCK";
    case 524: return "ENOTSUPP";
    default: return NULL;
    }
}

static const char* signal_name(int s) {
    switch (s) {
    case SIGSYS: return "SIGSYS";
    case SIGSEGV: return "SIGSEGV";
    case SIGILL: return "SIGILL";
    case SIGBUS: return "SIGBUS";
    case SIGKILL: return "SIGKILL";
    case SIGABRT: return "SIGABRT";
    case SIGTRAP: return "SIGTRAP";
    case SIGFPE: return "SIGFPE";
    case SIGXFSZ: return "SIGXFSZ";
    case SIGXCPU: return "SIGXCPU";
    case SIGPIPE: return "SIGPIPE";
    case SIGTERM: return "SIGTERM";
    default: return NULL;
    }
}

// What one call did, as printed.
struct outcome {
    char text[48];
};

// A probe's own setup step failed (not the call under test): see SETUP_FAILED.
#define SETUP_FAILED (-1000L)

static struct outcome from_ret(long ret, int err) {
    struct outcome o;
    if (ret == SETUP_FAILED) {
        const char* n = errno_name(err);
        snprintf(o.text, sizeof o.text, "setup-failed:%s", n ? n : "?");
    } else if (ret >= 0) {
        snprintf(o.text, sizeof o.text, "ok");
    } else {
        const char* n = errno_name(err);
        if (n)
            snprintf(o.text, sizeof o.text, "%s", n);
        else
            snprintf(o.text, sizeof o.text, "errno:%d", err);
    }
    return o;
}

// The message a child sends back through the pipe.
struct report {
    long ret;
    int err;
};

typedef struct report (*probe_fn)(void);

// Runs fn in a forked child with a deadline; the child reports {ret, errno} through a
// pipe and exits. A child that dies before reporting is described by its signal.
static struct outcome in_child(probe_fn fn, unsigned timeout_s) {
    struct outcome o;
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0) {
        snprintf(o.text, sizeof o.text, "probe-error:pipe");
        return o;
    }
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        close(p[0]);
        close(p[1]);
        snprintf(o.text, sizeof o.text, "probe-error:fork");
        return o;
    }
    if (pid == 0) {
        close(p[0]);
        // SIGALRM's default action ends a call that blocks; the parent calls it "timeout".
        alarm(timeout_s);
        struct report r = fn();
        if (write(p[1], &r, sizeof r) != (ssize_t)sizeof r) _exit(3);
        _exit(0);
    }
    close(p[1]);
    struct report r;
    ssize_t n;
    do n = read(p[0], &r, sizeof r);
    while (n < 0 && errno == EINTR);
    close(p[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (n == (ssize_t)sizeof r) return from_ret(r.ret, r.err);
    if (WIFSIGNALED(status)) {
        int s = WTERMSIG(status);
        const char* name = signal_name(s);
        if (s == SIGALRM)
            snprintf(o.text, sizeof o.text, "timeout");
        else if (name)
            snprintf(o.text, sizeof o.text, "%s", name);
        else
            snprintf(o.text, sizeof o.text, "signal:%d", s);
    } else {
        snprintf(o.text, sizeof o.text, "exit:%d", WEXITSTATUS(status));
    }
    return o;
}

static struct report R(long ret) {
    struct report r = {ret, ret < 0 ? errno : 0};
    return r;
}

static struct report
setup_failed(void) {
    struct report r = {SETUP_FAILED, errno};
    return r;
}

// For calls that hand back an fd or a child on success: cleans up, keeps the verdict.
static struct report R_fd(long ret) {
    struct report r = R(ret);
    if (ret >= 0) close((int)ret);
    return r;
}

static struct report R_child(long ret) {
    struct report r = R(ret);
    if (ret == 0) _exit(0);  // we are the new child (of a clone that worked): leave
    if (ret > 0) waitpid((pid_t)ret, NULL, __WALL);
    return r;
}

// ---- i386 and x32 --------------------------------------------------------------

// An i386 system call from this 64-bit process: the kernel takes the compat path and
// seccomp sees AUDIT_ARCH_I386. Only the low 32 bits of each register are used.
static long int80(long nr, long a, long b, long c, long d, long e) {
    long ret;
    __asm__ volatile("int $0x80"
                     : "=a"(ret)
                     : "a"(nr), "b"(a), "c"(b), "d"(c), "S"(d), "D"(e)
                     : "memory", "cc", "r8", "r9", "r10", "r11");
    int r32 = (int)ret;  // the compat return value is 32 bits wide
    if (r32 < 0 && r32 > -4096) {
        errno = -r32;
        return -1;
    }
    return r32;
}

// Memory below 4 GiB, addressable from the i386 ABI.
static unsigned long* low_page(void) {
    void* p =
        mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
    return p == MAP_FAILED ? NULL : (unsigned long*)p;
}

enum { I386_getpid = 20, I386_socketcall = 102, I386_unshare = 310 };
enum { SOCKETCALL_SOCKET = 1 };

// ---- the named probes ----------------------------------------------------------

static struct report unshare_flags(unsigned long flags) { return R(syscall(SYS_unshare, flags)); }
static struct report p_unshare_NEWNS(void) { return unshare_flags(CLONE_NEWNS); }
static struct report p_unshare_NEWCGROUP(void) { return unshare_flags(CLONE_NEWCGROUP); }
static struct report p_unshare_NEWUTS(void) { return unshare_flags(CLONE_NEWUTS); }
static struct report p_unshare_NEWIPC(void) { return unshare_flags(CLONE_NEWIPC); }
static struct report p_unshare_NEWUSER(void) { return unshare_flags(CLONE_NEWUSER); }
static struct report p_unshare_NEWPID(void) { return unshare_flags(CLONE_NEWPID); }
static struct report p_unshare_NEWNET(void) { return unshare_flags(CLONE_NEWNET); }
static struct report p_unshare_NEWTIME(void) { return unshare_flags(CLONE_NEWTIME); }
// A filter that compares only the low 32 bits, or compares the whole word for
// equality, misses this one; the kernel itself answers EINVAL (unknown flag).
static struct report p_unshare_NEWUSER_bit40(void) {
    return unshare_flags(CLONE_NEWUSER | (1UL << 40));
}
static struct report p_unshare_bit40(void) { return unshare_flags(1UL << 40); }
static struct report p_clone_NEWUSER(void) {
    return R_child(syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0));
}
static struct report p_clone3_null(void) { return R(syscall(SYS_clone3, NULL, 0)); }
static struct report p_clone3_NEWUSER(void) {
    struct clone_args ca;
    memset(&ca, 0, sizeof ca);
    ca.flags = CLONE_NEWUSER;
    ca.exit_signal = SIGCHLD;
    return R_child(syscall(SYS_clone3, &ca, sizeof ca));
}
static struct report p_setns(void) { return R(syscall(SYS_setns, -1, 0)); }
// Targets that do not exist: the kernel, when reached, answers ENOENT (path lookup
// comes before the capability check for mount and umount2).
static struct report p_mount(void) {
    return R(syscall(SYS_mount, "aj-none", "/aj-no-such-dir", "tmpfs", 0UL, NULL));
}
static struct report p_umount2(void) { return R(syscall(SYS_umount2, "/aj-no-such-dir", 0)); }
static struct report p_pivot_root(void) {
    return R(syscall(SYS_pivot_root, "/aj-no-such-dir", "/aj-no-such-dir/old"));
}
static struct report p_open_tree(void) { return R_fd(syscall(SYS_open_tree, AT_FDCWD, "/", 0)); }
static struct report p_open_tree_attr(void) {
    return R_fd(syscall(NR_open_tree_attr, AT_FDCWD, "/", 0, NULL, 0));
}
static struct report p_move_mount(void) {
    return R(syscall(SYS_move_mount, -1, "", -1, "/aj-no-such-dir", 0));
}
static struct report p_fsopen(void) { return R_fd(syscall(SYS_fsopen, "tmpfs", 0)); }
static struct report p_fsconfig(void) {
    return R(syscall(SYS_fsconfig, -1, 6 /* CMD_CREATE */, NULL, NULL, 0));
}
static struct report p_fsmount(void) { return R_fd(syscall(SYS_fsmount, -1, 0, 0)); }
static struct report p_fspick(void) { return R_fd(syscall(SYS_fspick, AT_FDCWD, "/", 0)); }
static struct report p_mount_setattr(void) {
    return R(syscall(SYS_mount_setattr, AT_FDCWD, "/aj-no-such-dir", 0, NULL, 0));
}
static struct report p_fork(void) {
    pid_t pid = fork();
    if (pid == 0) _exit(7);
    if (pid < 0) return R(-1);
    int st = 0;
    if (waitpid(pid, &st, 0) < 0) return R(-1);
    errno = ECHILD;
    return R(WIFEXITED(st) && WEXITSTATUS(st) == 7 ? 0 : -1);
}
static void* thread_body(void* arg) { return arg; }
static struct report p_pthread(void) {
    pthread_t t;
    int rc = pthread_create(&t, NULL, thread_body, (void*)0x5a);
    if (rc != 0) {
        errno = rc;
        return R(-1);
    }
    void* got = NULL;
    pthread_join(t, &got);
    errno = EINVAL;
    return R(got == (void*)0x5a ? 0 : -1);
}

// SYS-04: the kernel-attack-surface calls.
static struct report p_io_uring_setup(void) {
    struct io_uring_params params;
    memset(&params, 0, sizeof params);
    return R_fd(syscall(SYS_io_uring_setup, 1, &params));
}
static struct report p_io_uring_enter(void) {
    return R(syscall(SYS_io_uring_enter, -1, 0, 0, 0, NULL, 0));
}
static struct report p_io_uring_register(void) {
    return R(syscall(SYS_io_uring_register, -1, 0, NULL, 0));
}
// UFFD_USER_MODE_ONLY needs no privilege: the kernel, when reached, says yes.
static struct report p_userfaultfd(void) {
    return R_fd(syscall(SYS_userfaultfd, O_CLOEXEC | UFFD_USER_MODE_ONLY));
}
static struct report p_bpf(void) {
    union bpf_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.map_type = BPF_MAP_TYPE_ARRAY;
    attr.key_size = 4;
    attr.value_size = 4;
    attr.max_entries = 1;
    return R_fd(syscall(SYS_bpf, BPF_MAP_CREATE, &attr, sizeof attr));
}
// A software clock on ourselves, user space only: allowed at perf_event_paranoid <= 2.
static struct report p_perf_event_open(void) {
    struct perf_event_attr attr;
    memset(&attr, 0, sizeof attr);
    attr.size = sizeof attr;
    attr.type = PERF_TYPE_SOFTWARE;
    attr.config = PERF_COUNT_SW_TASK_CLOCK;
    attr.exclude_kernel = 1;
    attr.exclude_hv = 1;
    attr.disabled = 1;
    return R_fd(syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0));
}
static struct report p_kexec_load(void) { return R(syscall(SYS_kexec_load, 0UL, 0UL, NULL, 0UL)); }
static struct report p_kexec_file_load(void) {
    return R(syscall(SYS_kexec_file_load, -1, -1, 0UL, "", 0UL));
}
static struct report p_init_module(void) { return R(syscall(SYS_init_module, NULL, 0UL, "")); }
static struct report p_finit_module(void) { return R(syscall(SYS_finit_module, -1, "", 0)); }
static struct report p_delete_module(void) {
    return R(syscall(SYS_delete_module, "aj_no_such_module", O_NONBLOCK));
}
static struct report p_iopl(void) { return R(syscall(SYS_iopl, 3)); }
static struct report p_ioperm(void) { return R(syscall(SYS_ioperm, 0x80UL, 1UL, 1)); }
// Reading the LDT is unprivileged: the kernel, when reached, returns a byte count.
static struct report p_modify_ldt(void) {
    static char buf[64];
    return R(syscall(SYS_modify_ldt, 0, buf, sizeof buf));
}
static struct report p_lookup_dcookie(void) {
    char buf[64];
    return R(syscall(SYS_lookup_dcookie, 0ULL, buf, sizeof buf));
}
// FAN_REPORT_FID makes an unprivileged fanotify group possible (Linux 5.13).
static struct report p_fanotify_init(void) {
    return R_fd(syscall(SYS_fanotify_init,
                        0x00000000 /* FAN_CLASS_NOTIF */ | 0x00000200 /* FAN_REPORT_FID */,
                        O_RDONLY));
}
static struct report p_quotactl(void) {
    char buf[128];
    return R(syscall(SYS_quotactl, QCMD(Q_GETINFO, USRQUOTA), "/aj-no-such-dev", 0, buf));
}
static struct report p_acct(void) { return R(syscall(SYS_acct, "/aj-no-such-file")); }
static struct report p_swapon(void) { return R(syscall(SYS_swapon, "/aj-no-such-file", 0)); }
static struct report p_swapoff(void) { return R(syscall(SYS_swapoff, "/aj-no-such-file")); }
// Wrong magic numbers: even a privileged kernel path refuses (EINVAL) without rebooting.
static struct report p_reboot(void) { return R(syscall(SYS_reboot, 0, 0, 0, NULL)); }
static struct report p_syslog(void) {
    char buf[16];
    return R(syscall(SYS_syslog, 10 /* SYSLOG_ACTION_SIZE_BUFFER */, buf, 0));
}
// Invalid times: the kernel, when reached, answers EINVAL before any permission check.
static struct report p_settimeofday(void) {
    struct timeval tv = {0, 2000000};
    return R(syscall(SYS_settimeofday, &tv, NULL));
}
static struct report p_clock_settime(void) {
    struct timespec ts = {0, -1};
    return R(syscall(SYS_clock_settime, CLOCK_REALTIME, &ts));
}
// modes = 0 only reads the clock: unprivileged when reached.
static struct report p_clock_adjtime(void) {
    struct timex tx;
    memset(&tx, 0, sizeof tx);
    return R(syscall(SYS_clock_adjtime, CLOCK_REALTIME, &tx));
}
static struct report p_adjtimex(void) {
    struct timex tx;
    memset(&tx, 0, sizeof tx);
    return R(syscall(SYS_adjtimex, &tx));
}
static struct report p_move_pages(void) {
    return R(syscall(SYS_move_pages, 0, 0UL, NULL, NULL, NULL, 0));
}
static struct report p_mbind(void) {
    return R(syscall(SYS_mbind, NULL, 0UL, 0 /* MPOL_DEFAULT */, NULL, 0UL, 0U));
}
static struct report p_set_mempolicy(void) {
    return R(syscall(SYS_set_mempolicy, 0 /* MPOL_DEFAULT */, NULL, 0UL));
}
static struct report p_migrate_pages(void) {
    return R(syscall(SYS_migrate_pages, 0, 0UL, NULL, NULL));
}
static struct report p_uselib(void) { return R(syscall(SYS_uselib, "/aj-no-such-lib")); }
static struct report p_ustat(void) {
    char buf[64];
    return R(syscall(SYS_ustat, 0U, buf));
}
static struct report p_sysfs(void) { return R(syscall(SYS_sysfs, 3)); }
static struct report p_vhangup(void) { return R(syscall(SYS_vhangup)); }
static struct report p_ptrace(void) {
    return R(syscall(SYS_ptrace, PTRACE_ATTACH, NO_SUCH_PID, 0, 0));
}
static struct report p_process_vm_readv(void) {
    return R(syscall(SYS_process_vm_readv, NO_SUCH_PID, NULL, 0UL, NULL, 0UL, 0UL));
}
static struct report p_keyctl(void) {
    return R(syscall(SYS_keyctl, 0 /* KEYCTL_GET_KEYRING_ID */, -3, 0));
}
static struct report p_add_key(void) {
    return R(syscall(SYS_add_key, "user", "aj-probe", "x", 1UL, -3));
}
static struct report p_request_key(void) {
    return R(syscall(SYS_request_key, "user", "aj-no-such-key", NULL, 0));
}
// Personality: the two dangerous flags, then the values that must stay allowed.
static struct report personality_of(unsigned long v) { return R(syscall(SYS_personality, v)); }
static struct report p_personality_READ_IMPLIES_EXEC(void) { return personality_of(0x0400000); }
static struct report p_personality_ADDR_NO_RANDOMIZE(void) { return personality_of(0x0040000); }
static struct report p_personality_0(void) { return personality_of(0x0); }
static struct report p_personality_8(void) { return personality_of(0x8); }
static struct report p_personality_20000(void) { return personality_of(0x20000); }
static struct report p_personality_20008(void) { return personality_of(0x20008); }
static struct report p_personality_ffffffff(void) { return personality_of(0xffffffffUL); }

// FS-11: file handles. The real handle of "/" first, then the same with mount fd -1,
// which the kernel rejects with EBADF before any capability check.
static struct report p_name_to_handle_at(void) {
    struct {
        unsigned int handle_bytes;
        int handle_type;
        unsigned char f_handle[128];
    } fh;
    int mount_id = 0;
    fh.handle_bytes = sizeof fh.f_handle;
    return R(syscall(SYS_name_to_handle_at, AT_FDCWD, "/", &fh, &mount_id, 0));
}
// The "shocker" handle: inode 2 (an ext4 root) with generation 0, FILEID_INO32_GEN.
static struct report open_handle(int mount_fd) {
    struct {
        unsigned int handle_bytes;
        int handle_type;
        uint32_t ino, gen;
    } fh = {8, 1, 2, 0};
    return R_fd(syscall(SYS_open_by_handle_at, mount_fd, &fh, O_RDONLY));
}
static struct report p_open_by_handle_at(void) {
    int root = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    return open_handle(root);
}
static struct report p_open_by_handle_at_badfd(void) { return open_handle(-1); }

// Issue 26, advisory 6 (CVE-2026-43391): file handles of namespace files (nsfs),
// which name a namespace by id and could open one the sandbox holds no path to. The
// handle of the sandbox's own network namespace first; then an open of an nsfs
// handle (that one, or a made-up one when the kernel gives none) on an nsfs fd.
struct nsfs_handle {
    unsigned int handle_bytes;
    int handle_type;
    unsigned char f_handle[64];
};
static long nsfs_handle_of(const char* path, struct nsfs_handle* fh) {
    int mount_id = 0;
    fh->handle_bytes = sizeof fh->f_handle;
    return syscall(SYS_name_to_handle_at, AT_FDCWD, path, fh, &mount_id, 0);
}
static struct report p_name_to_handle_at_nsfs(void) {
    struct nsfs_handle fh;
    return R(nsfs_handle_of("/proc/self/ns/net", &fh));
}
static struct report p_open_by_handle_at_nsfs(void) {
    struct nsfs_handle fh;
    int ns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
    if (ns < 0) return setup_failed();
    if (nsfs_handle_of("/proc/self/ns/net", &fh) != 0) {
        // FILEID_NSFS: { u64 ns_id; u32 ns_type; u32 ns_inum }, here the initial
        // network namespace's well-known inode number.
        uint64_t id = 1;
        uint32_t type = CLONE_NEWNET, inum = 0xF0000098u;
        memset(&fh, 0, sizeof fh);
        fh.handle_bytes = 16;
        fh.handle_type = 0xf1;
        memcpy(fh.f_handle, &id, 8);
        memcpy(fh.f_handle + 8, &type, 4);
        memcpy(fh.f_handle + 12, &inum, 4);
    }
    struct report r = R_fd(syscall(SYS_open_by_handle_at, ns, &fh, O_RDONLY));
    close(ns);
    return r;
}

// NET-08: socket families.
static struct report sock(int family, int type, int proto) {
    return R_fd(syscall(SYS_socket, family, type, proto));
}
static struct report p_socket_VSOCK(void) { return sock(AF_VSOCK, SOCK_STREAM, 0); }
static struct report p_socket_ALG(void) { return sock(AF_ALG, SOCK_SEQPACKET, 0); }
static struct report p_socket_BLUETOOTH(void) {
    return sock(AF_BLUETOOTH, SOCK_SEQPACKET, 0 /* L2CAP */);
}
static struct report p_socket_CAN(void) { return sock(AF_CAN, SOCK_RAW, 1 /* CAN_RAW */); }
static struct report p_socket_KEY(void) { return sock(AF_KEY, SOCK_RAW, 2 /* PF_KEY_V2 */); }
static struct report p_socket_PACKET(void) {
    return sock(AF_PACKET, SOCK_RAW, 0x0300 /* htons(ETH_P_ALL) */);
}
static struct report p_socket_NETLINK_AUDIT(void) { return sock(AF_NETLINK, SOCK_RAW, 9); }
static struct report p_socket_NETLINK_UEVENT(void) { return sock(AF_NETLINK, SOCK_RAW, 15); }
static struct report p_socket_UNIX(void) { return sock(AF_UNIX, SOCK_STREAM, 0); }
static struct report p_socket_INET(void) { return sock(AF_INET, SOCK_STREAM, 0); }
static struct report p_socket_INET6(void) { return sock(AF_INET6, SOCK_DGRAM, 0); }
static struct report p_socket_NETLINK_ROUTE(void) { return sock(AF_NETLINK, SOCK_RAW, 0); }
// The same with bits above 32 set in an int argument: the kernel truncates each to
// an int (NETLINK_AUDIT | 1 << 32 is NETLINK_AUDIT to it); a filter comparing whole
// registers would not recognise them.
static struct report sock_wide(unsigned long family, unsigned long type, unsigned long proto) {
    return R_fd(syscall(SYS_socket, family, type, proto));
}
static struct report p_socket_NETLINK_AUDIT_hi(void) {
    return sock_wide(AF_NETLINK, SOCK_RAW, 9UL | (1UL << 32));
}
static struct report p_socket_NETLINK_UEVENT_hi(void) {
    return sock_wide(AF_NETLINK, SOCK_RAW, 15UL | (0xffffffffUL << 32));
}
static struct report p_socket_NETLINK_hi_AUDIT(void) {
    return sock_wide((unsigned long)AF_NETLINK | (1UL << 40), SOCK_RAW, 9);
}
static struct report p_socket_NETLINK_ROUTE_hi(void) {
    return sock_wide(AF_NETLINK, SOCK_RAW, 1UL << 32);
}
static struct report p_socket_INET_hi(void) {
    return sock_wide((unsigned long)AF_INET | (1UL << 32), SOCK_STREAM, 0);
}
static struct report p_socket_VSOCK_hi(void) {
    return sock_wide((unsigned long)AF_VSOCK | (1UL << 32), SOCK_STREAM, 0);
}

// SYS-02: other ABIs.
static struct report p_i386_getpid(void) { return R(int80(I386_getpid, 0, 0, 0, 0, 0)); }
static struct report p_i386_unshare(void) {
    return R(int80(I386_unshare, CLONE_NEWUSER, 0, 0, 0, 0));
}
static struct report i386_socket(int family, int type) {
    unsigned long* page = low_page();
    if (!page) return R(-1);
    // socketcall's arguments are an array of 32-bit words at a 32-bit address.
    unsigned int* a = (unsigned int*)page;
    a[0] = (unsigned)family;
    a[1] = (unsigned)type;
    a[2] = 0;
    return R_fd(int80(I386_socketcall, SOCKETCALL_SOCKET, (long)(uintptr_t)a, 0, 0, 0));
}
static struct report p_i386_socketcall_VSOCK(void) { return i386_socket(AF_VSOCK, SOCK_STREAM); }
static struct report p_i386_socketcall_UNIX(void) { return i386_socket(AF_UNIX, SOCK_STREAM); }
static struct report p_i386_socket_VSOCK(void) {
    return R_fd(int80(359 /* i386 socket */, AF_VSOCK, SOCK_STREAM, 0, 0, 0));
}
static struct report p_x32_getpid(void) { return R(syscall(X32_BIT | SYS_getpid)); }
static struct report p_x32_unshare(void) {
    return R(syscall(X32_BIT | SYS_unshare, CLONE_NEWUSER));
}

// TIOCSTI on a pty of the probe's own, plain and with bit 32 set (defined with the
// tty operation below).
static struct report p_ownpty_TIOCSTI(void);
static struct report p_ownpty_TIOCSTI_hi(void);

struct named {
    const char* name;
    probe_fn fn;
};

#define P(n) \
    { #n, p_##n }
static const struct named probes[] = {
    P(unshare_NEWNS),
    P(unshare_NEWCGROUP),
    P(unshare_NEWUTS),
    P(unshare_NEWIPC),
    P(unshare_NEWUSER),
    P(unshare_NEWPID),
    P(unshare_NEWNET),
    P(unshare_NEWTIME),
    P(unshare_NEWUSER_bit40),
    P(unshare_bit40),
    P(clone_NEWUSER),
    P(clone3_null),
    P(clone3_NEWUSER),
    P(setns),
    P(mount),
    P(umount2),
    P(pivot_root),
    P(open_tree),
    P(open_tree_attr),
    P(move_mount),
    P(fsopen),
    P(fsconfig),
    P(fsmount),
    P(fspick),
    P(mount_setattr),
    P(fork),
    P(pthread),
    P(io_uring_setup),
    P(io_uring_enter),
    P(io_uring_register),
    P(userfaultfd),
    P(bpf),
    P(perf_event_open),
    P(kexec_load),
    P(kexec_file_load),
    P(init_module),
    P(finit_module),
    P(delete_module),
    P(iopl),
    P(ioperm),
    P(modify_ldt),
    P(lookup_dcookie),
    P(fanotify_init),
    P(quotactl),
    P(acct),
    P(swapon),
    P(swapoff),
    P(reboot),
    P(syslog),
    P(settimeofday),
    P(clock_settime),
    P(clock_adjtime),
    P(adjtimex),
    P(move_pages),
    P(mbind),
    P(set_mempolicy),
    P(migrate_pages),
    P(uselib),
    P(ustat),
    P(sysfs),
    P(vhangup),
    P(ptrace),
    P(process_vm_readv),
    P(keyctl),
    P(add_key),
    P(request_key),
    P(personality_READ_IMPLIES_EXEC),
    P(personality_ADDR_NO_RANDOMIZE),
    P(personality_0),
    P(personality_8),
    P(personality_20000),
    P(personality_20008),
    P(personality_ffffffff),
    P(name_to_handle_at),
    P(open_by_handle_at),
    P(open_by_handle_at_badfd),
    P(name_to_handle_at_nsfs),
    P(open_by_handle_at_nsfs),
    P(socket_VSOCK),
    P(socket_ALG),
    P(socket_BLUETOOTH),
    P(socket_CAN),
    P(socket_KEY),
    P(socket_PACKET),
    P(socket_NETLINK_AUDIT),
    P(socket_NETLINK_UEVENT),
    P(socket_UNIX),
    P(socket_INET),
    P(socket_INET6),
    P(socket_NETLINK_ROUTE),
    P(socket_NETLINK_AUDIT_hi),
    P(socket_NETLINK_UEVENT_hi),
    P(socket_NETLINK_hi_AUDIT),
    P(socket_NETLINK_ROUTE_hi),
    P(socket_INET_hi),
    P(socket_VSOCK_hi),
    P(ownpty_TIOCSTI),
    P(ownpty_TIOCSTI_hi),
    P(i386_getpid),
    P(i386_unshare),
    P(i386_socketcall_VSOCK),
    P(i386_socketcall_UNIX),
    P(i386_socket_VSOCK),
    P(x32_getpid),
    P(x32_unshare),
};
#undef P

static int op_call(int argc, char** argv) {
    int n = (int)(sizeof probes / sizeof probes[0]);
    for (int a = 0; a < argc; ++a) {
        int all = strcmp(argv[a], "all") == 0, found = 0;
        for (int i = 0; i < n; ++i) {
            if (!all && strcmp(argv[a], probes[i].name) != 0) continue;
            found = 1;
            struct outcome o = in_child(probes[i].fn, 5);
            printf("%s=%s\n", probes[i].name, o.text);
        }
        if (!found) {
            fprintf(stderr, "sysprobe: no probe named %s (try: sysprobe list)\n", argv[a]);
            return 2;
        }
    }
    return 0;
}

// ---- the sweep -----------------------------------------------------------------

// Numbers whose call, even with every argument -1, does something to the probe itself
// or blocks: they are not made. The reason is printed in their place.
static const char* skip_reason(const char* abi, long nr) {
    if (strcmp(abi, "i386") == 0) {
        switch (nr) {
        case 1: return "exit";
        case 2: return "fork";
        case 29: return "pause-blocks";
        case 37: return "kill-sends-signals";
        case 72: return "sigsuspend-blocks";
        case 119: return "sigreturn-corrupts-registers";
        case 173: return "rt_sigreturn-corrupts-registers";
        case 190: return "vfork-shares-memory";
        case 238: return "tkill-sends-signals";
        case 252: return "exit_group";
        case 270: return "tgkill-sends-signals";
        default: return NULL;
        }
    }
    // x86_64 and x32 share the numbers below 512 for these.
    switch (nr) {
    case SYS_rt_sigreturn: return "rt_sigreturn-corrupts-registers";
    case SYS_pause: return "pause-blocks";
    case SYS_fork: return "fork";
    case SYS_vfork: return "vfork-shares-memory";
    case SYS_exit: return "exit";
    case SYS_exit_group: return "exit_group";
    case SYS_kill: return "kill-sends-signals";
    case SYS_tkill: return "tkill-sends-signals";
    case SYS_tgkill: return "tgkill-sends-signals";
    default: return NULL;
    }
}

static const char* g_abi;
static long g_nr;

static struct report sweep_one(void) {
    const long m = -1;
    if (strcmp(g_abi, "i386") == 0) return R(int80(g_nr, m, m, m, m, m));
    long nr = strcmp(g_abi, "x32") == 0 ? (g_nr | X32_BIT) : g_nr;
    return R(syscall(nr, m, m, m, m, m, m));
}

static int op_sweep(const char* abi, long from, long to) {
    if (strcmp(abi, "x86_64") != 0 && strcmp(abi, "i386") != 0 && strcmp(abi, "x32") != 0) {
        fprintf(stderr, "sysprobe: unknown ABI %s\n", abi);
        return 2;
    }
    g_abi = abi;
    for (long nr = from; nr <= to; ++nr) {
        const char* why = skip_reason(abi, nr);
        if (why) {
            printf("%ld skip:%s\n", nr, why);
            continue;
        }
        g_nr = nr;
        struct outcome o = in_child(sweep_one, 2);
        printf("%ld %s\n", nr, o.text);
    }
    return 0;
}

// ---- SYS-05: threads and stacking ---------------------------------------------

static pthread_barrier_t g_started, g_read;

static void* thread_probe(void* arg) {
    long idx = (long)arg;
    long r = syscall(SYS_ptrace, PTRACE_ATTACH, NO_SUCH_PID, 0, 0);
    struct outcome o = from_ret(r, errno);
    printf("thread%ld_ptrace=%s\n", idx, o.text);  // before main starts its own lines
    fflush(stdout);
    pthread_barrier_wait(&g_started);
    pthread_barrier_wait(&g_read);  // stay alive until main has read every status
    return NULL;
}

static int op_threads(void) {
    enum { N = 4 };
    pthread_t t[N];
    pthread_barrier_init(&g_started, NULL, N + 1);
    pthread_barrier_init(&g_read, NULL, N + 1);
    for (long i = 0; i < N; ++i)
        if (pthread_create(&t[i], NULL, thread_probe, (void*)i) != 0) {
            printf("pthread_create failed\n");
            return 1;
        }
    pthread_barrier_wait(&g_started);
    fflush(stdout);
    DIR* d = opendir("/proc/self/task");
    int tasks = 0;
    struct dirent* e;
    while (d && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        char path[300], buf[8192];
        snprintf(path, sizeof path, "/proc/self/task/%s/status", e->d_name);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof buf - 1);
        if (fd >= 0) close(fd);
        if (n <= 0) continue;
        buf[n] = '\0';
        ++tasks;
        const char* keys[] = {"Seccomp:", "Seccomp_filters:", "NoNewPrivs:"};
        const char* out[] = {"seccomp", "filters", "nnp"};
        char line[256];
        int len = snprintf(line, sizeof line, "task%d", tasks);
        for (int k = 0; k < 3; ++k) {
            char* p = strstr(buf, keys[k]);
            // "Seccomp:" also matches the start of "Seccomp_filters:": require the tab.
            while (p && p[strlen(keys[k])] != '\t') p = strstr(p + 1, keys[k]);
            len += snprintf(line + len, sizeof line - (size_t)len, " %s=%ld", out[k],
                            p ? strtol(p + strlen(keys[k]), NULL, 10) : -1L);
        }
        printf("%s\n", line);
    }
    if (d) closedir(d);
    printf("tasks=%d\n", tasks);
    fflush(stdout);
    pthread_barrier_wait(&g_read);
    for (int i = 0; i < N; ++i) pthread_join(t[i], NULL);
    return 0;
}

static int install(struct sock_filter* f, unsigned short len, unsigned flags) {
    struct sock_fprog prog = {len, f};
    return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &prog);
}

static int g_listener = -1;
static volatile int g_seen;  // notifications our listener received

// The attacker's supervisor: lets every notified call through.
static void* continue_all(void* arg) {
    (void)arg;
    for (;;) {
        struct seccomp_notif req;
        struct seccomp_notif_resp resp;
        memset(&req, 0, sizeof req);
        if (ioctl(g_listener, SECCOMP_IOCTL_NOTIF_RECV, &req) != 0) return NULL;
        memset(&resp, 0, sizeof resp);
        ++g_seen;
        resp.id = req.id;
        resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
        ioctl(g_listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
    }
}

static struct report p_modify_ldt_now(void) { return p_modify_ldt(); }

// In a child: an allow-all filter, then the blocked call.
static struct report stack_plain(void) {
    struct sock_filter allow[] = {BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
    if (install(allow, 1, 0) != 0) return R(-1);
    return p_modify_ldt();
}

// In a child: a filter that hands modify_ldt to our own listener, which answers
// CONTINUE; if the kernel let this listener decide, the blocked call would go through.
static struct report stack_listener(void) {
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_modify_ldt, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    g_listener = install(f, 4, SECCOMP_FILTER_FLAG_NEW_LISTENER);
    if (g_listener < 0) {
        struct report r = R(-1);
        r.ret = SETUP_FAILED;  // the stacking itself was refused: stack_listener says how
        return r;
    }
    pthread_t t;
    pthread_create(&t, NULL, continue_all, NULL);
    struct report r = p_modify_ldt();
    if (r.ret >= 0 && g_seen == 0) {
        // It worked, but not through our listener: the probe proved nothing.
        errno = ENOMSG;
        return setup_failed();
    }
    return r;
}

static struct report stack_listener_install_only(void) {
    struct sock_filter allow[] = {BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
    return R_fd(install(allow, 1, SECCOMP_FILTER_FLAG_NEW_LISTENER));
}

static struct report stack_plain_install_only(void) {
    struct sock_filter allow[] = {BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
    return R(install(allow, 1, 0));
}

static int op_stack(void) {
    printf("before=%s\n", in_child(p_modify_ldt_now, 5).text);
    printf("stack_plain=%s\n", in_child(stack_plain_install_only, 5).text);
    printf("after_plain=%s\n", in_child(stack_plain, 5).text);
    printf("stack_listener=%s\n", in_child(stack_listener_install_only, 5).text);
    printf("after_listener=%s\n", in_child(stack_listener, 5).text);
    return 0;
}

// ---- the denial log ------------------------------------------------------------

static int op_three(void) {
    long a = syscall(SYS_ptrace, PTRACE_ATTACH, NO_SUCH_PID, 0, 0);
    int ea = errno;
    long b = syscall(SYS_bpf, -1, NULL, 0);
    int eb = errno;
    long c = syscall(SYS_unshare, CLONE_NEWUSER);
    int ec = errno;
    printf("ptrace=%s\nbpf=%s\nunshare=%s\n", from_ret(a, ea).text, from_ret(b, eb).text,
           from_ret(c, ec).text);
    return 0;
}

static int op_flood(long n) {
    long refused = 0;
    for (long i = 0; i < n; ++i) {
        if (syscall(SYS_ptrace, PTRACE_ATTACH, NO_SUCH_PID, 0, 0) < 0 && errno != ESRCH) ++refused;
        if (syscall(SYS_bpf, -1, NULL, 0) < 0 && errno != EINVAL) ++refused;
    }
    printf("refused=%ld\n", refused);
    return 0;
}

// ---- TTY-01 --------------------------------------------------------------------

static int g_tty_fd;
static unsigned long g_tty_cmd;
static char g_tty_char = '#';  // a comment character: harmless even if it lands

static struct report tty_ioctl(void) {
    return R(syscall(SYS_ioctl, g_tty_fd, g_tty_cmd, &g_tty_char));
}

static struct report tty_linux(void) {
    char sub = TIOCL_GETSHIFTSTATE;
    return R(syscall(SYS_ioctl, g_tty_fd, (unsigned long)TIOCLINUX, &sub));
}

static struct report tty_winsz(void) {
    struct winsize ws;
    return R(syscall(SYS_ioctl, g_tty_fd, (unsigned long)TIOCGWINSZ, &ws));
}

// A pty of our own, made our controlling terminal in a new session: the kernel
// allows TIOCSTI there (dev.tty.legacy_tiocsti=1), so only a filter refuses it.
static struct report own_pty_ioctl(unsigned long cmd) {
    int m = posix_openpt(O_RDWR | O_NOCTTY);
    if (m < 0 || grantpt(m) != 0 || unlockpt(m) != 0) return setup_failed();
    char* name = ptsname(m);
    if (!name || setsid() < 0) return setup_failed();
    int s = open(name, O_RDWR);  // the first tty a session leader opens becomes its ctty
    if (s < 0) return setup_failed();
    ioctl(s, TIOCSCTTY, 0);
    return R(syscall(SYS_ioctl, s, cmd, &g_tty_char));
}
static struct report own_pty_tiocsti(void) { return own_pty_ioctl(TIOCSTI); }
static struct report p_ownpty_TIOCSTI(void) { return own_pty_ioctl(TIOCSTI); }
// CVE-2019-10063: ioctl's request is an unsigned int, the kernel drops bit 32.
static struct report p_ownpty_TIOCSTI_hi(void) {
    return own_pty_ioctl((1UL << 32) | (unsigned long)TIOCSTI);
}

static int op_tty(void) {
    int devtty = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
    printf("devtty_open=%s\n", from_ret(devtty, errno).text);
    struct {
        const char* name;
        int fd;
    } fds[] = {{"fd0", 0}, {"fd1", 1}, {"fd2", 2}, {"devtty", devtty}};
    for (unsigned i = 0; i < sizeof fds / sizeof fds[0]; ++i) {
        if (fds[i].fd < 0) continue;
        g_tty_fd = fds[i].fd;
        printf("%s_isatty=%d\n", fds[i].name, isatty(fds[i].fd));
        printf("%s_TIOCGWINSZ=%s\n", fds[i].name, in_child(tty_winsz, 5).text);
        g_tty_cmd = TIOCSTI;
        printf("%s_TIOCSTI=%s\n", fds[i].name, in_child(tty_ioctl, 5).text);
        g_tty_cmd = (1UL << 32) | TIOCSTI;  // CVE-2019-10063: the kernel ignores the high bits
        printf("%s_TIOCSTI_hi=%s\n", fds[i].name, in_child(tty_ioctl, 5).text);
        printf("%s_TIOCLINUX=%s\n", fds[i].name, in_child(tty_linux, 5).text);
    }
    struct outcome own = in_child(own_pty_tiocsti, 5);
    printf("ownpty_TIOCSTI=%s\n", own.text);
    return 0;
}

int main(int argc, char** argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc >= 2 && strcmp(argv[1], "call") == 0 && argc >= 3) return op_call(argc - 2, argv + 2);
    if (argc == 2 && strcmp(argv[1], "list") == 0) {
        for (unsigned i = 0; i < sizeof probes / sizeof probes[0]; ++i)
            printf("%s\n", probes[i].name);
        return 0;
    }
    if (argc == 5 && strcmp(argv[1], "sweep") == 0)
        return op_sweep(argv[2], strtol(argv[3], NULL, 0), strtol(argv[4], NULL, 0));
    if (argc == 2 && strcmp(argv[1], "threads") == 0) return op_threads();
    if (argc == 2 && strcmp(argv[1], "stack") == 0) return op_stack();
    if (argc == 2 && strcmp(argv[1], "three") == 0) return op_three();
    if (argc == 2 && strcmp(argv[1], "tty") == 0) return op_tty();
    if (argc == 3 && strcmp(argv[1], "flood") == 0) return op_flood(strtol(argv[2], NULL, 0));
    fprintf(stderr,
            "usage: sysprobe call NAME...|all | list | sweep ABI FROM TO | threads | stack | three "
            "| tty | flood N\n");
    return 2;
}
