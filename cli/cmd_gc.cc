// SPDX-License-Identifier: Apache-2.0
// `agentjail gc`: removes the cgroups of agentjail runs that were killed before
// they could remove their own, and what such runs left on the host (placeholders
// in a workspace, the proxy's CA directory: guard/leftovers.hpp), and says which.
#include "commands.hpp"
#include "options.hpp"
#include "verb_args.hpp"

#include "cgroup/cgroup.hpp"
#include "guard/leftovers.hpp"
#include "util/strings.hpp"

#include <cstdio>

namespace agentjail::cli {

int cmd_gc(const std::vector<std::string>& args) {
    VerbArgs parsed;
    if (auto status = parse_or_exit("gc", gc_help(), args, parsed, 0)) return *status;
    auto r = cgroup::gc();
    for (const auto& p : r.removed) std::printf("removed %s\n", p.c_str());
    for (const auto& f : r.failed) say("gc: cannot remove " + f);
    auto left = guard::sweep_journals();
    for (const auto& p : left.removed) std::printf("removed %s\n", util::printable(p).c_str());
    // Kept on purpose (no longer what the killed run made): said, not an error.
    for (const auto& k : left.kept) say("gc: kept " + k);
    return r.failed.empty() ? 0 : 1;
}

}  // namespace agentjail::cli
