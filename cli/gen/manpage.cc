// SPDX-License-Identifier: Apache-2.0
// Writes agentjail(1) and agentjail-policy(5) (manpage.hpp). The flags, the
// subcommands, their synopses and help come from the tables and texts the command
// itself prints; what only a man page has (exit statuses, files, environment) is
// written here, from what cli/ and lib/ do.
#include "manpage.hpp"

#include "roff.hpp"

#include "commands.hpp"
#include "flags.hpp"
#include "options.hpp"
#include "usage.hpp"

#include <algorithm>
#include <cctype>
#include <sstream>
#include <vector>

namespace agentjail::cli::gen {

namespace {

// Flags, paths and policy keys are copied from a man page: none is broken at a
// hyphen it does not have (HY: .EE turns hyphenation back on to it), and lines are
// not stretched to a right margin.
constexpr const char* kNoHyphens = ".nr HY 0\n.nh\n.ad l\n";

std::vector<std::string> blocks_of(const std::string& text) {
    std::vector<std::string> out;
    std::string cur;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
        if (line.empty()) {
            if (!cur.empty()) out.push_back(cur);
            cur.clear();
            continue;
        }
        cur += line + "\n";
    }
    if (!cur.empty()) out.push_back(cur);
    return out;
}

bool starts_with(const std::string& s, const std::string& p) {
    return s.compare(0, p.size(), p) == 0;
}

// A synopsis as man pages set it: the command and subcommand words and flags in
// bold, value names in italics, brackets and bars as they are.
std::string synopsis_roff(const std::string& synopsis) {
    std::string out;
    size_t i = 0;
    while (i < synopsis.size()) {
        const char c = synopsis[i];
        const bool word_start = std::isalpha(static_cast<unsigned char>(c)) || c == '-';
        if (!word_start) {
            out += roff_escape(std::string(1, c));
            ++i;
            continue;
        }
        size_t end = i;
        while (end < synopsis.size() && (std::isalnum(static_cast<unsigned char>(synopsis[end])) ||
                                         synopsis[end] == '-' || synopsis[end] == '_'))
            ++end;
        const std::string word = synopsis.substr(i, end - i);
        const bool value = std::isupper(static_cast<unsigned char>(word[0])) != 0;
        out += (value ? "\\fI" : "\\fB") + roff_escape(word) + "\\fP";
        i = end;
    }
    return out;
}

// A flag's tag: "-p, --policy NAME|FILE".
std::string flag_tag(char short_name, const std::string& name, const std::string& value) {
    std::string tag;
    if (short_name != 0) tag += "\\fB" + roff_escape(std::string("-") + short_name) + "\\fP";
    if (!name.empty())
        tag += (tag.empty() ? "" : ", ") + std::string("\\fB") + roff_escape("--" + name) + "\\fP";
    if (!value.empty()) tag += " \\fI" + roff_escape(value) + "\\fP";
    return tag;
}

std::string sentence(const std::string& s) {
    if (s.empty()) return s;
    std::string out = s;
    out[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(out[0])));
    if (out.back() != '.') out += '.';
    return out;
}

void options_section(std::ostringstream& os, const VerbUsage& run) {
    os << ".SH OPTIONS\n"
          "The options of \\fBagentjail\\fP, \\fBagentjail run\\fP and \\fBagentjail learn\\fP; "
          "\\fBagentjail explain\\fP takes those of the first group.\n"
          "A flag's setting in \\fIconfig.toml\\fP (see \\fBFILES\\fP) comes first and the command "
          "line's "
          "on top of it.\n";
    for (const FlagGroup group : {FlagGroup::options, FlagGroup::terminal, FlagGroup::record}) {
        os << ".SS \"" << roff_arg(group_title(group))
           << (group == FlagGroup::options ? "" : " (run only)") << "\"\n";
        for (const Flag& f : flags()) {
            if (f.group != group) continue;
            std::string help = f.help;
            if (group == FlagGroup::options && f.verbs == FlagVerbs::explain)
                help += " (explain only)";
            if (group == FlagGroup::options && f.verbs == FlagVerbs::run) help += " (run only)";
            os << ".TP\n"
               << roff_lines(
                      flag_tag(f.short_name, f.name, f.value_name == nullptr ? "" : f.value_name))
               << roff_lines(roff_escape(help));
        }
        if (group == FlagGroup::options)
            for (const HelpFlag& f : run.flags)
                os << ".TP\n"
                   << roff_lines(flag_tag(f.short_name, f.name, f.value))
                   << roff_lines(
                          roff_escape(f.help.empty() ? "print the version and exit" : f.help));
    }
}

