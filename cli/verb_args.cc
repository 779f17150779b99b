// SPDX-License-Identifier: Apache-2.0
// Parses a subcommand's arguments against its help's flags (verb_args.hpp).
#include "verb_args.hpp"

#include "options.hpp"

#include "base/text.hpp"
#include "util/strings.hpp"

#include <cerrno>
#include <cstdio>
#include <optional>
#include <stdexcept>

namespace agentjail::cli {

namespace {

// What a given flag is recorded under: its long name, or its letter when it has none.
std::string key_of(const HelpFlag& f) { return f.name.empty() ? std::string(1, f.short_name) : f.name; }

Error bad(const std::string& verb, const std::string& what) {
    return Error(ErrorKind::invalid_input, EINVAL,
                 verb + ": " + what + " (see agentjail " + verb + " --help)");
}

}  // namespace

const HelpFlag& VerbArgs::known(std::string_view flag) const {
    for (const auto& f : flags_)
        if (f.name == flag || (flag.size() == 1 && f.short_name == flag[0])) return f;
    // The code asked for a flag its help does not name: the help and the code have
    // fallen out of step, which a test of that subcommand shows.
    throw std::logic_error("flag --" + std::string(flag) + " is not in the subcommand's help");
}

bool VerbArgs::has(std::string_view flag) const {
    const std::string key = key_of(known(flag));
    for (const auto& [name, value] : given_)
        if (name == key) return true;
    return false;
}

std::vector<std::string> VerbArgs::values(std::string_view flag) const {
    const std::string key = key_of(known(flag));
    std::vector<std::string> out;
    for (const auto& [name, value] : given_)
        if (name == key) out.push_back(value);
    return out;
}

Result<VerbArgs> parse_verb_args(const std::string& verb, const std::string& help,
                                 const std::vector<std::string>& args, std::size_t max_operands) {
    VerbArgs out;
    out.flags_ = help_flags(help, verb);
    bool flags_end = false;
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        if (flags_end || a.size() < 2 || a[0] != '-') {
            out.operands.push_back(a);
            continue;
        }
        if (a == "--") {
            flags_end = true;
            continue;
        }
        const bool is_long = a[1] == '-';
        std::string name = is_long ? a.substr(2) : a.substr(1);
        std::optional<std::string> inline_value;
        if (const size_t eq = name.find('='); is_long && eq != std::string::npos) {
            inline_value = name.substr(eq + 1);
            name.resize(eq);
        }
        const HelpFlag* f = nullptr;
        for (const auto& k : out.flags_)
            if (is_long ? k.name == name : (name.size() == 1 && k.short_name == name[0])) f = &k;
        if (f == nullptr) {
            std::string what = "unknown option '" + util::printable(a) + "'";
            std::vector<std::string_view> names;
            for (const auto& k : out.flags_)
                if (!k.name.empty()) names.push_back(k.name);
            if (const std::string near = base::closest(name, names); is_long && !near.empty())
                what += "; did you mean --" + near + "?";
            return bad(verb, what);
        }
        if (f->name == "help") {
            out.help = true;
            return out;
        }
        std::string value;
        if (f->value.empty()) {
            if (inline_value) return bad(verb, "--" + f->name + " takes no value");
        } else if (inline_value) {
            value = *inline_value;
        } else if (i + 1 < args.size()) {
            value = args[++i];
        } else {
            return bad(verb, util::printable(a) + " needs a value (" + f->value + ")");
        }
        out.given_.emplace_back(key_of(*f), value);
    }
    if (out.operands.size() > max_operands)
        return bad(verb, max_operands == 0 ? "takes no arguments, got '" + util::printable(out.operands.front()) + "'"
                                           : "unexpected argument '" + util::printable(out.operands[max_operands]) + "'");
    return out;
}

std::optional<int> parse_or_exit(const std::string& verb, const std::string& help,
                                 const std::vector<std::string>& args, VerbArgs& out,
                                 std::size_t max_operands) {
    auto parsed = parse_verb_args(verb, help, args, max_operands);
    if (!parsed) return report(parsed.error());
    if (parsed->help) {
        std::fputs(help.c_str(), stdout);
        return 0;
    }
    out = std::move(*parsed);
    return std::nullopt;
}

}  // namespace agentjail::cli
