// SPDX-License-Identifier: Apache-2.0
// Unit tests of the man pages and the shell completions (issue 28, item 5): the
// lists they are held against come from the binary (its --help, each subcommand's
// --help, `agentjail policies`), never from a list written here, so a flag added to
// the table and missing from a page or a script fails a test. The bash completion
// is run through bash (COMP_WORDS and the function `complete -p` names), fish's
// through `complete -C`, zsh's through a zpty; a shell that is not installed skips
// its tests, saying so (scripts/setup.sh installs zsh and fish).
#include "test_support.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <iostream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

using ajtest::RunOutput;

std::string show(const RunOutput& r) {
    return "status " + std::to_string(r.status) + "\n--- stdout\n" + r.out + "--- stderr\n" + r.err;
}

// The build tree the binary under test is in (build/bin/agentjail -> build).
std::string build_dir() {
    std::string bin = ajtest::agentjail_bin();
    bin = bin.substr(0, bin.rfind('/'));
    return bin.substr(0, bin.rfind('/'));
}

std::string share(const std::string& rel) { return build_dir() + "/share/" + rel; }

// A program on PATH, "" when there is none.
std::string find_program(const std::string& name) {
    const char* path = std::getenv("PATH");
    std::istringstream dirs(path != nullptr ? path : "/usr/bin:/bin");
    for (std::string d; std::getline(dirs, d, ':');)
        if (!d.empty() && ::access((d + "/" + name).c_str(), X_OK) == 0) return d + "/" + name;
    return {};
}

#define REQUIRE_PROGRAM(var, name)                           \
    const std::string var = find_program(name);              \
    if (var.empty())                                         \
    GTEST_SKIP() << name                                     \
        " is not installed (scripts/setup.sh installs it); " \
        "its part of the completions and man pages is not tested"

std::string script(const std::string& shell) {
    auto r = ajtest::agentjail({"completion", shell});
    EXPECT_EQ(r.status, 0) << show(r);
    return r.out;
}

// A flag as the binary's help shows it.
struct HelpFlag {
    std::string name;  // "--policy" or "-y"
    std::string verb;  // "run" for agentjail's own
};

// Boost's option lines ("  -p [ --policy ] NAME|FILE", "  --ro SRC[:DST]").
std::set<std::string> boost_flags(const std::string& help) {
    std::set<std::string> out;
    static const std::regex line(R"(^  (?:(-[A-Za-z]) \[ )?(--[a-z][a-z0-9-]*))");
    for (const auto& l : ajtest::lines(help)) {
        std::smatch m;
        if (!std::regex_search(l, m, line)) continue;
        if (m[1].matched) out.insert(m[1]);
        out.insert(m[2]);
    }
    return out;
}

// A subcommand's own flags: its option lines ("  --json   ...") and the flags in
// its usage lines, outside its examples; and --help, which every one takes.
std::set<std::string> own_flags(const std::string& verb, const std::string& help) {
    std::set<std::string> out{"--help", "-h"};
    static const std::regex option_line(R"(^\s+(-[A-Za-z]|--[a-z][a-z0-9-]*)\b)");
    static const std::regex token(R"((?:^|[\s\[|])(--?[A-Za-z][A-Za-z0-9-]*))");
    bool examples = false;
    for (const auto& l : ajtest::lines(help)) {
        const std::string t = ajtest::trim(l);
        if (t == "Examples:") examples = true;
        if (t.empty()) examples = false;
        if (examples) continue;
        std::smatch m;
        if (std::regex_search(l, m, option_line)) out.insert(m[1]);
        if (t.rfind("usage: agentjail " + verb, 0) == 0 ||
            t.rfind("agentjail " + verb + " ", 0) == 0)
            for (auto it = std::sregex_iterator(t.begin(), t.end(), token);
                 it != std::sregex_iterator(); ++it)
                out.insert((*it)[1]);
    }
    return out;
}

// Every subcommand global --help's Usage lines name ("agentjail check FILE..." -> check).
std::vector<std::string> subcommands() {
    auto r = ajtest::agentjail({"--help"});
    std::vector<std::string> out;
    static const std::regex usage(R"(^  agentjail ([a-z]+)\b)");
    for (const auto& l : ajtest::lines(r.out)) {
        std::smatch m;
        if (std::regex_search(l, m, usage) && std::find(out.begin(), out.end(), m[1]) == out.end())
            out.push_back(m[1]);
    }
    return out;
}

