// SPDX-License-Identifier: Apache-2.0
// The subcommands other than run, in global --help's order: main dispatches through
// this one table, and the man page and the shell completions are made from it.
#pragma once

#include "options.hpp"

#include <optional>
#include <string>
#include <vector>

namespace agentjail::cli {

struct Subcommand {
    const char* name;
    int (*run)(const std::vector<std::string>& args);
    // What `agentjail NAME --help` prints.
    std::string (*help)();
    // The flags of the run/explain table it takes (explain, learn); nullopt: only
    // those its help names.
    std::optional<Verb> table_flags;
};

const std::vector<Subcommand>& subcommands();
// The subcommand called `name`; nullptr for none (run is no subcommand: it is the
// default).
const Subcommand* find_subcommand(const std::string& name);

}  // namespace agentjail::cli
