// SPDX-License-Identifier: Apache-2.0
// The one table of the run and explain flags: each flag's name, value, help and
// what it does are written once, here; --help, the parser and the overrides' own
// description are made from it, and so are the man page and the shell completions
// (usage.hpp).
#pragma once

#include "options.hpp"

#include <boost/program_options/options_description.hpp>

#include <string>
#include <vector>

namespace agentjail::cli {

// Where a flag shows in --help.
enum class FlagGroup { options, terminal, record };

enum class FlagVerbs { both, run, explain };

// What a flag's value is, where its value name does not say it: the man page and the
// shell completions read FILE, DIR, PATH, SRC and a|b|c value names themselves.
enum class FlagValue {
    by_name,
    words,       // one of `words`
    policy,      // a built-in policy, one of yours (user_policy_dir) or a TOML file
    net_preset,  // a built-in network preset (the net-* policies) or a TOML file
};

struct Flag {
    const char* name;        // the long name, without --
    char short_name;         // 0: none
    const char* value_name;  // nullptr: a switch that takes no value
    bool repeatable;
    FlagVerbs verbs;
    FlagGroup group;
    const char* help;
    // What the flag does, one of (none of them: parse_invocation reads it itself):
    const char* limit = nullptr;  // sets this [limits] key
    // changes the policy, with the flag's origin ("command line", "--NAME")
    Result<void> (*apply)(policy::Policy&, const std::string& value, const Context&, const policy::Origin&) = nullptr;
    bool Invocation::*sets = nullptr;  // a switch that sets this field of the invocation
    FlagValue value = FlagValue::by_name;
    const char* words = nullptr;  // FlagValue::words: every value it takes, space-separated
};

// Every run and explain flag, in --help's order.
const std::vector<Flag>& flags();
// The flag `name` as `verb` takes it; nullptr when it takes none of that name.
const Flag* find_flag(const std::string& name, Verb verb);
// The origin of a value the flag set: "command line" with the key "--NAME".
policy::Origin flag_origin(const std::string& name);
// The title of a group's --help section ("Options", "Terminal", "Result record").
const char* group_title(FlagGroup group);
// The --help section of one group for one verb, made from the table.
boost::program_options::options_description flag_options(Verb verb, FlagGroup group);

}  // namespace agentjail::cli
