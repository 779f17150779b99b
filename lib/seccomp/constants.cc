// SPDX-License-Identifier: Apache-2.0
// The named constants that seccomp conditions may use (clone flags, ioctl numbers,
// address families, socket types, personality values, prctl operations) and errno names.
#include "seccomp/internal.hpp"

#include <linux/fs.h>
#include <linux/netlink.h>
#include <sched.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <termios.h>

#include "base/clone_flags.hpp"  // after <sched.h>

#include <algorithm>
#include <map>
#include <utility>

// Older headers may lack the newest flags; the values are the kernel's ABI.
#ifndef TIOCGPTPEER
#define TIOCGPTPEER 0x5441
#endif

namespace agentjail::seccomp::detail {
namespace {

#define AJ_C(name) {#name, static_cast<std::uint64_t>(name)}

const std::map<std::string_view, std::uint64_t>& table() {
    static const std::map<std::string_view, std::uint64_t> t = {
        // clone(2) / unshare(2) flags. CLONE_NEW* are the ones the default policy refuses.
        AJ_C(CLONE_VM), AJ_C(CLONE_FS), AJ_C(CLONE_FILES), AJ_C(CLONE_SIGHAND),
        AJ_C(CLONE_PIDFD), AJ_C(CLONE_PTRACE), AJ_C(CLONE_VFORK), AJ_C(CLONE_PARENT),
        AJ_C(CLONE_THREAD), AJ_C(CLONE_NEWNS), AJ_C(CLONE_SYSVSEM), AJ_C(CLONE_SETTLS),
        AJ_C(CLONE_PARENT_SETTID), AJ_C(CLONE_CHILD_CLEARTID), AJ_C(CLONE_DETACHED),
        AJ_C(CLONE_UNTRACED), AJ_C(CLONE_CHILD_SETTID), AJ_C(CLONE_NEWCGROUP),
        AJ_C(CLONE_NEWUTS), AJ_C(CLONE_NEWIPC), AJ_C(CLONE_NEWUSER), AJ_C(CLONE_NEWPID),
        AJ_C(CLONE_NEWNET), AJ_C(CLONE_IO), AJ_C(CLONE_NEWTIME), AJ_C(CLONE_CLEAR_SIGHAND),
        AJ_C(CLONE_INTO_CGROUP),
        // ioctl(2) requests: the terminal ones that matter to a sandbox, and common ones.
        AJ_C(TIOCSTI), AJ_C(TIOCLINUX), AJ_C(TIOCSCTTY), AJ_C(TIOCNOTTY), AJ_C(TIOCCONS),
        AJ_C(TIOCSETD), AJ_C(TIOCGWINSZ), AJ_C(TIOCSWINSZ), AJ_C(TIOCGPGRP), AJ_C(TIOCSPGRP),
        AJ_C(TIOCGPTN), AJ_C(TIOCSPTLCK), AJ_C(TIOCGPTPEER), AJ_C(TCGETS), AJ_C(TCSETS),
        AJ_C(TCSETSW), AJ_C(TCSETSF), AJ_C(FIONREAD), AJ_C(FIONBIO), AJ_C(FIOCLEX),
        AJ_C(FIONCLEX), AJ_C(FIOASYNC), AJ_C(FICLONE), AJ_C(FICLONERANGE),
        AJ_C(FS_IOC_GETFLAGS), AJ_C(FS_IOC_SETFLAGS),
        // Address families (socket(2) arg0).
        AJ_C(AF_UNSPEC), AJ_C(AF_UNIX), AJ_C(AF_LOCAL), AJ_C(AF_INET), AJ_C(AF_AX25),
        AJ_C(AF_IPX), AJ_C(AF_APPLETALK), AJ_C(AF_NETROM), AJ_C(AF_BRIDGE), AJ_C(AF_ATMPVC),
        AJ_C(AF_X25), AJ_C(AF_INET6), AJ_C(AF_ROSE), AJ_C(AF_DECnet), AJ_C(AF_NETBEUI),
        AJ_C(AF_SECURITY), AJ_C(AF_KEY), AJ_C(AF_NETLINK), AJ_C(AF_ROUTE), AJ_C(AF_PACKET),
        AJ_C(AF_ASH), AJ_C(AF_ECONET), AJ_C(AF_ATMSVC), AJ_C(AF_RDS), AJ_C(AF_SNA),
        AJ_C(AF_IRDA), AJ_C(AF_PPPOX), AJ_C(AF_WANPIPE), AJ_C(AF_LLC), AJ_C(AF_IB),
        AJ_C(AF_MPLS), AJ_C(AF_CAN), AJ_C(AF_TIPC), AJ_C(AF_BLUETOOTH), AJ_C(AF_IUCV),
        AJ_C(AF_RXRPC), AJ_C(AF_ISDN), AJ_C(AF_PHONET), AJ_C(AF_IEEE802154), AJ_C(AF_CAIF),
        AJ_C(AF_ALG), AJ_C(AF_NFC), AJ_C(AF_VSOCK), AJ_C(AF_KCM), AJ_C(AF_QIPCRTR),
        AJ_C(AF_SMC), AJ_C(AF_XDP), AJ_C(AF_MCTP), AJ_C(AF_MAX),
        // Netlink protocols (socket(AF_NETLINK, type, protocol) arg2).
        AJ_C(NETLINK_ROUTE), AJ_C(NETLINK_USERSOCK), AJ_C(NETLINK_FIREWALL),
        AJ_C(NETLINK_SOCK_DIAG), AJ_C(NETLINK_NFLOG), AJ_C(NETLINK_XFRM),
        AJ_C(NETLINK_SELINUX), AJ_C(NETLINK_ISCSI), AJ_C(NETLINK_AUDIT),
        AJ_C(NETLINK_FIB_LOOKUP), AJ_C(NETLINK_CONNECTOR), AJ_C(NETLINK_NETFILTER),
        AJ_C(NETLINK_IP6_FW), AJ_C(NETLINK_DNRTMSG), AJ_C(NETLINK_KOBJECT_UEVENT),
        AJ_C(NETLINK_GENERIC), AJ_C(NETLINK_SCSITRANSPORT), AJ_C(NETLINK_ECRYPTFS),
        AJ_C(NETLINK_RDMA), AJ_C(NETLINK_CRYPTO),
        // Socket types and their flags (socket(2) arg1).
        AJ_C(SOCK_STREAM), AJ_C(SOCK_DGRAM), AJ_C(SOCK_RAW), AJ_C(SOCK_RDM),
        AJ_C(SOCK_SEQPACKET), AJ_C(SOCK_DCCP), AJ_C(SOCK_PACKET), AJ_C(SOCK_NONBLOCK),
        AJ_C(SOCK_CLOEXEC),
        // personality(2) values and flags.
        AJ_C(PER_LINUX), AJ_C(PER_LINUX_32BIT), AJ_C(PER_LINUX_FDPIC), AJ_C(PER_LINUX32),
        AJ_C(PER_LINUX32_3GB), AJ_C(PER_SVR4), AJ_C(PER_BSD), AJ_C(PER_MASK),
        AJ_C(UNAME26), AJ_C(ADDR_NO_RANDOMIZE), AJ_C(FDPIC_FUNCPTRS), AJ_C(MMAP_PAGE_ZERO),
        AJ_C(ADDR_COMPAT_LAYOUT), AJ_C(READ_IMPLIES_EXEC), AJ_C(ADDR_LIMIT_32BIT),
        AJ_C(SHORT_INODE), AJ_C(WHOLE_SECONDS), AJ_C(STICKY_TIMEOUTS), AJ_C(ADDR_LIMIT_3GB),
        // prctl(2) operations (arg0).
        AJ_C(PR_SET_PDEATHSIG), AJ_C(PR_GET_PDEATHSIG), AJ_C(PR_GET_DUMPABLE),
        AJ_C(PR_SET_DUMPABLE), AJ_C(PR_GET_KEEPCAPS), AJ_C(PR_SET_KEEPCAPS),
        AJ_C(PR_SET_NAME), AJ_C(PR_GET_NAME), AJ_C(PR_GET_SECCOMP), AJ_C(PR_SET_SECCOMP),
        AJ_C(PR_CAPBSET_READ), AJ_C(PR_CAPBSET_DROP), AJ_C(PR_GET_SECUREBITS),
        AJ_C(PR_SET_SECUREBITS), AJ_C(PR_SET_TIMERSLACK), AJ_C(PR_GET_TIMERSLACK),
        AJ_C(PR_SET_PTRACER), AJ_C(PR_SET_CHILD_SUBREAPER), AJ_C(PR_GET_CHILD_SUBREAPER),
        AJ_C(PR_SET_NO_NEW_PRIVS), AJ_C(PR_GET_NO_NEW_PRIVS), AJ_C(PR_SET_MM),
        AJ_C(PR_SET_THP_DISABLE), AJ_C(PR_GET_THP_DISABLE), AJ_C(PR_CAP_AMBIENT),
        AJ_C(PR_SET_SPECULATION_CTRL), AJ_C(PR_GET_SPECULATION_CTRL),
        // Memory protection (mmap/mprotect arg2).
        AJ_C(PROT_NONE), AJ_C(PROT_READ), AJ_C(PROT_WRITE), AJ_C(PROT_EXEC),
    };
    return t;
}

#undef AJ_C

const std::map<std::string, int, std::less<>>& errno_table() {
    // Every name glibc knows (strerrorname_np), so "any errno name" means exactly that.
    static const std::map<std::string, int, std::less<>> t = [] {
        std::map<std::string, int, std::less<>> m;
        for (int e = 1; e < 4096; ++e)
            if (const char* n = ::strerrorname_np(e)) m.emplace(n, e);
        return m;
    }();
    return t;
}

}  // namespace

std::optional<std::uint64_t> constant(std::string_view name) {
    const auto& t = table();
    auto it = t.find(name);
    if (it == t.end()) return std::nullopt;
    return it->second;
}

std::optional<int> errno_value(std::string_view name) {
    const auto& t = errno_table();
    auto it = t.find(name);
    if (it == t.end()) return std::nullopt;
    return it->second;
}

std::string errno_text(int err) {
    const char* n = ::strerrorname_np(err);
    return n ? std::string(n) : "errno " + std::to_string(err);
}

}  // namespace agentjail::seccomp::detail