// Each verb (run for agentjail's own) with the flags its --help names.
std::map<std::string, std::set<std::string>> all_flags() {
    std::map<std::string, std::set<std::string>> out;
    out["run"] = boost_flags(ajtest::agentjail({"--help"}).out);
    out["run"].insert("--version");
    for (const auto& v : subcommands()) {
        if (v == "run") continue;
        auto r = ajtest::agentjail({v, "--help"});
        EXPECT_EQ(r.status, 0) << v << "\n" << show(r);
        auto boost = boost_flags(r.out);
        out[v] = boost.empty() ? own_flags(v, r.out) : boost;
    }
    return out;
}

std::vector<std::string> builtin_policies() {
    auto r = ajtest::agentjail({"policies"});
    std::vector<std::string> out;
    for (const auto& l : ajtest::lines(r.out)) {
        if (ajtest::trim(l).empty()) break;
        out.push_back(l.substr(0, l.find(' ')));
    }
    return out;
}

// The network presets, as an unknown one's error names them ("built-in presets: a, b").
std::vector<std::string> net_presets() {
    auto r = ajtest::agentjail({"explain", "--net-preset", "no-such-preset", "--", "true"});
    std::smatch m;
    std::vector<std::string> out;
    if (!std::regex_search(r.err, m, std::regex(R"(built-in presets: ([a-z, -]+);)"))) return out;
    std::istringstream in(m[1].str());
    for (std::string p; std::getline(in, p, ',');) out.push_back(ajtest::trim(p));
    return out;
}

