// SPDX-License-Identifier: Apache-2.0
// Reads the help texts and the flag table as data (usage.hpp). The help texts are
// written for people; the rules here are the few they all keep: a "Usage:" block of
// "agentjail VERB ..." lines, option lines that start with spaces and a '-', and an
// "Examples:" block whose flags belong to other commands.
#include "usage.hpp"

#include "policy/embedded.hpp"
#include "policy/policy.hpp"
#include "util/strings.hpp"

#include <algorithm>
#include <cctype>
#include <sstream>

namespace agentjail::cli {

namespace {

std::vector<std::string> split_lines(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
}

std::vector<std::string> split_words(const std::string& s) {
    std::vector<std::string> out;
    std::istringstream in(s);
    for (std::string w; in >> w;) out.push_back(w);
    return out;
}

std::string trim(const std::string& s) {
    const size_t b = s.find_first_not_of(" \t");
    if (b == std::string::npos) return {};
    return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

size_t indent_of(const std::string& s) {
    const size_t b = s.find_first_not_of(' ');
    return b == std::string::npos ? s.size() : b;
}

// "[--host" -> "--host", "HOST]..." -> "HOST", "FILE..." -> "FILE".
std::string bare(std::string w) {
    while (!w.empty() && (w.front() == '[' || w.front() == '(')) w.erase(0, 1);
    while (!w.empty() && (w.back() == ']' || w.back() == ')' || w.back() == '.' ||
                          w.back() == ',' || w.back() == ':'))
        w.pop_back();
    return w;
}

bool is_value_name(const std::string& w) {
    if (w.empty() || !std::isupper(static_cast<unsigned char>(w[0]))) return false;
    return std::all_of(w.begin(), w.end(), [](char c) {
        return std::isupper(static_cast<unsigned char>(c)) ||
               std::isdigit(static_cast<unsigned char>(c)) || c == '_' || c == '|' || c == '[' ||
               c == ']' || c == '=' || c == ':' || c == '@';
    });
}

// "--host", "-y", "--yes," -> the flag; "" for anything else ("--", "-", "-1").
std::string flag_word(const std::string& w) {
    std::string b = bare(w);
    if (const size_t cut = b.find_first_of("=|]"); cut != std::string::npos) b.resize(cut);
    if (b.size() < 2 || b[0] != '-') return {};
    const size_t letter = b[1] == '-' ? 2 : 1;
    if (letter >= b.size() || !std::isalpha(static_cast<unsigned char>(b[letter]))) return {};
    if (letter == 1 && b.size() != 2) return {};
    return b;
}

std::vector<std::string> split_at(const std::string& s, char sep) {
    std::vector<std::string> out;
    std::istringstream in(s);
    for (std::string part; std::getline(in, part, sep);) out.push_back(part);
    return out;
}

// A flag from its spellings ("-y", "--yes").
HelpFlag make_flag(const std::vector<std::string>& words, const std::string& value,
                   const std::string& help) {
    HelpFlag f;
    for (const auto& w : words) {
        if (w[1] == '-')
            f.name = w.substr(2);
        else
            f.short_name = w[1];
    }
    f.value = value;
    f.help = help;
    return f;
}

// Adds f, or what f knows that the same flag named before lacks.
void merge(std::vector<HelpFlag>& flags, const HelpFlag& f) {
    for (auto& g : flags) {
        if ((!f.name.empty() && g.name == f.name) ||
            (f.short_name != 0 && g.short_name == f.short_name)) {
            if (g.name.empty()) g.name = f.name;
            if (g.short_name == 0) g.short_name = f.short_name;
            if (g.value.empty()) g.value = f.value;
            if (g.help.empty()) g.help = f.help;
            return;
        }
    }
    flags.push_back(f);
}

// True for every alternative of "a|b|c" being a lowercase word.
bool is_word_list(const std::string& w) {
    if (w.find('|') == std::string::npos) return false;
    for (const auto& alt : split_at(w, '|'))
        if (alt.empty() || !std::all_of(alt.begin(), alt.end(), [](char c) {
                return std::islower(static_cast<unsigned char>(c)) || c == '-';
            }))
            return false;
    return true;
}

}  // namespace

ValueSpec value_of_name(const std::string& value_name) {
    ValueSpec v;
    if (is_word_list(value_name)) {
        v.kind = ValueSpec::Kind::words;
        v.words = split_at(value_name, '|');
        return v;
    }
    auto has = [&](const char* word) { return value_name.find(word) != std::string::npos; };
    if (has("FILE"))
        v.kind = ValueSpec::Kind::file;
    else if (has("DIR"))
        v.kind = ValueSpec::Kind::dir;
    else if (has("PATH") || has("SRC"))
        v.kind = ValueSpec::Kind::path;
    else if (has("COMMAND"))
        v.kind = ValueSpec::Kind::command;
    else if (value_name == "RUN")
        v = ValueSpec{ValueSpec::Kind::run_id, {"runs"}};
    return v;
}

ValueSpec flag_value(const Flag& f) {
    ValueSpec v;
    switch (f.value) {
    case FlagValue::words:
        v.kind = ValueSpec::Kind::words;
        v.words = split_words(f.words == nullptr ? "" : f.words);
        return v;
    case FlagValue::policy:
        v.kind = ValueSpec::Kind::policy;
        for (const auto& b : policy::builtins()) v.words.push_back(b.name);
        return v;
    case FlagValue::net_preset:
        // The presets are the embedded policies named net-NAME (policy/network.cc),
        // which builtins() leaves out.
        v.kind = ValueSpec::Kind::net_preset;
        for (const auto& e : policy::embedded_policies())
            if (util::starts_with(e.name, "net-")) v.words.emplace_back(e.name + 4);
        return v;
    case FlagValue::by_name: break;
    }
    return f.value_name == nullptr ? v : value_of_name(f.value_name);
}

std::vector<std::pair<std::string, std::string>> usage_lines(const std::string& help) {
    std::vector<std::pair<std::string, std::string>> out;
    bool in_usage = false;
    for (const auto& line : split_lines(help)) {
        const std::string t = trim(line);
        if (t == "Usage:") {
            in_usage = true;
            continue;
        }
        if (!in_usage) continue;
        if (t.empty()) break;
        const size_t gap = t.find("  ");
        if (gap == std::string::npos)
            out.emplace_back(t, "");
        else
            out.emplace_back(t.substr(0, gap), trim(t.substr(gap)));
    }
    return out;
}

std::vector<HelpFlag> help_flags(const std::string& help, const std::string& verb) {
    std::vector<HelpFlag> flags;
    const std::vector<std::string> lines = split_lines(help);
    const std::string self = "agentjail " + verb;
    bool in_examples = false;
    for (size_t i = 0; i < lines.size(); ++i) {
        const std::string& line = lines[i];
        std::string t = trim(line);
        if (t == "Examples:") in_examples = true;
        if (t.empty()) in_examples = false;
        if (in_examples || t.empty()) continue;
        if (util::starts_with(t, "usage: ")) t = t.substr(7);
        if (t == self || util::starts_with(t, self + " ")) {
            // A synopsis: its flags, a value name right after one that is not closed.
            const auto words = split_words(t);
            for (size_t w = 2; w < words.size(); ++w) {
                const std::string name = flag_word(words[w]);
                if (name.empty()) continue;
                std::string value;
                if (words[w].find(']') == std::string::npos && w + 1 < words.size() &&
                    is_value_name(bare(words[w + 1])))
                    value = bare(words[w + 1]);
                merge(flags, make_flag({name}, value, ""));
            }
            continue;
        }
        if (line.empty() || line[0] != ' ' || t[0] != '-') continue;
        // An option line: "-y, --yes  help", "--host HOST  help", "--policy the policy...",
        // its help going on in the lines indented deeper below it.
        const auto words = split_words(t);
        std::vector<std::string> names;
        size_t w = 0;
        for (; w < words.size(); ++w) {
            const std::string name = flag_word(words[w]);
            if (name.empty()) break;
            names.push_back(name);
        }
        if (names.empty()) continue;
        std::string value;
        if (w < words.size() && is_value_name(words[w])) value = words[w++];
        std::string text;
        for (; w < words.size(); ++w) text += (text.empty() ? "" : " ") + words[w];
        const size_t flag_indent = indent_of(line);
        while (i + 1 < lines.size() && indent_of(lines[i + 1]) > flag_indent &&
               !trim(lines[i + 1]).empty() && trim(lines[i + 1])[0] != '-') {
            text += " " + trim(lines[++i]);
        }
        // "-y, --yes": one flag with both names.
        merge(flags, make_flag(names, value, text));
    }
    // Every subcommand takes -h/--help (global --help says so).
    auto help_flag = std::find_if(flags.begin(), flags.end(),
                                  [](const HelpFlag& f) { return f.name == "help"; });
    if (help_flag == flags.end())
        flags.insert(flags.begin(), HelpFlag{"help", 'h', "", "show this help and exit"});
    return flags;
}

std::string short_help(const std::string& help, std::size_t max) {
    std::string s = help;
    size_t cut = s.find("; ");
    if (const size_t dot = s.find(". "); dot != std::string::npos && dot < cut) cut = dot;
    if (cut != std::string::npos) s.resize(cut);
    if (s.size() > max) {
        size_t space = s.rfind(' ', max - 3);
        s.resize(space == std::string::npos ? max - 3 : space);
        s += "...";
    }
    return s;
}

std::vector<VerbUsage> verb_usages() {
    std::vector<VerbUsage> out;
    VerbUsage run;
    run.name = "run";
    for (const auto& f : flags())
        if (find_flag(f.name, Verb::run) == &f) run.table.push_back(&f);
    run.operand.kind = ValueSpec::Kind::command;
    out.push_back(run);
    for (const auto& s : subcommands()) {
        VerbUsage v;
        v.name = s.name;
        v.sub = &s;
        if (s.table_flags) {
            for (const auto& f : flags())
                if (find_flag(f.name, *s.table_flags) == &f) v.table.push_back(&f);
        } else {
            v.flags = help_flags(s.help(), s.name);
        }
        out.push_back(v);
    }
    // Global --help's Usage lines: each verb's synopsis and summary; a line of run's
    // (no verb, or a flag such as --version) otherwise.
    for (const auto& [synopsis, summary] : usage_lines(global_help())) {
        const auto words = split_words(synopsis);
        VerbUsage* v = &out.front();
        if (words.size() > 1)
            for (auto& u : out)
                if (u.name == words[1]) v = &u;
        // "agentjail --version": a flag of its own, not a way to run a command.
        if (words.size() == 2 && !flag_word(words[1]).empty() && words[1].front() != '[') {
            merge(v->flags, make_flag({flag_word(words[1])}, "", summary));
            continue;
        }
        if (v->synopsis.empty()) v->summary = summary;
        v->synopsis.push_back(synopsis);
        if (v == &out.front() || v->synopsis.size() > 1) continue;
        // The first operand: fixed words (set|list|rm) or a value name (FILE...).
        for (size_t w = 2; w < words.size(); ++w) {
            const std::string b = bare(words[w]);
            if (b.empty() || b == "|" || b == "--" || b == "OPTIONS" ||
                !flag_word(words[w]).empty())
                continue;
            if (is_word_list(b)) {
                v->words = split_at(b, '|');
            } else if (is_value_name(b)) {
                v->operand = value_of_name(b);
                // log names the runs it logged; apply and discard the runs kept.
                if (v->operand.kind == ValueSpec::Kind::run_id)
                    v->operand.words = {v->name == "log" ? "log" : "runs"};
            } else {
                continue;
            }
            break;
        }
    }
    return out;
}

}  // namespace agentjail::cli
