// SPDX-License-Identifier: Apache-2.0
// Landlock as a second wall behind the mounts (plan.hpp's Landlock, docs/landlock.md):
// the rules come from the final mount list, so that they grant exactly what the mounts
// leave writable, and nothing a mount alone would have to hold.
#include "plan/internal.hpp"

#include "sys/landlock.hpp"

#include <cerrno>

namespace agentjail::plan::detail {

namespace {

namespace ll = sys::landlock;

// Everything a writable tree may be asked for, but making device nodes: nobody in the
// sandbox has CAP_MKNOD, and the probe relies on that right being granted nowhere.
constexpr std::uint64_t kWriteTree = ~(ll::kMakeChar | ll::kMakeBlock);
// A device directory: its devices read, written and asked ioctls of; no new names.
constexpr std::uint64_t kDevices = ll::kReadFile | ll::kWriteFile | ll::kTruncate | ll::kIoctlDev;

std::string why_not(long abi) {
    if (abi == -ENOSYS) return "this kernel has no Landlock (built without CONFIG_SECURITY_LANDLOCK)";
    if (abi == -EOPNOTSUPP)
        return "Landlock is built into this kernel but not enabled (add landlock to the lsm= boot "
               "parameter)";
    if (abi <= 0) return "Landlock was not asked for its version";
    return "this kernel's Landlock is ABI 1 (Linux 5.13-5.18), which refuses every rename or link "
           "across directories; agentjail needs ABI 2 (Linux 5.19)";
}

}  // namespace

Result<void> plan_landlock(const policy::Policy& policy, const HostFacts& host, Plan& plan) {
    Landlock& l = plan.landlock;
    l.mode = policy.landlock.value;
    l.origin = describe(policy.landlock.origin);
    l.abi = host.landlock_abi;
    if (l.mode == policy::LandlockMode::off) return {};
    auto refuse = [&](const std::string& why) -> Result<void> {
        if (l.mode == policy::LandlockMode::required)
            return Error(ErrorKind::unsupported, EOPNOTSUPP,
                         "Landlock is required (" + l.origin + ") but " + why);
        l.missing = why;
        return {};
    };
    if (plan.allow_nested_userns) {
        // Not missing: the policy chose what Landlock cannot give.
        const std::string why = "the policy allows nested sandboxes (" +
                                std::string(policy.seccomp.present ? "[seccomp] nested_sandboxes"
                                                                   : "no [seccomp] section") +
                                "), and a sandbox inside needs mount(2), which a Landlock domain refuses";
        if (l.mode == policy::LandlockMode::required) return refuse(why);
        plan.notes.push_back("landlock: off: " + why);
        l.mode = policy::LandlockMode::off;
        return {};
    }
    if (l.abi < 2) return refuse(why_not(l.abi));

    l.handled_fs = ll::fs_rights(l.abi);
    l.scoped = ll::scopes(l.abi);
    l.rules.push_back({"/", ll::kRead, "the whole tree, read-only unless a rule below grants more"});
    for (const auto& m : plan.mounts) {
        if (m.read_only) continue;
        std::uint64_t access = 0;
        std::string why = m.why;
        switch (m.kind) {
            case MountKind::proc:
                // Its files may be written as the kernel allows (a process's own
                // oom_score_adj); nothing can be made in it.
                access = ll::kWriteFile | ll::kTruncate;
                break;
            case MountKind::devpts: access = kDevices | ll::kReadDir; break;
            case MountKind::tmpfs:
                // /dev holds only the devices bound there: they are used, none is added.
                access = m.dst == "/dev" ? kDevices : kWriteTree;
                if (m.dst == "/dev") {
                    l.probe_path = "/dev/.agentjail-landlock-probe";
                    l.probe_fifo = true;
                } else if ((m.mode & 01777) == 01777 && l.probe_path.empty()) {
                    l.probe_path = m.dst + "/.agentjail-landlock-probe";
                }
                break;
            case MountKind::bind: access = m.is_dir ? kWriteTree : ll::kFileOnly & kWriteTree; break;
            case MountKind::overlay:
            case MountKind::view: access = kWriteTree; break;
            case MountKind::symlink:
            case MountKind::mask_dir:
            case MountKind::mask_file:
            case MountKind::readonly: break;
        }
        access &= l.handled_fs;
        if (access != 0) l.rules.push_back({m.dst, access, why});
    }
    if (l.probe_path.empty()) {
        // A directory the command may write by its permissions: else the answer could
        // be the directory's, not Landlock's.
        if (l.mode == policy::LandlockMode::required)
            return refuse("the plan has neither /dev nor a world-writable tmpfs (/tmp) to prove it is enforced in");
        plan.notes.push_back("landlock: applied without its probe: the plan has neither /dev nor a "
                             "world-writable tmpfs (/tmp) to check it in");
    }
    l.apply = true;
    return {};
}

std::string landlock_rights(std::uint64_t access) {
    static const std::pair<std::uint64_t, const char*> words[] = {
        {ll::kReadFile | ll::kReadDir, "read"},
        {ll::kExecute, "execute"},
        {ll::kWriteFile, "write"},
        {ll::kTruncate, "truncate"},
        {ll::kMakeReg | ll::kMakeDir | ll::kMakeSym | ll::kMakeSock | ll::kMakeFifo, "make"},
        {ll::kRemoveFile | ll::kRemoveDir, "remove"},
        {ll::kRefer, "move-across-dirs"},
        {ll::kIoctlDev, "device-ioctl"},
    };
    std::string out;
    for (const auto& [bits, word] : words)
        if ((access & bits) != 0) out += (out.empty() ? "" : " ") + std::string(word);
    return out.empty() ? "nothing" : out;
}

std::string landlock_text(const Plan& plan) {
    const Landlock& l = plan.landlock;
    std::string out = "\nlandlock (" + std::string(policy::landlock_mode_name(l.mode)) + ", " + l.origin + "): ";
    if (l.mode == policy::LandlockMode::off) return out + "off\n";
    if (!l.apply) return out + "not applied: " + l.missing + "\n";
    out += "ABI " + std::to_string(l.abi) + ", applied by the command before its filter\n";
    for (const auto& r : l.rules) out += "  " + r.path + "  " + landlock_rights(r.access) + "\n";
    out += "  (and descriptors passed to the command, where they are files, as they were opened)\n";
    if (l.scoped != 0)
        out += "  scoped     signals and abstract Unix sockets reach no process outside the command's own\n";
    out += "  probe      " +
           (l.probe_path.empty() ? "none (neither /dev nor a world-writable tmpfs)" : l.probe_what() + " must be refused") +
           "\n";
    return out;
}

}  // namespace agentjail::plan::detail

namespace agentjail::plan {

std::string Landlock::probe_what() const {
    return std::string(probe_fifo ? "a FIFO" : "a device node") + " at " + probe_path;
}

}  // namespace agentjail::plan
