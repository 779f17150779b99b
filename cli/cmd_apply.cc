// SPDX-License-Identifier: Apache-2.0
// `agentjail apply RUN`: writes an overlay run's change set into its workspace,
// leaving out protected paths and host-side conflicts unless told otherwise.
#include "commands.hpp"
#include "options.hpp"
#include "verb_args.hpp"

#include "workspace/overlay_run.hpp"
#include "workspace/runs.hpp"

#include <cstdio>

extern char** environ;

namespace agentjail::cli {

std::string apply_help() {
    return "agentjail apply RUN: write what an overlay run changed into its workspace.\n"
           "\n"
           "Every path is opened beneath the workspace without following a symlink; files are\n"
           "written under a fresh name and renamed over theirs, links are made as links. Left\n"
           "out, and listed, unless asked for:\n"
           "  --protected   changes to protected paths (git hooks and config, .gitattributes,\n"
           "                .gitmodules, editor and agent settings: what runs code later)\n"
           "  --force       changes to paths that changed on the host since the run started\n"
           "  --json        what was applied, skipped and failed, as one JSON object on stdout\n"
           "\n"
           "Exit status: 0 when everything was applied, 1 when something was skipped or failed,\n"
           "125 when the run cannot be applied. `agentjail runs` lists the runs.\n";
}

namespace {

std::string root_for(const Context& ctx) {
    std::vector<std::string> env;
    for (char** e = ::environ; e != nullptr && *e != nullptr; ++e) env.emplace_back(*e);
    return sys::runs_root(env, ctx.home);
}

}  // namespace

int apply_at_exit(const std::string& run_id, bool json) {
    auto ctx = current_context();
    if (!ctx) return report(ctx.error());
    auto a = workspace::apply_run(root_for(*ctx), run_id, {});
    if (!a) return report(a.error());
    if (json)
        std::printf("%s\n", workspace::apply_json(*a, -1).c_str());
    else
        std::fputs(workspace::apply_text(*a).c_str(), stderr);
    return a->outcome.skipped.empty() && a->outcome.failed.empty() ? 0 : 1;
}

int cmd_apply(const std::vector<std::string>& args) {
    VerbArgs parsed;
    if (auto status = parse_or_exit("apply", apply_help(), args, parsed)) return *status;
    if (parsed.operands.size() != 1)
        return usage_error("apply takes one run id (usage: agentjail apply [--protected] [--force] RUN)");
    const std::string id = parsed.operands.front();
    auto ctx = current_context();
    if (!ctx) return report(ctx.error());
    workspace::ApplyOptions opts;
    opts.allow_protected = parsed.has("protected");
    opts.force = parsed.has("force");
    auto a = workspace::apply_run(root_for(*ctx), id, opts);
    if (!a) return report(a.error());
    if (parsed.has("json"))
        std::printf("%s\n", workspace::apply_json(*a, -1).c_str());
    else
        std::fputs(workspace::apply_text(*a).c_str(), stderr);
    return a->outcome.skipped.empty() && a->outcome.failed.empty() ? 0 : 1;
}

}  // namespace agentjail::cli