void commands_section(std::ostringstream& os, const std::vector<VerbUsage>& verbs) {
    os << ".SH COMMANDS\n"
          "Without a subcommand, \\fBagentjail\\fP runs the command (as \\fBrun\\fP). "
          "A subcommand is only ever the first word; \\fBagentjail \\-\\- doctor\\fP runs a "
          "program "
          "called doctor. Each one's text below is what its \\fB\\-\\-help\\fP prints.\n";
    const std::string run_help = global_help();
    for (const auto& v : verbs) {
        if (v.synopsis.empty()) continue;
        os << ".SS \"" << roff_arg(v.synopsis.front()) << "\"\n";
        for (size_t i = 1; i < v.synopsis.size(); ++i)
            os << ".br\n" << roff_lines(synopsis_roff(v.synopsis[i]));
        if (v.sub == nullptr || v.sub->help == global_help) {
            // run and learn print the whole of --help: the page's own sections.
            os << ".PP\n"
               << roff_lines(roff_escape(sentence(v.summary)))
               << "It takes the options of run (\\fBOPTIONS\\fP).\n";
            continue;
        }
        std::string help = v.sub->help();
        // explain's own list of flags is the table's: under OPTIONS already.
        if (v.sub->table_flags) {
            std::ostringstream table;
            table << flag_options(*v.sub->table_flags, FlagGroup::options);
            if (const size_t at = help.find(table.str()); at != std::string::npos) {
                help.replace(at, table.str().size(), "");
                help += "\nIts options are the first group of OPTIONS.\n";
            }
        }
        os << ".PP\n" << help_to_roff(help);
    }
}

void exit_status_section(std::ostringstream& os) {
    // As lib/run/record.cc (exit_status) and cli/options.cc (report) decide it.
    struct Status {
        const char* code;
        const char* meaning;
    };
    const std::string own = std::to_string(exit_agentjail_error);
    const Status statuses[] = {
        {"the command's own", "the command ran and exited with it"},
        {"128+N",
         "the command died of signal N, or agentjail got SIGTERM, SIGHUP or (without a pty) "
         "SIGINT: it was passed "
         "on, and everything inside killed after --kill-grace (default 5s) or at a second signal, "
         "as a shell "
         "reports a job ended by a signal"},
        {"124", "the --timeout ran out (the result record's status TO)"},
        {"137", "the memory limit's OOM killer ended the command (status ML)"},
        {own.c_str(),
         "agentjail itself failed: a bad flag or policy, a missing kernel feature, a setup error; "
         "one line on "
         "stderr, \"agentjail: what and where\"; policy errors read FILE:LINE:COL: KEY: message"},
        {"126", "the command was found but is not executable (as the shell says)"},
        {"127", "the command was not found (as the shell says)"},
    };
    os << ".SH \"EXIT STATUS\"\n"
          "A run (\\fBagentjail\\fP, \\fBrun\\fP, \\fBlearn\\fP) exits with:\n";
    for (const auto& s : statuses)
        os << ".TP\n" << roff_lines(roff_escape(s.code)) << roff_lines(roff_escape(s.meaning));
    os << ".PP\n"
          "The other subcommands exit 0 on success and "
       << own
       << " on a usage error or a failure of agentjail's own; \\fBcheck\\fP "
          "exits "
       << own
       << " for a policy that is not valid, and \\fBdoctor\\fP, \\fBgc\\fP and \\fBapply\\fP "
          "exit 1 for what their text above says.\n";
}