std::string lower(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

bool has_word(const std::string& text, const std::string& word) {
    static const std::string wordchar =
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_";
    for (size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) {
        const bool left =
            at == 0 || wordchar.find(text[at - 1]) == std::string::npos || word[0] == '-';
        const bool right = at + word.size() == text.size() ||
                           wordchar.find(text[at + word.size()]) == std::string::npos;
        if (left && right) return true;
    }
    return false;
}

// ---- the completion command --------------------------------------------------------

TEST(CliCompletion, PrintsAScriptForEachShellAndRefusesOthers) {
    for (const char* shell : {"bash", "zsh", "fish"}) {
        auto r = ajtest::agentjail({"completion", shell});
        EXPECT_EQ(r.status, 0) << shell << "\n" << show(r);
        EXPECT_TRUE(ajtest::contains(r.out, "agentjail completion " + std::string(shell)))
            << r.out.substr(0, 300);
        EXPECT_TRUE(r.err.empty()) << show(r);
    }
    for (const std::vector<std::string>& args : {std::vector<std::string>{"completion", "tcsh"},
                                                 {"completion"},
                                                 {"completion", "bash", "zsh"},
                                                 {"completion", "--bogus"}}) {
        auto r = ajtest::agentjail(args);
        EXPECT_EQ(r.status, 125) << show(r);
        EXPECT_TRUE(r.out.empty()) << show(r);
        auto lines = ajtest::lines(r.err);
        ASSERT_EQ(lines.size(), 1u) << show(r);
        EXPECT_EQ(lines[0].rfind("agentjail: ", 0), 0u) << show(r);
    }
    EXPECT_TRUE(ajtest::contains(ajtest::agentjail({"completion", "tcsh"}).err, "'tcsh'"));
    auto help = ajtest::agentjail({"completion", "--help"});
    EXPECT_EQ(help.status, 0) << show(help);
    EXPECT_TRUE(ajtest::contains(help.out, "agentjail completion bash|zsh|fish")) << help.out;
    EXPECT_TRUE(ajtest::contains(help.out, "source <(agentjail completion bash)")) << help.out;
}

TEST(CliCompletion, IsASubcommandInGlobalHelp) {
    const auto verbs = subcommands();
    EXPECT_NE(std::find(verbs.begin(), verbs.end(), "completion"), verbs.end())
        << ajtest::agentjail({"--help"}).out;
    // Dispatched as a subcommand, not run as a program called completion.
    auto r = ajtest::agentjail({"completion", "-h"});
    EXPECT_EQ(r.status, 0) << show(r);
    EXPECT_EQ(r.out.rfind("agentjail completion:", 0), 0u) << show(r);
}

// What the build installs is what the command prints.
TEST(CliCompletion, TheBuiltFilesAreTheCommandsOutput) {
    EXPECT_EQ(ajtest::read_file(share("bash-completion/completions/agentjail")), script("bash"));
    EXPECT_EQ(ajtest::read_file(share("zsh/vendor-completions/_agentjail")), script("zsh"));
    EXPECT_EQ(ajtest::read_file(share("fish/vendor_completions.d/agentjail.fish")), script("fish"));
}

TEST(CliCompletion, ScriptsNameEveryFlagSubcommandAndPolicy) {
    const auto flags = all_flags();
    const auto verbs = subcommands();
    const auto policies = builtin_policies();
    const auto presets = net_presets();
    ASSERT_GE(flags.at("run").size(), 40u);
    ASSERT_GE(verbs.size(), 14u);
    ASSERT_GE(policies.size(), 5u);
    ASSERT_GE(presets.size(), 3u);
    for (const char* shell : {"bash", "zsh", "fish"}) {
        const std::string s = script(shell);
        for (const auto& [verb, names] : flags)
            for (const auto& f : names) {
                // fish spells them -l NAME and -s X.
                const std::string spelled = std::string(shell) != "fish" ? f
                                            : f[1] == '-'                ? "-l " + f.substr(2)
                                                                         : "-s " + f.substr(1);
                EXPECT_TRUE(has_word(s, spelled)) << shell << " lacks " << verb << "'s " << f;
            }
        for (const auto& v : verbs)
            EXPECT_TRUE(has_word(s, v)) << shell << " lacks the subcommand " << v;
        for (const auto& p : policies)
            EXPECT_TRUE(has_word(s, p)) << shell << " lacks the policy " << p;
        for (const auto& p : presets)
            EXPECT_TRUE(has_word(s, p)) << shell << " lacks the preset " << p;
    }
}

// `SHELL -n` reads the script without a complaint.
void expect_syntax_ok(const std::string& prog, const std::string& shell) {
    ajtest::TempDir dir("aj-compl");
    const std::string file = dir.write("agentjail." + shell, script(shell));
    auto r = ajtest::run({prog, "-n", file});
    EXPECT_EQ(r.status, 0) << shell << " -n\n" << show(r);
    EXPECT_TRUE(r.err.empty()) << shell << " -n\n" << show(r);
}

TEST(CliCompletion, BashAcceptsItsScript) {
    REQUIRE_PROGRAM(bash, "bash");
    expect_syntax_ok(bash, "bash");
}

TEST(CliCompletion, ZshAcceptsItsScript) {
    REQUIRE_PROGRAM(zsh, "zsh");
    expect_syntax_ok(zsh, "zsh");
}

TEST(CliCompletion, FishAcceptsItsScript) {
    REQUIRE_PROGRAM(fish, "fish");
    expect_syntax_ok(fish, "fish");
}

// The value each completion offers for a word typed so far.
struct Case {
    std::string line;  // what was typed; a trailing space: completing a new, empty word
    std::vector<std::string> want;
    std::vector<std::string> not_want = {};
};

// A scratch directory to complete in (files, a directory, a .toml) and a home with
// a policy of yours, so that -p offers it.
struct Scene {
    ajtest::TempDir home{"aj-compl-home"};
    ajtest::TempDir cwd{"aj-compl-cwd"};
    Scene() {
        home.write(".config/agentjail/policies/mine-policy.toml", "extends = \"minimal\"\n");
        cwd.write("my.toml", "");
        cwd.write("notes.txt", "");
        cwd.mkdir("subdir");
    }
    std::vector<std::string> extra_env;  // more NAME=VALUE for the shell
    std::vector<std::string> env() const {
        std::vector<std::string> e{"HOME=" + home.path(), "XDG_CONFIG_HOME="};
        e.insert(e.end(), extra_env.begin(), extra_env.end());
        return e;
    }
};

// Every long flag of every subcommand typed in full completes to itself; the short
// ones are offered for a lone '-' (fish and zsh take "-p" typed in full as complete).
std::vector<Case> flag_cases() {
    std::vector<Case> cases;
    for (const auto& [verb, names] : all_flags()) {
        const std::string prefix = "agentjail " + (verb == "run" ? "" : verb + " ");
        std::vector<std::string> shorts;
        for (const auto& f : names) {
            if (f[1] == '-')
                cases.push_back({prefix + f, {f}});
            else
                shorts.push_back(f);
        }
        cases.push_back({prefix + "-", shorts});
    }
    return cases;
}

std::vector<Case> common_cases() {
    std::vector<std::string> policies = builtin_policies();
    policies.push_back("mine-policy");
    policies.push_back("my.toml");
    std::vector<Case> cases = {
        {"agentjail --pol", {"--policy"}},
        {"agentjail -p ", policies, {"notes.txt"}},
        {"agentjail explain -p mi", {"minimal", "mine-policy"}},
        {"agentjail --net-preset ", net_presets()},
        {"agentjail --net ", {"none", "proxy", "host"}},
        {"agentjail --workspace-mode ", {"direct", "clone", "overlay"}},
        {"agentjail --tty-filter ", {"terminal", "always", "never"}},
        {"agentjail -C ", {"subdir"}, {"my.toml", "notes.txt"}},
        {"agentjail --ro ", {"subdir", "my.toml", "notes.txt"}},
        {"agentjail explain --j", {"--json"}},
        {"agentjail log --", {"--list", "--json", "--policy", "--help"}},
        {"agentjail secret ", {"set", "list", "rm"}},
        {"agentjail completion ", {"bash", "zsh", "fish"}},
        {"agentjail check ", {"my.toml"}},
        {"agentjail -- ls --pol", {}, {"--policy"}},
    };
    cases.push_back({"agentjail ", subcommands()});
    return cases;
}

// Runs the cases through bash: COMP_WORDS and COMP_CWORD as bash sets them, then the
// function `complete -p agentjail` names; prints "== LINE" and COMPREPLY, one a line.
std::map<std::string, std::vector<std::string>> bash_complete(const std::vector<std::string>& lines,
                                                              const Scene& scene) {
    ajtest::TempDir dir("aj-compl-bash");
    const std::string file = dir.write("agentjail.bash", script("bash"));
    std::string driver = "source '" + file + "' || exit 1\n" +
                         R"(fn=$(complete -p agentjail | sed -E 's/.* -F ([^ ]+) .*/\1/')
while IFS= read -r line; do
    read -r -a COMP_WORDS <<< "$line"
    [[ $line == *' ' ]] && COMP_WORDS+=('')
    COMP_CWORD=$((${#COMP_WORDS[@]} - 1)) COMP_LINE=$line COMP_POINT=${#line} COMPREPLY=()
    "$fn" agentjail "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
    printf '== %s\n' "$line"
    printf '%s\n' "${COMPREPLY[@]}"
done
)";
    std::string input;
    for (const auto& l : lines) input += l + "\n";
    const std::string drv = dir.write("driver.bash", driver);
    auto r = ajtest::run({"bash", drv}, scene.env(), &input, scene.cwd.path());
    EXPECT_EQ(r.status, 0) << show(r);
    std::map<std::string, std::vector<std::string>> out;
    std::string cur;
    for (const auto& l : ajtest::lines(r.out)) {
        if (l.rfind("== ", 0) == 0) {
            cur = l.substr(3);
            out[cur];
        } else if (!l.empty()) {
            std::string v = l;
            if (v.size() > 1 && v.back() == '/') v.pop_back();
            out[cur].push_back(v);
        }
    }
    return out;
}

void expect_cases(const std::string& shell, const std::vector<Case>& cases,
                  std::map<std::string, std::vector<std::string>> got) {
    for (const auto& c : cases) {
        const auto& values = got[c.line];
        std::string shown;
        for (const auto& v : values) shown += v + " ";
        for (const auto& w : c.want)
            EXPECT_NE(std::find(values.begin(), values.end(), w), values.end())
                << shell << ": '" << c.line << "' does not offer " << w << "; it offers: " << shown;
        for (const auto& w : c.not_want)
            EXPECT_EQ(std::find(values.begin(), values.end(), w), values.end())
                << shell << ": '" << c.line << "' offers " << w << ": " << shown;
    }
}

TEST(CliCompletion, BashCompletesFlagsPoliciesAndValues) {
    REQUIRE_PROGRAM(bash, "bash");
    const Scene scene;
    auto cases = common_cases();
    // --policy=VALUE: bash hands the function "--policy" "=" as words.
    cases.push_back({"agentjail --policy =", builtin_policies()});
    // Every flag of every subcommand, typed in full, completes to itself.
    for (const auto& [verb, names] : all_flags())
        for (const auto& f : names)
            cases.push_back({"agentjail " + (verb == "run" ? "" : verb + " ") + f, {f}});
    for (const auto& c : flag_cases()) cases.push_back(c);
    std::vector<std::string> lines;
    for (const auto& c : cases) lines.push_back(c.line);
    expect_cases("bash", cases, bash_complete(lines, scene));
}

TEST(CliCompletion, FishCompletesFlagsPoliciesAndValues) {
    REQUIRE_PROGRAM(fish, "fish");
    const Scene scene;
    ajtest::TempDir dir("aj-compl-fish");
    const std::string file = dir.write("agentjail.fish", script("fish"));
    auto cases = common_cases();
    for (const auto& c : flag_cases()) cases.push_back(c);
    std::string cmds = "source '" + file + "'\n";
    for (const auto& c : cases) cmds += "echo '== " + c.line + "'\ncomplete -C '" + c.line + "'\n";
    const std::string drv = dir.write("driver.fish", cmds);
    auto r = ajtest::run({fish, drv}, scene.env(), nullptr, scene.cwd.path());
    ASSERT_EQ(r.status, 0) << show(r);
    std::map<std::string, std::vector<std::string>> got;
    std::string cur;
    for (const auto& l : ajtest::lines(r.out)) {
        if (l.rfind("== ", 0) == 0) {
            cur = l.substr(3);
            continue;
        }
        std::string v = l.substr(0, l.find('\t'));
        if (v.size() > 1 && v.back() == '/') v.pop_back();
        got[cur].push_back(v);
    }
    expect_cases("fish", cases, got);
}

// Run ids come from the command's own listings (`agentjail log --list`, `agentjail
// runs`), asked of the agentjail on PATH: a real run is logged, and its id is then
// what `log` completes to; `apply` and `discard` have no kept run here and offer none.
TEST(CliCompletion, RunIdsAreTheOnesTheCommandLists) {
    REQUIRE_PROGRAM(bash, "bash");
    Scene scene;
    const std::string bin = ajtest::agentjail_bin();
    const std::string state = scene.home.path() + "/state";
    scene.extra_env = {"XDG_STATE_HOME=" + state,
                       "PATH=" + bin.substr(0, bin.rfind('/')) + ":/usr/bin:/bin"};
    auto ran = ajtest::run({bin, "-q", "-p", "minimal", "--", "true"}, scene.env(), nullptr, scene.cwd.path());
    ASSERT_EQ(ran.status, 0) << show(ran);
    auto listed = ajtest::run({bin, "log", "--list"}, scene.env());
    ASSERT_EQ(listed.status, 0) << show(listed);
    std::string id;
    for (const auto& l : ajtest::lines(listed.out))
        if (l.size() > 22 && l[8] == '-' && l[15] == '-') id = l.substr(0, 22);
    ASSERT_FALSE(id.empty()) << "the run was not logged: " << listed.out;
    const std::vector<Case> cases = {
        {"agentjail log ", {id}},
        {"agentjail log " + id.substr(0, 4), {id}},
        {"agentjail apply ", {}, {id}},
        {"agentjail discard ", {}, {id}},
    };
    std::vector<std::string> lines;
    for (const auto& c : cases) lines.push_back(c.line);
    const auto got = bash_complete(lines, scene);
    expect_cases("bash", cases, got);
    EXPECT_TRUE(got.at("agentjail apply ").empty()) << "no run is kept, yet apply offers one";
    if (const std::string fish = find_program("fish"); !fish.empty()) {
        ajtest::TempDir dir("aj-compl-fish-ids");
        const std::string file = dir.write("agentjail.fish", script("fish"));
        const std::string drv =
            dir.write("driver.fish", "source '" + file + "'\ncomplete -C 'agentjail log '\n");
        auto r = ajtest::run({fish, drv}, scene.env(), nullptr, scene.cwd.path());
        ASSERT_EQ(r.status, 0) << show(r);
        EXPECT_NE(r.out.find(id), std::string::npos) << "fish: 'agentjail log ' offers: " << r.out;
    }
}

// zsh completes only inside its line editor: an interactive zsh on a zpty, with
// compinit over the script's directory and compadd wrapped to write each match to a
// file, is sent each line and a TAB (then ^T, bound to print a marker to wait for,
// and ^U to clear the line for the next; ^X would wait for the rest of a ^X-chord).
TEST(CliCompletion, ZshCompletesFlagsPoliciesAndValues) {
    REQUIRE_PROGRAM(zsh, "zsh");
    const Scene scene;
    ajtest::TempDir dir("aj-compl-zsh");
    dir.write("fpath/_agentjail", script("zsh"));
    const std::string matches = dir.path() + "/matches";
    const std::string capture = dir.write("capture.zsh", R"(zmodload zsh/zpty || exit 3
fpath_dir=$1 out=$2
shift 2
zpty z zsh -f -i
zpty -w z "fpath=($fpath_dir \$fpath); autoload -Uz compinit; compinit -u -D; PROMPT= RPROMPT="
zpty -w z "__ajc_out=$out"
zpty -w z 'compprefuncs=(__ajc); __ajc() { compadd() { local -a m; builtin compadd -O m "$@"; print -rl -- $m >> $__ajc_out; builtin compadd "$@" } }'
zpty -w z 'unsetopt auto_list list_beep beep; zstyle ":completion:*" menu no; bindkey "^I" complete-word'
zpty -w z '__ajc_end() { print -n "<<END>>" }; zle -N __ajc_end; bindkey "^T" __ajc_end'
zpty -w z 'print ready-""ready'
zpty -r z x '*ready-ready*'
for line; do
  print -r -- "== $line" >> $out
  zpty -n -w z "$line"$'\t'$'\C-t'$'\C-u'
  buf=
  while [[ $buf != *'<<END>>'* ]]; do
    if zpty -r -t z x; then buf+=$x; else sleep 0.05; fi
  done
done
zpty -d z
)");
    std::vector<Case> cases = common_cases();
    for (const auto& c : flag_cases()) cases.push_back(c);
    std::vector<std::string> argv{zsh, "-f", capture, dir.path() + "/fpath", matches};
    for (const auto& c : cases) argv.push_back(c.line);
    ajtest::RunOptions o;
    o.env = scene.env();
    o.cwd = scene.cwd.path();
    o.timeout_ms = 60000;
    auto r = ajtest::run_with(argv, o);
    if (r.status == 3) GTEST_SKIP() << "zsh has no zpty module: its completion is not tested";
    ASSERT_FALSE(r.timed_out) << show(r);
    ASSERT_EQ(r.status, 0) << show(r);
    std::map<std::string, std::vector<std::string>> got;
    std::string cur;
    for (const auto& l : ajtest::lines(ajtest::read_file(matches))) {
        if (l.rfind("== ", 0) == 0)
            cur = l.substr(3);
        else
            got[cur].push_back(l.size() > 1 && l.back() == '/' ? l.substr(0, l.size() - 1) : l);
    }
    expect_cases("zsh", cases, got);
}

// ---- the man pages -----------------------------------------------------------------

// The page as man renders it at 80 columns, its warnings (groff's, all of them:
// man --warnings) and its status; the rendering in plain ASCII where groff chose a
// typographic character, so that text compares with the help's.
struct Rendered {
    RunOutput r;
    std::string text;
};

Rendered render(const std::string& page) {
    const std::string man = find_program("man");
    Rendered out;
    out.r = ajtest::run({man, "--warnings", "-P", "cat", "-l", page},
                        {"MANWIDTH=80", "LC_ALL=C.UTF-8"});
    std::string t = out.r.out;
    for (const auto& [from, to] :
         std::vector<std::pair<std::string, std::string>>{{"\u2010", "-"},
                                                          {"\u2212", "-"},
                                                          {"\u2018", "'"},
                                                          {"\u2019", "'"},
                                                          {"\u201c", "\""},
                                                          {"\u201d", "\""}}) {
        for (size_t at = t.find(from); at != std::string::npos; at = t.find(from, at))
            t.replace(at, from.size(), to);
    }
    out.text = t;
    return out;
}

// Whitespace runs as one space, so that filled text compares with the help's lines.
std::string collapse(const std::string& s) {
    std::string out;
    for (char c : s) {
        const bool space = c == ' ' || c == '\n' || c == '\t';
        if (space && (out.empty() || out.back() == ' ')) continue;
        out += space ? ' ' : c;
    }
    return out;
}

// Every line of the source that is a request is one the generator writes: no text
// of a help or of docs/ became one.
void expect_only_known_requests(const std::string& roff) {
    static const std::set<std::string> known = {".TH", ".SH", ".SS", ".PP", ".TP",
                                                ".IP", ".EX", ".EE", ".nf", ".fi",
                                                ".br", ".nh", ".ad", ".nr", ".\\\""};
    for (const auto& l : ajtest::lines(roff)) {
        if (l.empty() || (l[0] != '.' && l[0] != '\'')) continue;
        EXPECT_EQ(known.count(l.substr(0, l.find(' '))), 1u) << "a request nobody wrote: " << l;
    }
}

TEST(CliManPage, AgentjailOneRendersWithoutWarnings) {
    REQUIRE_PROGRAM(man, "man");
    const std::string page = share("man/man1/agentjail.1");
    ASSERT_TRUE(ajtest::exists(page)) << page << " was not built (target agentjail_docs)";
    auto m = render(page);
    EXPECT_EQ(m.r.status, 0) << show(m.r);
    EXPECT_EQ(m.r.err, "") << "man --warnings:\n" << m.r.err;
    expect_only_known_requests(ajtest::read_file(page));
}

TEST(CliManPage, AgentjailOneNamesEveryFlagAndSubcommand) {
    REQUIRE_PROGRAM(man, "man");
    const std::string text = render(share("man/man1/agentjail.1")).text;
    for (const auto& [verb, names] : all_flags())
        for (const auto& f : names)
            EXPECT_TRUE(has_word(text, f)) << "agentjail(1) lacks " << verb << "'s " << f;
    const std::string flat = collapse(text);
    for (const auto& v : subcommands()) {
        EXPECT_TRUE(has_word(text, "agentjail " + v)) << "agentjail(1) lacks the subcommand " << v;
        if (v == "run") continue;
        // The subcommand's own help, paragraph by paragraph (not the flag table, which
        // is under OPTIONS; learn's is agentjail's own --help).
        const std::string help = ajtest::agentjail({v, "--help"}).out;
        if (help == ajtest::agentjail({"--help"}).out) continue;
        std::string para;
        for (const auto& l : ajtest::lines(help + "\n")) {
            if (!ajtest::trim(l).empty()) {
                para += l + "\n";
                continue;
            }
            if (!para.empty() && para.rfind("Options:", 0) != 0) {
                EXPECT_TRUE(ajtest::contains(flat, collapse(para)))
                    << "agentjail(1) lacks this text of agentjail " << v << " --help:\n"
                    << para;
            }
            para.clear();
        }
    }
}

TEST(CliManPage, AgentjailOneHasTheSectionsAManPageHas) {
    REQUIRE_PROGRAM(man, "man");
    const std::string text = render(share("man/man1/agentjail.1")).text;
    for (const char* s : {"NAME", "SYNOPSIS", "DESCRIPTION", "OPTIONS", "COMMANDS", "EXIT STATUS",
                          "EXAMPLES", "FILES", "ENVIRONMENT", "SEE ALSO"})
        EXPECT_TRUE(ajtest::contains(text, std::string("\n") + s + "\n")) << "no section " << s;
    for (const char* status : {"124", "125", "126", "127", "137", "128+N"})
        EXPECT_TRUE(has_word(text, status)) << "EXIT STATUS lacks " << status;
    for (const char* file :
         {"~/.config/agentjail/config.toml", "~/.config/agentjail/policies/NAME.toml",
          "~/.config/agentjail/secrets/", "~/.config/agentjail/trusted", "agentjail.toml",
          "$XDG_STATE_HOME/agentjail/", "/agentjail/policies/"})
        EXPECT_TRUE(ajtest::contains(text, file)) << "FILES lacks " << file;
    for (const char* var : {"HOME", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "TMPDIR", "PATH", "SHELL"})
        EXPECT_TRUE(has_word(text, var)) << "ENVIRONMENT lacks " << var;
    for (const char* see : {"agentjail-policy(5)", "bwrap(1)"})
        EXPECT_TRUE(ajtest::contains(text, see)) << see;
    // The examples of --help, as lines of their own.
    EXPECT_TRUE(ajtest::contains(text, "agentjail --policy minimal -- /bin/true\n")) << text;
}

TEST(CliManPage, PolicyPageIsThePolicyFormatDocument) {
    REQUIRE_PROGRAM(man, "man");
    const std::string page = share("man/man5/agentjail-policy.5");
    ASSERT_TRUE(ajtest::exists(page)) << page << " was not built (target agentjail_docs)";
    auto m = render(page);
    EXPECT_EQ(m.r.status, 0) << show(m.r);
    EXPECT_EQ(m.r.err, "") << "man --warnings:\n" << m.r.err;
    expect_only_known_requests(ajtest::read_file(page));
    const std::string md = ajtest::read_file(std::string(AJ_SOURCE_DIR) + "/docs/policy-format.md");
    for (const auto& l : ajtest::lines(md)) {
        // Each section and subsection, by its words ("## Env files (`--env-file`)").
        if (l.rfind("## ", 0) == 0 || l.rfind("### ", 0) == 0) {
            // .SH in capitals, code as written: compared without case.
            std::string title = l.substr(l.find(' ') + 1);
            title.erase(std::remove(title.begin(), title.end(), '`'), title.end());
            EXPECT_TRUE(ajtest::contains(lower(m.text), lower(title) + "\n")) << "no section " << l;
        }
        // Each key of the Values table.
        if (l.rfind("| `", 0) == 0) {
            const std::string key = l.substr(3, l.find('`', 3) - 3);
            EXPECT_TRUE(ajtest::contains(m.text, key)) << "agentjail-policy(5) lacks " << key;
        }
    }
    // The example policy, as it is.
    EXPECT_TRUE(ajtest::contains(m.text, "extends = \"default\"")) << m.text;
    EXPECT_TRUE(ajtest::contains(m.text, "[[seccomp.rule]]")) << m.text;
}

// Markdown that holds roff's own syntax comes out as text: a line starting with '.'
// or '\'', backslashes, a tab, characters beyond ASCII.
TEST(CliManPage, MarkdownThatLooksLikeRoffStaysText) {
    REQUIRE_PROGRAM(man, "man");
    const std::string docgen = build_dir() + "/cli/aj_docgen";
    ASSERT_TRUE(ajtest::exists(docgen)) << docgen;
    ajtest::TempDir dir("aj-roff");
    const std::string md = dir.write("evil.md",
                                     "# Title\n\n"
                                     ".TH EVIL 9\n'br\nA \\fBnot bold\\fR and `\\n[.T]` here.\n\n"
                                     "## .SH section\n\n"
                                     "- .item one\n- 'item two\n\n"
                                     "| key | what |\n|---|---|\n| `.k` | 'v, a \\ back |\n\n"
                                     "```\n.PP\n'x\n\\\\ two\n```\n\n"
                                     "Unicode: \u00fcber \u2014 1\u201363.\n");
    const std::string page = dir.path() + "/evil.5";
    auto g = ajtest::run({docgen, "man5", md, page});
    ASSERT_EQ(g.status, 0) << show(g);
    expect_only_known_requests(ajtest::read_file(page));
    auto m = render(page);
    EXPECT_EQ(m.r.err, "") << "man --warnings:\n" << m.r.err;
    for (const char* text :
         {".TH EVIL 9 'br", "\\fBnot bold\\fR", "\\n[.T]", ".SH SECTION", ".item one", "'item two",
          ".k", "'v, a \\ back", ".PP\n", "'x\n", "\\\\ two", "\u00fcber \u2014 1\u201363."})
        EXPECT_TRUE(ajtest::contains(m.text, text)) << "not shown as written: " << text << "\n"
                                                    << m.text;
}

}  // namespace
