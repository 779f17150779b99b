// SPDX-License-Identifier: Apache-2.0
// The command line as data, for the man page and the shell completions: the run and
// explain flags come from the flag table, and each other subcommand's synopsis,
// flags and operands are read from the help text it prints, so that neither keeps a
// second list of them to fall out of step.
#pragma once

#include "flags.hpp"
#include "verbs.hpp"

#include <string>
#include <utility>
#include <vector>

namespace agentjail::cli {

// A flag named by a subcommand's help: on an option line ("  --json   what it does")
// or in its synopsis ("agentjail secret set NAME --host HOST").
struct HelpFlag {
    std::string name;  // the long name without --; "" when it has only a short one
    char short_name = 0;
    std::string value;  // the value's name ("HOST"); "" for a switch
    std::string help;
};

// What a flag's or an operand's value is, for completions.
struct ValueSpec {
    enum class Kind { none, file, dir, path, words, policy, net_preset, command, run_id };
    Kind kind = Kind::none;
    // words: the values; policy: the built-in policies; net_preset: the built-in presets;
    // run_id: the subcommand whose listing names the ids ("runs", or "log" for `log --list`).
    std::vector<std::string> words;
};

struct VerbUsage {
    std::string name;                   // "run" for run
    const Subcommand* sub = nullptr;    // nullptr for run
    std::vector<std::string> synopsis;  // global --help's Usage lines for it
    std::string summary;                // the words beside its first Usage line
    std::vector<const Flag*> table;     // run, explain, learn: their flags of the table
    // The others: the flags their help names, -h/--help first (each subcommand takes
    // it); run: --version.
    std::vector<HelpFlag> flags;
    std::vector<std::string> words;  // the fixed words of its first operand (secret: set list rm)
    ValueSpec operand;               // what its operands are
};

// run first, then subcommands() in their order.
std::vector<VerbUsage> verb_usages();

// What the flag's value is: its FlagValue, else what its value name says.
ValueSpec flag_value(const Flag& f);
// FILE, DIR, PATH and SRC (in any value name: SRC[:DST], PATH[:SIZE]), COMMAND, RUN
// (a run id), and a|b|c (the words).
ValueSpec value_of_name(const std::string& value_name);

// The Usage lines of a help text ("Usage:" and the indented lines below it), each
// split into the synopsis and the summary beside it (after two spaces or more).
std::vector<std::pair<std::string, std::string>> usage_lines(const std::string& help);
// The flags a subcommand's help text names, outside its Examples.
std::vector<HelpFlag> help_flags(const std::string& help, const std::string& verb);
// A one-line description from a flag's help: up to its first ';' or sentence end,
// cut at a word before `max` characters.
std::string short_help(const std::string& help, std::size_t max = 72);

}  // namespace agentjail::cli
