// SPDX-License-Identifier: Apache-2.0
// `agentjail runs` (the clone and overlay runs kept on this machine, with their
// branch and report) and `agentjail discard RUN` (a run's branch and state gone).
#include "commands.hpp"
#include "options.hpp"
#include "verb_args.hpp"

#include "plan/plan.hpp"
#include "util/strings.hpp"
#include "workspace/git.hpp"
#include "workspace/runs.hpp"

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstdio>

namespace agentjail::cli {

namespace {

Result<std::string> root_dir() {
    auto host = plan::HostFacts::current();
    if (!host) return std::move(host).error();
    return sys::runs_root(host->environ, host->home);
}

}  // namespace

std::string runs_help() {
    return "usage: agentjail runs [--json]\n"
           "\n"
           "Lists the clone and overlay runs kept on this machine, oldest first: the run id,\n"
           "its mode, its status, how many changes its report flagged (things that can run\n"
           "code on your machine or in CI later: hooks, CI workflows, install scripts, links\n"
           "out of the repository...), the branch clone mode made in your repository, and\n"
           "the workspace. Their state lives in $XDG_STATE_HOME/agentjail/runs (default\n"
           "~/.local/state/agentjail/runs).\n"
           "\n"
           "  status   ok          the work came back (clone: the branch exists)\n"
           "           no-changes  nothing to bring back\n"
           "           refused     the sandbox tampered with the clone's .git; nothing came back\n"
           "           failed      agentjail could not finish (the message says why)\n"
           "           running     the run has not ended (or agentjail was killed)\n"
           "\n"
           "  --json   every run's record, with its full report, as one JSON array\n"
           "\n"
           "Review a clone run's work with `git log -p agentjail/RUN` in your repository\n"
           "(nothing was merged or checked out); `agentjail discard RUN` removes it.\n";
}

std::string discard_help() {
    return "usage: agentjail discard RUN...\n"
           "\n"
           "Removes what a clone or overlay run left: in clone mode the branch agentjail/RUN\n"
           "of your repository (deleted with git's hooks switched off; your work tree, index\n"
           "and other branches are not touched) and the run's private clone; in overlay mode\n"
           "its layer. RUN is an id as `agentjail runs` lists it (20261202-011500-ab12cd).\n"
           "Commits of the branch you merged elsewhere stay where you merged them.\n";
}

int cmd_runs(const std::vector<std::string>& args) {
    VerbArgs parsed;
    if (auto status = parse_or_exit("runs", runs_help(), args, parsed, 0)) return *status;
    const bool json = parsed.has("json");
    auto root = root_dir();
    if (!root) return report(root.error());
    auto runs = workspace::list_runs(*root);
    if (!runs) return report(runs.error());
    if (json) {
        auto arr = nlohmann::ordered_json::array();
        for (const auto& r : *runs) arr.push_back(nlohmann::ordered_json::parse(workspace::record_to_json(r, -1)));
        std::printf("%s\n", arr.dump(2, ' ', true, nlohmann::ordered_json::error_handler_t::replace).c_str());
        return 0;
    }
    if (runs->empty()) {
        std::printf("no runs kept (clone and overlay runs are listed here: agentjail --workspace-mode clone -- ...)\n");
        return 0;
    }
    std::printf("%-22s  %-7s  %-10s  %5s  %-32s  %s\n", "RUN", "MODE", "STATUS", "FLAGS", "BRANCH", "WORKSPACE");
    for (const auto& r : *runs)
        std::printf("%-22s  %-7s  %-10s  %5zu  %-32s  %s\n", r.id.c_str(), util::printable(r.mode).c_str(),
                    util::printable(r.status).c_str(), r.flags,
                    r.branch.empty() || r.status != "ok" ? "-" : util::printable(r.branch).c_str(),
                    util::printable(r.workspace).c_str());
    return 0;
}

int cmd_discard(const std::vector<std::string>& args) {
    VerbArgs parsed;
    if (auto status = parse_or_exit("discard", discard_help(), args, parsed)) return *status;
    const std::vector<std::string>& ids = parsed.operands;
    if (ids.empty()) return usage_error("discard: which run? (usage: agentjail discard RUN...; agentjail runs lists them)");
    auto root = root_dir();
    if (!root) return report(root.error());
    int status = 0;
    for (const auto& id : ids) {
        auto rec = workspace::load_run(*root, id);
        if (!rec) {
            // A run whose record is unreadable can still go, if it is one.
            if (!sys::valid_run_id(id) || rec.error().code() == ENOENT) {
                status = report(rec.error().wrap("discard"));
                continue;
            }
        }
        if (rec && rec->mode == "clone" && !rec->repo.empty()) {
            // Only the branch named after this id, whatever else run.json says.
            workspace::Git g;
            g.git_dir = rec->repo;
            g.safe_dirs = {rec->repo, rec->workspace};
            std::string ref = "refs/heads/agentjail/" + id;
            auto has = workspace::run_git(g, {"rev-parse", "-q", "--verify", ref});
            if (has && has->status == 0) {
                auto del = workspace::git_ok(g, {"update-ref", "-d", ref}, "discard " + id);
                if (!del) {
                    status = report(del.error());
                    continue;
                }
                std::printf("deleted branch agentjail/%s in %s\n", id.c_str(), util::printable(rec->repo).c_str());
            }
        }
        if (auto r = workspace::remove_run(*root, id); !r) {
            status = report(r.error().wrap("discard " + id));
            continue;
        }
        std::printf("removed run %s\n", id.c_str());
    }
    return status;
}

}  // namespace agentjail::cli
