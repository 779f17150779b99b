// SPDX-License-Identifier: Apache-2.0
// `agentjail apply RUN`: writes an overlay run's change set into its workspace,
// leaving out protected paths and host-side conflicts unless told otherwise.
#include "commands.hpp"
#include "options.hpp"

#include "workspace/overlay_run.hpp"
#include "workspace/runs.hpp"

#include <boost/program_options.hpp>

#include <cstdio>

extern char** environ;

namespace agentjail::cli {

namespace po = boost::program_options;

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
    po::options_description desc;
    desc.add_options()("help,h", "show help")("protected", "apply protected paths too")(
        "force", "apply over host-side changes")("json", "JSON on stdout");
    po::options_description hidden;
    hidden.add_options()("run", po::value<std::vector<std::string>>());
    po::options_description all;
    all.add(desc).add(hidden);
    po::positional_options_description pos;
    pos.add("run", -1);
    po::variables_map vm;
    try {
        po::store(po::command_line_parser(args)
                      .options(all)
                      .positional(pos)
                      .style(po::command_line_style::default_style & ~po::command_line_style::allow_guessing)
                      .run(),
                  vm);
    } catch (po::error& e) {
        return usage_error(error_text(e) + " (see agentjail apply --help)");
    }
    if (vm.count("help")) {
        std::fputs(apply_help().c_str(), stdout);
        return 0;
    }
    if (!vm.count("run") || vm["run"].as<std::vector<std::string>>().size() != 1)
        return usage_error("apply takes one run id (usage: agentjail apply [--protected] [--force] RUN)");
    const std::string id = vm["run"].as<std::vector<std::string>>().front();
    auto ctx = current_context();
    if (!ctx) return report(ctx.error());
    workspace::ApplyOptions opts;
    opts.allow_protected = vm.count("protected") > 0;
    opts.force = vm.count("force") > 0;
    auto a = workspace::apply_run(root_for(*ctx), id, opts);
    if (!a) return report(a.error());
    if (vm.count("json"))
        std::printf("%s\n", workspace::apply_json(*a, -1).c_str());
    else
        std::fputs(workspace::apply_text(*a).c_str(), stderr);
    return a->outcome.skipped.empty() && a->outcome.failed.empty() ? 0 : 1;
}

}  // namespace agentjail::cli
