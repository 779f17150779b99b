// SPDX-License-Identifier: Apache-2.0
// The arguments of a subcommand other than run, explain and learn, parsed against the
// flags its own help text names (usage.hpp's help_flags): the help is the one list a
// subcommand's flags are kept in, for parsing as for the man page and the
// completions, so a flag cannot be taken without being documented, nor documented
// without being taken (reading a flag the help does not name is a programming error).
#pragma once

#include "usage.hpp"

#include "base/error.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace agentjail::cli {

class VerbArgs {
public:
    bool help = false;                  // -h or --help was given: print the help
    std::vector<std::string> operands;  // the words that are not flags, in order

    // Whether the flag ("json", "yes") was given; it must be one the help names.
    bool has(std::string_view flag) const;
    // The values given to a flag that takes one, in order.
    std::vector<std::string> values(std::string_view flag) const;

private:
    friend Result<VerbArgs> parse_verb_args(const std::string& verb, const std::string& help,
                                            const std::vector<std::string>& args,
                                            std::size_t max_operands);
    const HelpFlag& known(std::string_view flag) const;
    std::vector<HelpFlag> flags_;
    std::vector<std::pair<std::string, std::string>> given_;  // (long or short name, value)
};

// Parses a subcommand's words: "--name", "--name=VALUE", "--name VALUE", "-x",
// "-x VALUE", and "--" to end the flags. An unknown flag, a value missing or given
// to a switch, or more than max_operands operands is an invalid_input error naming
// the verb ("did you mean --json?").
Result<VerbArgs> parse_verb_args(const std::string& verb, const std::string& help,
                                 const std::vector<std::string>& args,
                                 std::size_t max_operands = SIZE_MAX);

// A subcommand's first step: its words parsed into *out (nullopt: go on), or the
// exit status it ends with: 0 once -h/--help printed the help on stdout, 125 once a
// usage error was said on stderr.
std::optional<int> parse_or_exit(const std::string& verb, const std::string& help,
                                 const std::vector<std::string>& args, VerbArgs& out,
                                 std::size_t max_operands = SIZE_MAX);

}  // namespace agentjail::cli
