// SPDX-License-Identifier: Apache-2.0
// Writes the completion scripts (completion.hpp). Each script knows, per subcommand,
// which flags there are and which take a value, and completes a value by its kind:
// files, directories, a fixed set of words, policy names (the built-ins embedded
// here, yours listed from ~/.config/agentjail/policies when completing) or a command.
// The walk over the words typed so far follows main's dispatch: a subcommand only as
// the first word, and for run, explain and learn the first word that is not an
// option (or what follows "--") starts the command, completed as that command's own.
#include "completion.hpp"

#include "usage.hpp"

#include <cerrno>
#include <sstream>

namespace agentjail::cli {

namespace {

using Kind = ValueSpec::Kind;

// A run id at the start of a line of `agentjail runs` or `agentjail log --list`
// (sys::valid_run_id's YYYYMMDD-HHMMSS-xxxxxx), as the three scripts grep it.
constexpr const char* kRunIdPattern = "'^[0-9]{8}-[0-9]{6}-[0-9a-f]{6}'";

// A flag as the scripts need it, from the table or from a help text.
struct ScriptFlag {
    std::string name;  // long, without --; may be ""
    char short_name = 0;
    bool takes_value = false;
    bool repeatable = false;
    std::string value_name;
    std::string help;
    ValueSpec value;
};

std::vector<ScriptFlag> script_flags(const VerbUsage& v) {
    std::vector<ScriptFlag> out;
    for (const Flag* f : v.table) {
        ScriptFlag s;
        s.name = f->name;
        s.short_name = f->short_name;
        s.takes_value = f->value_name != nullptr;
        s.repeatable = f->repeatable;
        s.value_name = f->value_name == nullptr ? "" : f->value_name;
        s.help = f->help;
        if (s.takes_value) s.value = flag_value(*f);
        out.push_back(s);
    }
    for (const HelpFlag& f : v.flags) {
        ScriptFlag s;
        s.name = f.name;
        s.short_name = f.short_name;
        s.takes_value = !f.value.empty();
        // A flag the synopsis shows as "[--host HOST]..." may come again; completing it
        // again does no harm where it may not.
        s.repeatable = s.takes_value;
        s.value_name = f.value;
        s.help = f.help;
        if (s.takes_value) s.value = value_of_name(f.value);
        out.push_back(s);
    }
    return out;
}

// Every spelling of the flag: "--policy", "-p".
std::vector<std::string> spellings(const ScriptFlag& f) {
    std::vector<std::string> out;
    if (!f.name.empty()) out.push_back("--" + f.name);
    if (f.short_name != 0) out.push_back(std::string("-") + f.short_name);
    return out;
}

std::string join(const std::vector<std::string>& words, const std::string& sep) {
    std::string out;
    for (const auto& w : words) out += (out.empty() ? "" : sep) + w;
    return out;
}

bool runs_command(const VerbUsage& v) { return v.operand.kind == Kind::command; }

// Text inside '...' for sh, bash and zsh.
std::string sh_quote(const std::string& s) {
    std::string out = "'";
    for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

// Text inside '...' for fish, where \ and ' are escaped with a backslash.
std::string fish_quote(const std::string& s) {
    std::string out = "'";
    for (char c : s) {
        if (c == '\\' || c == '\'') out += '\\';
        out += c;
    }
    return out + "'";
}

std::string header(const std::string& shell, const std::string& install, const std::string& load) {
    std::ostringstream os;
    os << "# " << shell << " completion for agentjail " << AGENTJAIL_VERSION
       << ", made by `agentjail completion " << shell
       << "`\n"
          "# from the command's flag table and help texts (do not edit: regenerate it).\n"
          "# Installed as "
       << install << ";\n# or, for this shell only: " << load << "\n";
    return os.str();
}

// ---- bash --------------------------------------------------------------------------

std::string bash_script(const std::vector<VerbUsage>& verbs) {
    std::ostringstream os;
    os << header("bash", "bash-completion/completions/agentjail",
                 "source <(agentjail completion bash)")
       << "\n";
    std::vector<std::string> names;
    for (const auto& v : verbs) names.push_back(v.name);

    // The built-in policies and presets are this binary's; yours are read when completing.
    std::vector<std::string> policies, presets;
    for (const auto& v : verbs)
        for (const auto& f : script_flags(v)) {
            if (f.value.kind == Kind::policy) policies = f.value.words;
            if (f.value.kind == Kind::net_preset) presets = f.value.words;
        }
    os << "_agentjail_policies() {\n"
          "    local dir=${XDG_CONFIG_HOME:-} f names="
       << sh_quote(join(policies, " "))
       << "\n"
          "    [[ $dir == /* ]] || dir=$HOME/.config\n"
          "    for f in \"$dir\"/agentjail/policies/*.toml; do\n"
          "        [[ -f $f ]] || continue\n"
          "        f=${f##*/}\n"
          "        names+=\" ${f%.toml}\"\n"
          "    done\n"
          "    printf '%s\\n' $names\n"
          "}\n\n"
          "# Files (with a glob: those matching it, and directories to reach them).\n"
          "_agentjail_files() {\n"
          "    compopt -o filenames 2>/dev/null\n"
          "    local IFS=$'\\n'\n"
          "    if [[ -n $1 ]]; then\n"
          "        COMPREPLY+=($(compgen -f -X \"!$1\" -- \"$cur\") $(compgen -d -- \"$cur\"))\n"
          "    else\n"
          "        COMPREPLY+=($(compgen -f -- \"$cur\"))\n"
          "    fi\n"
          "}\n\n"
          "_agentjail_dirs() {\n"
          "    compopt -o filenames 2>/dev/null\n"
          "    local IFS=$'\\n'\n"
          "    COMPREPLY+=($(compgen -d -- \"$cur\"))\n"
          "}\n\n"
          "# The command agentjail runs, from word $1 on: its name, then its own completion\n"
          "# (bash-completion's _command_offset) or files.\n"
          "_agentjail_command() {\n"
          "    if (($1 == COMP_CWORD)); then\n"
          "        local IFS=$'\\n'\n"
          "        COMPREPLY+=($(compgen -c -- \"$cur\"))\n"
          "    elif declare -F _command_offset >/dev/null; then\n"
          "        _command_offset \"$1\"\n"
          "    else\n"
          "        _agentjail_files\n"
          "    fi\n"
          "}\n\n";

    // Run ids are listed by the command itself (agentjail runs, agentjail log --list):
    // where they are kept is its business, not the script's.
    os << "# _agentjail_run_ids runs|log: the run ids that listing names.\n"
          "_agentjail_run_ids() {\n"
          "    local arg=\n"
          "    [[ $1 == log ]] && arg=--list\n"
          "    COMPREPLY=($(compgen -W \"$(command agentjail \"$1\" $arg 2>/dev/null |\n"
          "        grep -oE "
       << kRunIdPattern << ")\" -- \"$cur\"))\n"
          "}\n\n";

    // One value completion per flag name: a name means the same value in every
    // subcommand that gives it one (whether it takes one is asked per subcommand).
    // Flags whose values complete alike share a case.
    struct Case {
        std::string body;
        std::vector<std::string> patterns;
    };
    std::vector<Case> cases;
    std::vector<std::string> done;
    for (const auto& v : verbs) {
        for (const auto& f : script_flags(v)) {
            if (!f.takes_value || f.value.kind == Kind::none) continue;
            std::string body;
            switch (f.value.kind) {
            case Kind::file:
            case Kind::path: body = "        _agentjail_files ;;\n"; break;
            case Kind::dir: body = "        _agentjail_dirs ;;\n"; break;
            case Kind::words:
                body = "        COMPREPLY=($(compgen -W " + sh_quote(join(f.value.words, " ")) +
                       " -- \"$cur\")) ;;\n";
                break;
            case Kind::policy:
                body =
                    "        COMPREPLY=($(compgen -W \"$(_agentjail_policies)\" -- \"$cur\"))\n"
                    "        _agentjail_files '*.toml' ;;\n";
                break;
            case Kind::net_preset:
                body = "        COMPREPLY=($(compgen -W " + sh_quote(join(presets, " ")) +
                       " -- \"$cur\"))\n" + "        _agentjail_files '*.toml' ;;\n";
                break;
            case Kind::command: body = "        COMPREPLY=($(compgen -c -- \"$cur\")) ;;\n"; break;
            case Kind::run_id:
                body = "        _agentjail_run_ids " + f.value.words.front() + " ;;\n";
                break;
            case Kind::none: break;
            }
            Case* c = nullptr;
            for (auto& k : cases)
                if (k.body == body) c = &k;
            if (c == nullptr) c = &cases.emplace_back(Case{body, {}});
            for (const auto& sp : spellings(f)) {
                bool seen = false;
                for (const auto& d : done) seen = seen || d == sp;
                if (seen) continue;
                done.push_back(sp);
                c->patterns.push_back(sp);
            }
        }
    }
    os << "# _agentjail_value FLAG: completes FLAG's value, the word $cur.\n"
          "_agentjail_value() {\n"
          "    case $1 in\n";
    for (const auto& c : cases)
        if (!c.patterns.empty()) os << "    " << join(c.patterns, " | ") << ")\n" << c.body;
    os << "    esac\n"
          "}\n\n";

    os << "# _agentjail_takes VERB FLAG: whether FLAG takes a value in VERB.\n"
          "_agentjail_takes() {\n"
          "    case $1 in\n";
    for (const auto& v : verbs) {
        std::vector<std::string> pats;
        for (const auto& f : script_flags(v))
            if (f.takes_value)
                for (const auto& s : spellings(f)) pats.push_back(s);
        if (pats.empty()) continue;
        os << "    " << v.name << ") case $2 in " << join(pats, " | ") << ") return 0 ;; esac ;;\n";
    }
    os << "    esac\n"
          "    return 1\n"
          "}\n\n";

    os << "# _agentjail_flags VERB: every flag VERB takes.\n"
          "_agentjail_flags() {\n"
          "    case $1 in\n";
    for (const auto& v : verbs) {
        std::vector<std::string> all;
        for (const auto& f : script_flags(v))
            for (const auto& s : spellings(f)) all.push_back(s);
        os << "    " << v.name << ") echo " << sh_quote(join(all, " ")) << " ;;\n";
    }
    os << "    esac\n"
          "}\n\n";

    std::vector<std::string> commanders;
    for (const auto& v : verbs)
        if (runs_command(v)) commanders.push_back(v.name);
    os << "_agentjail() {\n"
          "    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}\n"
          "    local verb=run i=1 j w c flag= operands=0 dashdash=\n"
          "    COMPREPLY=()\n"
          "    # --flag=value: bash splits the word at '=' (COMP_WORDBREAKS).\n"
          "    if [[ $cur == = ]]; then\n"
          "        flag=$prev cur=\n"
          "    elif [[ $prev == = ]] && ((COMP_CWORD > 2)); then\n"
          "        flag=${COMP_WORDS[COMP_CWORD-2]}\n"
          "    fi\n"
          "    # A subcommand only as the first word, as agentjail itself reads it.\n"
          "    if ((COMP_CWORD > 1)); then\n"
          "        case ${COMP_WORDS[1]} in\n"
          "        "
       << join(names, " | ")
       << ") verb=${COMP_WORDS[1]} i=2 ;;\n"
          "        esac\n"
          "    fi\n"
          "    for ((; i < COMP_CWORD; i++)); do\n"
          "        w=${COMP_WORDS[i]}\n"
          "        if [[ -z $dashdash && $w == -- ]]; then\n"
          "            dashdash=1\n"
          "            case $verb in "
       << join(commanders, " | ")
       << ") _agentjail_command $((i + 1)); return ;; esac\n"
          "        elif [[ -z $dashdash && $w == -?* ]]; then\n"
          "            if [[ ${COMP_WORDS[i+1]} == = ]]; then\n"
          "                ((i += 2))\n"
          "            elif [[ $w == -[!-]?* ]]; then\n"
          "                # -vp NAME: the first short flag that takes a value takes the rest.\n"
          "                for ((j = 1; j < ${#w}; j++)); do\n"
          "                    c=-${w:j:1}\n"
          "                    _agentjail_takes \"$verb\" \"$c\" || continue\n"
          "                    if ((j + 1 == ${#w})); then\n"
          "                        ((i + 1 == COMP_CWORD)) && flag=$c\n"
          "                        ((i++))\n"
          "                    fi\n"
          "                    break\n"
          "                done\n"
          "            elif _agentjail_takes \"$verb\" \"$w\"; then\n"
          "                ((i + 1 == COMP_CWORD)) && flag=$w\n"
          "                ((i++))\n"
          "            fi\n"
          "        else\n"
          "            case $verb in "
       << join(commanders, " | ")
       << ") _agentjail_command \"$i\"; return ;; esac\n"
          "            ((operands++))\n"
          "        fi\n"
          "    done\n"
          "    if [[ -n $flag ]]; then\n"
          "        _agentjail_value \"$flag\"\n"
          "        return\n"
          "    fi\n"
          "    if [[ -z $dashdash && $cur == -* ]]; then\n"
          "        COMPREPLY=($(compgen -W \"$(_agentjail_flags \"$verb\")\" -- \"$cur\"))\n"
          "        return\n"
          "    fi\n"
          "    case $verb in\n"
          "    run)\n"
          "        ((COMP_CWORD == 1)) && COMPREPLY=($(compgen -W "
       << sh_quote(join(names, " "))
       << " -- \"$cur\"))\n"
          "        _agentjail_command \"$COMP_CWORD\" ;;\n";
    for (const auto& v : verbs) {
        if (v.name == "run") continue;
        if (runs_command(v)) {
            os << "    " << v.name << ") _agentjail_command \"$COMP_CWORD\" ;;\n";
        } else if (!v.words.empty()) {
            os << "    " << v.name << ") ((operands == 0)) && COMPREPLY=($(compgen -W "
               << sh_quote(join(v.words, " ")) << " -- \"$cur\")) ;;\n";
        } else if (v.operand.kind == Kind::file || v.operand.kind == Kind::path) {
            os << "    " << v.name << ") _agentjail_files ;;\n";
        } else if (v.operand.kind == Kind::dir) {
            os << "    " << v.name << ") _agentjail_dirs ;;\n";
        } else if (v.operand.kind == Kind::run_id) {
            os << "    " << v.name << ") _agentjail_run_ids " << v.operand.words.front() << " ;;\n";
        }
    }
    os << "    esac\n"
          "}\n\n"
          "complete -F _agentjail agentjail\n";
    return os.str();
}

// ---- zsh ---------------------------------------------------------------------------

// A description inside an _arguments spec's [...]: \ [ ] and : escaped.
std::string zsh_describe(const std::string& s) {
    std::string out;
    for (char c : s) {
        if (c == '\\' || c == '[' || c == ']' || c == ':') out += '\\';
        out += c;
    }
    return out;
}

// A message between an _arguments spec's colons: \ and : escaped.
std::string zsh_message(const std::string& s) {
    std::string out;
    for (char c : s) {
        if (c == '\\' || c == ':') out += '\\';
        out += c;
    }
    return out;
}

std::string zsh_action(const ValueSpec& v) {
    switch (v.kind) {
    case Kind::file:
    case Kind::path: return "_files";
    case Kind::dir: return "_files -/";
    case Kind::words: return "(" + join(v.words, " ") + ")";
    case Kind::policy: return "_agentjail_policies";
    case Kind::net_preset: return "_agentjail_net_presets";
    case Kind::command: return "_command_names -e";
    case Kind::run_id: return "_agentjail_run_ids " + v.words.front();
    case Kind::none: break;
    }
    return " ";
}

// The _arguments specs of a flag.
std::vector<std::string> zsh_specs(const ScriptFlag& f) {
    const std::string desc = "[" + zsh_describe(short_help(f.help)) + "]";
    std::string arg;
    if (f.takes_value) arg = ":" + zsh_message(f.value_name) + ":" + zsh_action(f.value);
    std::vector<std::string> out;
    const std::string star = f.repeatable ? "*" : "";
    if (f.name == "help") {
        // Nothing else makes sense after --help.
        for (const auto& s : spellings(f)) out.push_back(sh_quote("(- *)" + s + desc));
        return out;
    }
    if (!f.name.empty() && f.short_name != 0) {
        const std::string excl =
            f.repeatable ? "" : "(-" + std::string(1, f.short_name) + " --" + f.name + ")";
        const std::string l = "--" + f.name + (f.takes_value ? "=" : "");
        const std::string s = std::string("-") + f.short_name + (f.takes_value ? "+" : "");
        out.push_back(sh_quote(star + excl + l + desc + arg));
        out.push_back(sh_quote(star + excl + s + desc + arg));
        return out;
    }
    const std::string one = f.name.empty()
                                ? std::string("-") + f.short_name + (f.takes_value ? "+" : "")
                                : "--" + f.name + (f.takes_value ? "=" : "");
    out.push_back(sh_quote(star + one + desc + arg));
    return out;
}

std::string zsh_script(const std::vector<VerbUsage>& verbs) {
    std::ostringstream os;
    os << "#compdef agentjail\n"
       << header("zsh", "_agentjail in $fpath (zsh/vendor-completions)",
                 "source <(agentjail completion zsh)")
       << "\n";
    std::vector<std::string> policies, presets;
    for (const auto& v : verbs)
        for (const auto& f : script_flags(v)) {
            if (f.value.kind == Kind::policy) policies = f.value.words;
            if (f.value.kind == Kind::net_preset) presets = f.value.words;
        }
    os << "_agentjail_policies() {\n"
          "  local dir=${XDG_CONFIG_HOME:-}\n"
          "  [[ $dir == /* ]] || dir=$HOME/.config\n"
          "  local -a names\n"
          "  names=("
       << join(policies, " ")
       << " $dir/agentjail/policies/*.toml(N-.:t:r))\n"
          "  _alternative 'policies:policy:compadd -a names' 'files:policy file:_files -g "
          "\"*.toml(-.)\"'\n"
          "}\n\n"
          "_agentjail_run_ids() {\n"
          "  local arg=\n"
          "  [[ $1 == log ]] && arg=--list\n"
          "  local -a ids\n"
          "  ids=(${(f)\"$(command agentjail $1 $arg 2>/dev/null | grep -oE "
       << kRunIdPattern << ")\"})\n"
          "  _describe -t runs 'run' ids\n"
          "}\n\n"
          "_agentjail_net_presets() {\n"
          "  _alternative 'presets:network preset:("
       << join(presets, " ")
       << ")' 'files:preset file:_files -g \"*.toml(-.)\"'\n"
          "}\n\n"
          "_agentjail_first() {\n"
          "  local -a verbs\n"
          "  verbs=(\n";
    for (const auto& v : verbs) os << "    " << sh_quote(v.name + ":" + v.summary) << "\n";
    os << "  )\n"
          "  _describe -t subcommands 'agentjail subcommand' verbs\n"
          "  _command_names -e\n"
          "}\n\n"
          "_agentjail() {\n";
    for (const auto& v : verbs) {
        os << "  local -a flags_" << v.name << "\n  flags_" << v.name << "=(\n";
        for (const auto& f : script_flags(v))
            for (const auto& s : zsh_specs(f)) os << "    " << s << "\n";
        os << "  )\n";
    }
    // A subcommand only as the first word; its words then start at the subcommand.
    os << "  if (( CURRENT > 2 )); then\n"
          "    case $words[2] in\n";
    for (const auto& v : verbs) {
        os << "    (" << v.name << ")\n"
           << "      shift words\n"
              "      (( CURRENT-- ))\n";
        if (runs_command(v)) {
            os << "      _arguments -s -S -A '-*' : $flags_" << v.name
               << " '(-)1:command:_command_names -e' '*::arguments:_normal'\n";
        } else {
            std::string operands;
            if (!v.words.empty())
                operands =
                    " " + sh_quote("1:subcommand:(" + join(v.words, " ") + ")") + " '*:argument: '";
            else if (v.operand.kind != Kind::none)
                operands = " " + sh_quote("*:argument:" + zsh_action(v.operand));
            os << "      _arguments -s -S : $flags_" << v.name << operands << "\n";
        }
        os << "      return ;;\n";
    }
    os << "    esac\n"
          "  fi\n"
          "  _arguments -s -S -A '-*' : $flags_run '(-)1:command or subcommand:_agentjail_first' "
          "'*::arguments:_normal'\n"
          "}\n\n"
          "# Loaded as an autoloaded function (#compdef), or sourced after compinit.\n"
          "if [[ $zsh_eval_context[-1] == loadautofunc ]]; then\n"
          "  _agentjail \"$@\"\n"
          "else\n"
          "  compdef _agentjail agentjail\n"
          "fi\n";
    return os.str();
}

// ---- fish --------------------------------------------------------------------------

std::string fish_script(const std::vector<VerbUsage>& verbs) {
    std::ostringstream os;
    os << header("fish", "fish/vendor_completions.d/agentjail.fish",
                 "agentjail completion fish | source")
       << "\n";
    std::vector<std::string> names, commanders, policies, presets;
    for (const auto& v : verbs) {
        names.push_back(v.name);
        if (runs_command(v)) commanders.push_back(v.name);
        for (const auto& f : script_flags(v)) {
            if (f.value.kind == Kind::policy) policies = f.value.words;
            if (f.value.kind == Kind::net_preset) presets = f.value.words;
        }
    }
    os << "# The flags that take a value, per subcommand.\n"
          "function __agentjail_value_flags\n"
          "    switch $argv[1]\n";
    for (const auto& v : verbs) {
        std::vector<std::string> pats;
        for (const auto& f : script_flags(v))
            if (f.takes_value)
                for (const auto& s : spellings(f)) pats.push_back(s);
        if (pats.empty()) continue;
        os << "        case " << v.name << "\n            printf '%s\\n' " << join(pats, " ")
           << "\n";
    }
    os << "    end\n"
          "end\n\n"
          "# Where the command line is: the subcommand (run for none) and how many operands\n"
          "# it has; \"command\" once the command to run has started, whose words are then\n"
          "# in $__agentjail_cmd.\n"
          "function __agentjail_state\n"
          "    set -l words (commandline -opc)\n"
          "    set -e words[1]\n"
          "    set -l verb run\n"
          "    if set -q words[1]; and contains -- $words[1] "
       << join(names, " ")
       << "\n"
          "        set verb $words[1]\n"
          "        set -e words[1]\n"
          "    end\n"
          "    set -l takes (__agentjail_value_flags $verb)\n"
          "    set -l skip 0\n"
          "    set -l dashdash 0\n"
          "    set -l operands 0\n"
          "    set -l i 0\n"
          "    for w in $words\n"
          "        set i (math $i + 1)\n"
          "        if test $skip = 1\n"
          "            set skip 0\n"
          "            continue\n"
          "        end\n"
          "        if test $dashdash = 0; and test \"$w\" = --\n"
          "            set dashdash 1\n"
          "            if contains -- $verb "
       << join(commanders, " ")
       << "\n"
          "                set -g __agentjail_cmd $words[(math $i + 1)..-1]\n"
          "                printf '%s\\n' $verb command\n"
          "                return\n"
          "            end\n"
          "            continue\n"
          "        end\n"
          "        if test $dashdash = 0; and string match -q -- '-?*' $w\n"
          "            if string match -q -- '--*=*' $w\n"
          "                continue\n"
          "            else if string match -qr -- '^-[^-].' $w\n"
          "                # -vp NAME: the first short flag that takes a value takes the rest.\n"
          "                set -l chars (string split '' -- (string sub -s 2 -- $w))\n"
          "                for j in (seq (count $chars))\n"
          "                    if contains -- -$chars[$j] $takes\n"
          "                        test $j = (count $chars); and set skip 1\n"
          "                        break\n"
          "                    end\n"
          "                end\n"
          "            else if contains -- $w $takes\n"
          "                set skip 1\n"
          "            end\n"
          "            continue\n"
          "        end\n"
          "        if contains -- $verb "
       << join(commanders, " ")
       << "\n"
          "            set -g __agentjail_cmd $words[$i..-1]\n"
          "            printf '%s\\n' $verb command\n"
          "            return\n"
          "        end\n"
          "        set operands (math $operands + 1)\n"
          "    end\n"
          "    printf '%s\\n' $verb $operands\n"
          "end\n\n"
          "# Completing VERB's flags or operands (not the command it runs).\n"
          "function __agentjail_is\n"
          "    set -l s (__agentjail_state)\n"
          "    test \"$s[1]\" = $argv[1]; and test \"$s[2]\" != command\n"
          "end\n\n"
          "# Completing VERB's operand number N (0: the first).\n"
          "function __agentjail_at\n"
          "    set -l s (__agentjail_state)\n"
          "    test \"$s[1]\" = $argv[1]; and test \"$s[2]\" = $argv[2]\n"
          "end\n\n"
          "function __agentjail_first_word\n"
          "    test (count (commandline -opc)) -eq 1\n"
          "end\n\n"
          "# The command agentjail runs, completed as its own.\n"
          "function __agentjail_command\n"
          "    __agentjail_state >/dev/null\n"
          "    __fish_complete_subcommand --commandline $__agentjail_cmd (commandline -ct)\n"
          "end\n\n"
          "# Policy files: *.toml, and directories to reach them (a word without '/' or\n"
          "# .toml names a built-in).\n"
          "function __agentjail_toml_files\n"
          "    __fish_complete_suffix .toml | string match -r -- '^[^\\t]*(\\.toml|/)(\\t.*)?$'\n"
          "end\n\n"
          "function __agentjail_policies\n"
          "    printf '%s\\tbuilt-in policy\\n' "
       << join(policies, " ")
       << "\n"
          "    set -l dir $XDG_CONFIG_HOME\n"
          "    string match -q '/*' -- \"$dir\"; or set dir $HOME/.config\n"
          "    for f in $dir/agentjail/policies/*.toml\n"
          "        printf '%s\\tyour policy\\n' (string replace -r '\\.toml$' '' -- (path basename "
          "$f))\n"
          "    end\n"
          "    __agentjail_toml_files\n"
          "end\n\n"
          "# The run ids `agentjail runs` (or `agentjail log --list`) names.\n"
          "function __agentjail_run_ids\n"
          "    set -l arg\n"
          "    test $argv[1] = log; and set arg --list\n"
          "    command agentjail $argv[1] $arg 2>/dev/null | string match -r -- "
       << kRunIdPattern << "\n"
          "end\n\n"
          "function __agentjail_net_presets\n"
          "    printf '%s\\tnetwork preset\\n' "
       << join(presets, " ")
       << "\n"
          "    __agentjail_toml_files\n"
          "end\n\n"
          "complete -c agentjail -f\n";
    for (const auto& v : verbs)
        os << "complete -c agentjail -n __agentjail_first_word -a " << fish_quote(v.name) << " -d "
           << fish_quote(v.summary) << "\n";
    for (const auto& v : verbs) {
        const std::string cond = "-n " + fish_quote("__agentjail_is " + v.name);
        for (const auto& f : script_flags(v)) {
            os << "complete -c agentjail " << cond;
            if (f.short_name != 0) os << " -s " << f.short_name;
            if (!f.name.empty()) os << " -l " << f.name;
            if (f.takes_value) {
                switch (f.value.kind) {
                case Kind::file:
                case Kind::path: os << " -r -F"; break;
                case Kind::dir: os << " -x -a '(__fish_complete_directories)'"; break;
                case Kind::words: os << " -x -a " << fish_quote(join(f.value.words, " ")); break;
                case Kind::policy: os << " -x -a '(__agentjail_policies)'"; break;
                case Kind::net_preset: os << " -x -a '(__agentjail_net_presets)'"; break;
                case Kind::command: os << " -x -a '(__fish_complete_command)'"; break;
                case Kind::run_id:
                    os << " -x -a " << fish_quote("(__agentjail_run_ids " + f.value.words.front() + ")");
                    break;
                case Kind::none: os << " -x"; break;
                }
            }
            os << " -d " << fish_quote(short_help(f.help)) << "\n";
        }
        if (runs_command(v)) {
            os << "complete -c agentjail -n " << fish_quote("__agentjail_at " + v.name + " 0")
               << " -a '(__fish_complete_command)'\n";
        } else if (!v.words.empty()) {
            os << "complete -c agentjail -n " << fish_quote("__agentjail_at " + v.name + " 0")
               << " -a " << fish_quote(join(v.words, " ")) << "\n";
        } else if (v.operand.kind == Kind::file || v.operand.kind == Kind::path) {
            os << "complete -c agentjail " << cond << " -F\n";
        } else if (v.operand.kind == Kind::dir) {
            os << "complete -c agentjail " << cond << " -a '(__fish_complete_directories)'\n";
        } else if (v.operand.kind == Kind::run_id) {
            os << "complete -c agentjail " << cond << " -a "
               << fish_quote("(__agentjail_run_ids " + v.operand.words.front() + ")") << "\n";
        }
    }
    os << "complete -c agentjail -n 'test (__agentjail_state)[2] = command' -x -a "
          "'(__agentjail_command)'\n";
    return os.str();
}

}  // namespace

const std::vector<std::string>& completion_shells() {
    static const std::vector<std::string> shells = {"bash", "zsh", "fish"};
    return shells;
}

Result<std::string> completion_script(const std::string& shell) {
    const auto verbs = verb_usages();
    if (shell == "bash") return bash_script(verbs);
    if (shell == "zsh") return zsh_script(verbs);
    if (shell == "fish") return fish_script(verbs);
    std::string known;
    const auto& shells = completion_shells();
    for (size_t i = 0; i < shells.size(); ++i)
        known += (i == 0 ? "" : i + 1 == shells.size() ? " or " : ", ") + shells[i];
    return Error(ErrorKind::invalid_input, EINVAL,
                 "completion: no completion for the shell '" + shell + "' (" + known + ")");
}

}  // namespace agentjail::cli
