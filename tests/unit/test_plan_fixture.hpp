// SPDX-License-Identifier: Apache-2.0
// Shared scaffolding for the plan unit tests: a scratch host tree (home, project,
// secrets, a merged-/usr style system dir), host facts pointing at it, and
// Policy shapes built by hand like the built-in minimal and default policies.
#pragma once

#include "plan/plan.hpp"
#include "test_support.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <string>
#include <vector>

namespace ajplantest {

using agentjail::plan::HostFacts;
using agentjail::plan::MountKind;
using agentjail::plan::MountOp;
using agentjail::plan::Plan;
using agentjail::policy::HideRule;
using agentjail::policy::MountRule;
using agentjail::policy::Origin;
using agentjail::policy::Policy;
using agentjail::policy::TmpfsRule;

inline Origin at(const std::string& file, int line, int col, const std::string& key) {
    return Origin{file, line, col, key};
}

inline Origin flag(const std::string& name) { return Origin{"command line", 0, 0, name}; }

// T/sys/usr/{bin,lib,lib64}, T/sys/bin -> usr/bin, T/sys/lib64 -> usr/lib64,
// T/home/u/{proj,.ssh,.aws}, proj/.env and .env.local, T/data/file.
class PlanTree {
public:
    PlanTree() {
        tmp.mkdir("sys/usr/bin");
        tmp.mkdir("sys/usr/lib");
        tmp.mkdir("sys/usr/lib64");
        tmp.write("sys/usr/bin/tool", "#!/bin/sh\n", 0755);
        tmp.mkdir("sys/etc");
        symlink("usr/bin", (tmp.path() + "/sys/bin").c_str());
        symlink("usr/lib64", (tmp.path() + "/sys/lib64").c_str());
        tmp.write("home/u/.ssh/id_ed25519", "AJ-CANARY-ssh\n", 0600);
        tmp.write("home/u/.ssh/config", "Host *\n");
        tmp.write("home/u/.aws/credentials", "AJ-CANARY-aws\n", 0600);
        tmp.write("home/u/proj/main.c", "int main(void) { return 0; }\n");
        tmp.write("home/u/proj/.env", "KEY=AJ-CANARY-env\n");
        tmp.write("home/u/proj/.env.local", "KEY=AJ-CANARY-env-local\n");
        tmp.mkdir("home/u/proj/src");
        tmp.write("data/file", "data\n");
        tmp.mkdir("data/dir");
    }

    std::string p(const std::string& rel) const { return tmp.path() + "/" + rel; }
    std::string sys(const std::string& rel) const { return p("sys/" + rel); }
    std::string home() const { return p("home/u"); }
    std::string proj() const { return p("home/u/proj"); }

    HostFacts host() const {
        HostFacts h;
        h.uid = 1000;
        h.gid = 1001;
        h.user = "u";
        h.home = home();
        h.cwd = proj();
        h.environ = {"PATH=/usr/bin:/bin",
                     "TERM=xterm-256color",
                     "HOME=" + home(),
                     "USER=someone-else",
                     "LANG=C.UTF-8",
                     "LC_ALL=C",
                     "GITHUB_TOKEN=AJ-CANARY-gh",
                     "OPENAI_API_KEY=AJ-CANARY-openai",
                     "MY_SECRET_THING=AJ-CANARY-s",
                     "SSH_AUTH_SOCK=/run/ssh.sock",
                     "EDITOR=vim",
                     "TMPDIR=" + p("tmpdir")};
        return h;
    }

