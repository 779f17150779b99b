// SPDX-License-Identifier: Apache-2.0
// The cgroups a run made, found the way `agentjail gc` finds stale ones: every group
// in agentjail's locations whose name says which agentjail process made it.
#pragma once

#include "cgroup/cgroup.hpp"
#include "cgroup/internal.hpp"

#include <dirent.h>
#include <sys/types.h>

#include <string>
#include <vector>

namespace ajit {

inline std::vector<std::string> groups_of(pid_t owner) {
    std::vector<std::string> out;
    auto host = agentjail::cgroup::probe_host();
    if (!host) return out;
    for (const auto& [dir, v2] : agentjail::cgroup::detail::gc_locations(*host)) {
        DIR* d = opendir(dir.c_str());
        if (!d) continue;
        while (dirent* e = readdir(d))
            if (agentjail::cgroup::owner_of(e->d_name) == owner) out.push_back(dir + "/" + e->d_name);
        closedir(d);
    }
    return out;
}

}  // namespace ajit