void files_section(std::ostringstream& os, const std::string& datadir) {
    struct Entry {
        std::string path;
        std::string what;
    };
    const Entry files[] = {
        {"~/.config/agentjail/config.toml",
         "your defaults: each key a flag's long name with its value (agentjail-policy(5)). "
         "~/.config is $XDG_CONFIG_HOME when that is set. The whole of ~/.config/agentjail is "
         "hidden inside "
         "every sandbox."},
        {"~/.config/agentjail/policies/NAME.toml",
         "your policies, found by name by --policy and extends like the built-ins (whose names "
         "win); "
         "listed by agentjail policies."},
        {"~/.config/agentjail/secrets/",
         "the secrets kept by agentjail secret set: NAME holds the value, NAME.hosts its hosts; "
         "mode 0600."},
        {"~/.config/agentjail/trusted",
         "the project policy files you trusted with agentjail trust: a SHA-256 and a path per "
         "line."},
        {"agentjail.toml",
         "a project's own policy, at its top (found from the current directory up to the directory "
         "holding "
         ".git, or the home); used only once trusted as it is."},
        {"$XDG_STATE_HOME/agentjail/",
         "what agentjail keeps between runs (default ~/.local/state/agentjail): log/ (what runs "
         "were refused, "
         "for agentjail log), runs/ (clone and overlay runs), AGENT/PROJECT (an agent preset's "
         "state), "
         "leftovers/ (what killed runs left, for agentjail gc), scans/ and roots/ (the workspace's "
         "walk "
         "kept between runs), placeholder.key."},
        {datadir + "/policies/",
         "the built-in policies as TOML files, to read and to extend from a file of yours; "
         "agentjail has them "
         "built in."},
    };
    os << ".SH FILES\n";
    for (const auto& f : files)
        os << ".TP\n"
           << roff_lines("\\fI" + roff_escape(f.path) + "\\fP") << roff_lines(roff_escape(f.what));
}

void environment_section(std::ostringstream& os) {
    // What cli/ and lib/ read with getenv (or from the caller's environment list).
    struct Var {
        const char* name;
        const char* what;
    };
    const Var vars[] = {
        {"HOME", "the home that ~ means (when it names a directory; else the passwd entry's)."},
        {"PWD",
         "the current directory as the shell names it, through links: what a relative -C DIR "
         "starts from."},
        {"XDG_CONFIG_HOME",
         "where the configuration directory is (absolute only; default ~/.config)."},
        {"XDG_STATE_HOME", "where the state directory is (absolute only; default ~/.local/state)."},
        {"TMPDIR", "the {tmp} of policies and where a run keeps its proxy's files (default /tmp)."},
        {"PATH",
         "what PATH is inside (less what is no directory there), and where the tools under your "
         "home are found "
         "(path_tools)."},
        {"SHELL", "what agentjail explain explains when given no command."},
        {"XDG_RUNTIME_DIR, DBUS_SESSION_BUS_ADDRESS",
         "the systemd user manager asked for a delegated cgroup when limits need one."},
        {"SSL_CERT_FILE",
         "the CA bundle the proxy trusts for upstream hosts (default: OpenSSL's)."},
        {"USER", "the user's name, when the passwd database has none."},
    };
    os << ".SH ENVIRONMENT\n"
          "The command inside sees only the variables its policy's [environment] passes or sets, "
          "and the "
          "flags -e and --env-file. agentjail itself reads:\n";
    for (const auto& v : vars)
        os << ".TP\n"
           << roff_lines("\\fB" + roff_escape(v.name) + "\\fP") << roff_lines(roff_escape(v.what));
}

}  // namespace