    // Like policies/minimal.toml, over the scratch system tree.
    Policy minimal() const {
        Policy pol;
        pol.name = "minimal";
        pol.layers = {"minimal"};
        // The plan's own mounts below the workspace are what these tests check; the
        // view ([workspace] view = "fuse", the default) turns them into its rules, and
        // its tests ask for it by name (test_view_rules.cc, tests/escape/view_test.cc).
        pol.workspace_view = {agentjail::policy::WorkspaceView::mounts, {}};
        pol.ro.push_back(
            MountRule{sys("usr"), "", false, at("minimal.toml", 4, 9, "filesystem.ro[0]")});
        pol.ro.push_back(
            MountRule{sys("bin"), "", false, at("minimal.toml", 4, 17, "filesystem.ro[1]")});
        pol.ro.push_back(
            MountRule{sys("lib64"), "", true, at("minimal.toml", 5, 3, "filesystem.ro[2]")});
        pol.ro.push_back(
            MountRule{sys("lib32"), "", true, at("minimal.toml", 5, 30, "filesystem.ro[3]")});
        pol.ro.push_back(
            MountRule{sys("etc"), "", false, at("minimal.toml", 6, 3, "filesystem.ro[4]")});
        pol.tmpfs.push_back(TmpfsRule{"/tmp", 0, at("minimal.toml", 8, 9, "filesystem.tmpfs[0]")});
        pol.workspace = {agentjail::policy::WorkspaceAccess::none,
                         at("minimal.toml", 9, 13, "filesystem.workspace")};
        pol.private_home = {false, at("minimal.toml", 10, 8, "filesystem.home")};
        pol.proc = {true, at("minimal.toml", 11, 8, "filesystem.proc")};
        pol.dev = {true, at("minimal.toml", 12, 7, "filesystem.dev")};
        pol.env_allow = {{"PATH", {}}, {"TERM", {}}, {"LANG", {}}, {"LC_*", {}}};
        return pol;
    }

    // Like policies/default.toml: minimal plus workspace, private home, hides, env lists.
    Policy defaults() const {
        Policy pol = minimal();
        pol.name = "default";
        pol.layers = {"minimal", "default"};
        pol.workspace = {agentjail::policy::WorkspaceAccess::rw,
                         at("default.toml", 9, 13, "filesystem.workspace")};
        pol.private_home = {true, at("default.toml", 10, 8, "filesystem.home")};
        pol.hide.push_back(HideRule{"~/.ssh", at("default.toml", 30, 5, "filesystem.hide[0]")});
        pol.hide.push_back(HideRule{"~/.aws", at("default.toml", 30, 15, "filesystem.hide[1]")});
        pol.hide.push_back(HideRule{"~/.gnupg", at("default.toml", 30, 25, "filesystem.hide[2]")});
        pol.hide.push_back(
            HideRule{"{workspace}/.env*", at("default.toml", 31, 5, "filesystem.hide[3]")});
        pol.env_allow = {{"PATH", {}}, {"TERM", {}},    {"LANG", {}},  {"LC_*", {}},
                         {"USER", {}}, {"LOGNAME", {}}, {"EDITOR", {}}};
        pol.env_deny = {{"*_KEY", {}}, {"*_TOKEN", {}}, {"*SECRET*", {}}, {"SSH_AUTH_SOCK", {}}};
        return pol;
    }

    ajtest::TempDir tmp{"aj-plan"};
};

inline const MountOp* find_op(const Plan& plan, const std::string& dst) {
    for (const auto& op : plan.mounts)
        if (op.dst == dst) return &op;
    return nullptr;
}

inline size_t index_of(const Plan& plan, const std::string& dst) {
    for (size_t i = 0; i < plan.mounts.size(); ++i)
        if (plan.mounts[i].dst == dst) return i;
    return plan.mounts.size();
}

inline bool has_note(const Plan& plan, const std::string& part) {
    return std::any_of(plan.notes.begin(), plan.notes.end(),
                       [&](const std::string& n) { return n.find(part) != std::string::npos; });
}

// A warning the run prints on stderr (plan.warnings).
inline bool has_warning(const Plan& plan, const std::string& part) {
    return std::any_of(plan.warnings.begin(), plan.warnings.end(),
                       [&](const std::string& n) { return n.find(part) != std::string::npos; });
}

inline std::string env_of(const Plan& plan, const std::string& name) {
    for (const auto& kv : plan.env)
        if (kv.rfind(name + "=", 0) == 0) return kv.substr(name.size() + 1);
    return "<unset>";
}

inline std::string dump_mounts(const Plan& plan) {
    std::string out;
    for (const auto& op : plan.mounts)
        out += std::to_string(static_cast<int>(op.kind)) + " " + op.dst + " <- " + op.src + "\n";
    for (const auto& n : plan.notes) out += "note: " + n + "\n";
    return out;
}

}  // namespace ajplantest