std::string agentjail_page(const std::string& datadir) {
    std::ostringstream os;
    const std::vector<VerbUsage> verbs = verb_usages();
    const std::string help = global_help();
    const std::vector<std::string> blocks = blocks_of(help);
    // "agentjail 1.4.0: run a command in a Linux sandbox (...) whose ..."
    std::string intro = blocks.empty() ? std::string() : blocks.front();
    for (char& c : intro)
        if (c == '\n') c = ' ';
    if (const size_t colon = intro.find(": "); colon != std::string::npos)
        intro = intro.substr(colon + 2);
    while (!intro.empty() && intro.back() == ' ') intro.pop_back();
    std::string name_line = intro.substr(0, intro.find(" ("));

    os << ".\\\" SPDX-License-Identifier: Apache-2.0\n"
          ".\\\" Made by aj_docgen from agentjail's flag table and help texts; do not edit.\n"
       << ".TH AGENTJAIL 1 \"\" \"agentjail " << AGENTJAIL_VERSION << "\" \"User Commands\"\n"
       << kNoHyphens << ".SH NAME\n"
       << "agentjail \\- " << roff_escape(name_line) << "\n"
       << ".SH SYNOPSIS\n";
    bool first = true;
    for (const auto& [synopsis, summary] : usage_lines(help)) {
        if (!first) os << ".br\n";
        first = false;
        os << roff_lines(synopsis_roff(synopsis));
    }
    os << ".SH DESCRIPTION\n" << roff_lines(roff_escape(sentence(intro)));
    // The rest of --help's prose, in its order; the usage, the flag groups, the exit
    // statuses and the examples have sections of their own.
    for (size_t i = 1; i < blocks.size(); ++i) {
        const std::string& b = blocks[i];
        bool table = false;
        for (const FlagGroup g : {FlagGroup::options, FlagGroup::terminal, FlagGroup::record})
            table = table || starts_with(b, std::string(group_title(g)) + ":");
        if (table || starts_with(b, "Usage:") || starts_with(b, "Exit status:") ||
            starts_with(b, "Examples:"))
            continue;
        os << ".PP\n" << help_to_roff(b);
    }
    os << ".PP\n"
          "What the sandbox allows is written in policy files (\\fBagentjail\\-policy\\fP(5)); "
          "\\fBagentjail policies\\fP lists the built-in ones and \\fBagentjail explain\\fP shows "
          "what a run "
          "would do.\n";
    options_section(os, verbs.front());
    commands_section(os, verbs);
    exit_status_section(os);
    os << ".SH EXAMPLES\n";
    for (const auto& b : blocks) {
        if (!starts_with(b, "Examples:")) continue;
        std::istringstream lines(b.substr(b.find('\n') + 1));
        os << ".EX\n";
        for (std::string line; std::getline(lines, line);)
            os << roff_lines(
                roff_escape(line.substr(std::min(line.find_first_not_of(' '), line.size()))));
        os << ".EE\n";
    }
    os << ".PP\n"
          "Completion in the current shell:\n"
          ".EX\n"
          "source <(agentjail completion bash)\n"
          ".EE\n";
    files_section(os, datadir);
    environment_section(os);
    os << ".SH \"SEE ALSO\"\n"
          "\\fBagentjail\\-policy\\fP(5), \\fBbwrap\\fP(1), \\fBunshare\\fP(1), "
          "\\fBseccomp\\fP(2), "
          "\\fBuser_namespaces\\fP(7), \\fBcgroups\\fP(7)\n";
    return os.str();
}

std::string policy_page(const std::string& markdown) {
    std::ostringstream os;
    os << ".\\\" SPDX-License-Identifier: Apache-2.0\n"
          ".\\\" Made by aj_docgen from docs/policy-format.md; do not edit.\n"
       << ".TH AGENTJAIL\\-POLICY 5 \"\" \"agentjail " << AGENTJAIL_VERSION
       << "\" \"File Formats\"\n"
       << kNoHyphens
       << ".SH NAME\n"
          "agentjail\\-policy \\- agentjail's policy files, config.toml and a project's "
          "agentjail.toml\n"
          ".SH DESCRIPTION\n"
       << markdown_to_roff(markdown)
       << ".SH \"SEE ALSO\"\n"
          "\\fBagentjail\\fP(1)\n";
    return os.str();
}

}  // namespace agentjail::cli::gen
