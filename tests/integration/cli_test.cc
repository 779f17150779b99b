// SPDX-License-Identifier: Apache-2.0
// Integration: the subcommands around run (explain, check, policies, doctor) and the
// C API example, driven through the real binaries.
#include "common.hpp"

#include <nlohmann/json.hpp>

#include <csignal>
#include <filesystem>
#include <regex>

using ajit::describe;
using ajit::Sandbox;

TEST_F(Sandbox, ExplainJsonParsesAndListsTheMounts) {
    auto r = jail.run({"explain", "--json", "-C", jail.ws(), "--ro", AJ_HELPERS_DIR, "--", "true"});
    ASSERT_EQ(r.status, 0) << describe(r);
    auto j = nlohmann::json::parse(r.out, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << "not JSON:\n" << r.out;
    std::string error;
    auto mounts = ajtest::planned_mounts({"-C", jail.ws(), "--ro", AJ_HELPERS_DIR, "--", "true"},
                                         {"HOME=" + jail.home()}, &error);
    ASSERT_FALSE(mounts.empty()) << error;
    bool ws = false, proc = false, helpers = false, tmp = false;
    for (const auto& m : mounts) {
        ws = ws || m.dst == jail.ws();
        proc = proc || m.dst == "/proc";
        helpers = helpers || m.dst == AJ_HELPERS_DIR;
        tmp = tmp || m.dst == "/tmp";
    }
    EXPECT_TRUE(ws) << "workspace mount missing\n" << r.out;
    EXPECT_TRUE(proc) << "/proc missing\n" << r.out;
    EXPECT_TRUE(helpers) << "--ro mount missing\n" << r.out;
    EXPECT_TRUE(tmp) << "/tmp missing\n" << r.out;

    auto text = jail.run({"explain", "-C", jail.ws(), "--", "true"});
    EXPECT_EQ(text.status, 0) << describe(text);
    EXPECT_TRUE(ajtest::contains(text.out, jail.ws())) << text.out;
}

TEST_F(Sandbox, CheckAcceptsAGoodPolicyAndLocatesErrorsInABadOne) {
    ajtest::TempDir d("aj-check");
    std::string good = d.write("good.toml", "description = \"fine\"\nextends = \"default\"\n\n[filesystem]\nro = [\"/usr\"]\n");
    std::string bad = d.write("bad.toml", "description = \"broken\"\n\n[filesystem]\nro = [42]\n");
    std::string unknown = d.write("unknown.toml", "[filesystem]\nno_such_key = true\n");
    auto g = jail.run({"check", good});
    EXPECT_EQ(g.status, 0) << describe(g);
    auto b = jail.run({"check", bad});
    EXPECT_EQ(b.status, 125) << describe(b);
    EXPECT_TRUE(std::regex_search(b.err, std::regex("bad\\.toml:4:[0-9]+: "))) << "no file:line:col\n" << b.err;
    auto u = jail.run({"check", unknown});
    EXPECT_EQ(u.status, 125) << describe(u);
    EXPECT_TRUE(std::regex_search(u.err, std::regex("unknown\\.toml:2:[0-9]+: "))) << "no file:line:col\n" << u.err;
    auto both = jail.run({"check", good, bad});
    EXPECT_EQ(both.status, 125) << "one bad file must fail the check\n" << describe(both);
}

TEST_F(Sandbox, PoliciesListsTheBuiltins) {
    auto r = jail.run({"policies"});
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_TRUE(std::regex_search(r.out, std::regex("(^|\\W)default(\\W|$)"))) << r.out;
    EXPECT_TRUE(std::regex_search(r.out, std::regex("(^|\\W)minimal(\\W|$)"))) << r.out;
}

// Issue 27, item 8: your policies in ~/.config/agentjail/policies are found by name,
// listed by `policies`, and hidden from the sandbox they configure (an agent cannot
// read or plant one). Control: without the file the name is unknown (125).
TEST_F(Sandbox, YourPoliciesAreFoundByNameAndHiddenInside) {
    ajtest::RunOptions o;
    o.unset_env = {"XDG_CONFIG_HOME"};
    auto unknown = jail.run({"-C", jail.ws(), "-p", "mine", "--", "hostname"}, o);
    EXPECT_EQ(unknown.status, 125) << describe(unknown);
    EXPECT_TRUE(ajtest::contains(unknown.err, "yours: ~/.config/agentjail/policies/NAME.toml")) << describe(unknown);
    jail.home_dir().write(".config/agentjail/policies/mine.toml",
                          "extends = 'default'\n[process]\nhostname = 'mine-host'\n");
    auto r = jail.run({"-C", jail.ws(), "-p", "mine", "--", "/bin/sh", "-c",
                       "hostname; ls ~/.config/agentjail/policies 2>&1 || echo HIDDEN"},
                      o);
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_EQ(ajtest::lines(r.out)[0], "mine-host") << describe(r);
    EXPECT_FALSE(ajtest::contains(r.out, "mine.toml")) << describe(r);
    auto list = jail.run({"policies"}, o);
    ASSERT_EQ(list.status, 0) << describe(list);
    EXPECT_TRUE(ajtest::contains(list.out, "\nyours (" + jail.home() + "/.config/agentjail/policies):\nmine\n"))
        << list.out;
}

TEST_F(Sandbox, DoctorExitsZeroAndReports) {
    auto r = jail.run({"doctor"});
    EXPECT_EQ(r.status, 0) << describe(r);
    size_t n = 0;
    for (const auto& l : ajtest::lines(r.out)) n += ajtest::trim(l).empty() ? 0 : 1;
    EXPECT_GE(n, 2u) << r.out;
}

// doctor's first line says where agentjail runs, and --json gives the same as one
// object: the environment (container, seccomp filter, WSL, kernel) and every check
// with its status, detail and fix, the same checks the text lists, in order. Under a
// Kubernetes-style filter (containerlike) the environment says so. A flag doctor does
// not have: 125, one line.
TEST_F(Sandbox, DoctorSaysWhereItRunsAndGivesJson) {
    auto t = jail.run({"doctor"});
    const auto lines = ajtest::lines(t.out);
    ASSERT_FALSE(lines.empty()) << describe(t);
    EXPECT_EQ(lines[0].rfind("environment: ", 0), 0u) << describe(t);
    EXPECT_TRUE(ajtest::contains(lines[0], "; Linux ")) << describe(t);
    auto j = jail.run({"doctor", "--json"});
    EXPECT_EQ(j.status, t.status) << describe(j);
    auto doc = nlohmann::json::parse(j.out, nullptr, false);
    ASSERT_FALSE(doc.is_discarded()) << describe(j);
    EXPECT_EQ(doc["ok"].get<bool>(), t.status == 0) << j.out;
    ASSERT_TRUE(doc["environment"].is_object()) << j.out;
    EXPECT_TRUE(doc["environment"]["seccomp_filter"].is_boolean()) << j.out;
    EXPECT_TRUE(doc["environment"]["kernel"].is_string()) << j.out;
    std::vector<std::string> text_names;
    for (const auto& l : lines)
        if (l.size() > 6 && l[0] != ' ' && l.rfind("environment:", 0) != 0)
            text_names.push_back(l.substr(6, l.find(':') - 6));
    std::vector<std::string> json_names;
    for (const auto& c : doc["checks"]) {
        json_names.push_back(c["name"].get<std::string>());
        const std::string st = c["status"].get<std::string>();
        EXPECT_TRUE(st == "ok" || st == "warn" || st == "fail") << c.dump();
        EXPECT_TRUE(c["detail"].is_string()) << c.dump();
    }
    EXPECT_EQ(json_names, text_names) << j.out << "\n" << t.out;
    EXPECT_GE(json_names.size(), 5u) << j.out;

    auto k = ajtest::run({ajtest::helper("containerlike"), ajtest::agentjail_bin(), "doctor", "--json"},
                         {"KUBERNETES_SERVICE_HOST=10.0.0.1"});
    auto kd = nlohmann::json::parse(k.out, nullptr, false);
    ASSERT_FALSE(kd.is_discarded()) << describe(k);
    EXPECT_EQ(kd["environment"]["container"], "kubernetes") << k.out;
    EXPECT_EQ(kd["environment"]["seccomp_filter"], true) << k.out;
    EXPECT_EQ(kd["ok"], false) << k.out;

    auto bad = jail.run({"doctor", "--jsn"});
    EXPECT_EQ(bad.status, 125) << describe(bad);
    EXPECT_EQ(ajtest::lines(bad.err).size(), 1u) << describe(bad);
}

// Inside a container whose runtime's default seccomp profile refuses clone3 (ENOSYS)
// and new user namespaces (EPERM), as tests/helpers/containerlike does (issue 29): the
// refusal names that filter and the container's fix, not an old kernel; so does
// doctor, with no sysctl a container cannot set; a Kubernetes pod gets its own
// securityContext fix. Nothing is left behind (exit 125, one line). Control: the same
// command without the filter runs.
TEST_F(Sandbox, RefusedInsideAContainerTheMessageNamesItsSeccompProfile) {
    const std::string in = ajtest::helper("containerlike");
    ajtest::TempDir ws("aj-containerlike");
    auto r = ajtest::run({in, ajtest::agentjail_bin(), "-C", ws.path(), "--", "/bin/true"});
    EXPECT_EQ(r.status, 125) << describe(r);
    EXPECT_EQ(ajtest::lines(r.err).size(), 1u) << describe(r);
    EXPECT_TRUE(ajtest::contains(r.err, "refused by the seccomp filter agentjail was started under")) << describe(r);
    EXPECT_TRUE(ajtest::contains(r.err, "--security-opt seccomp=unconfined")) << describe(r);
    EXPECT_FALSE(ajtest::contains(r.err, "Linux 5.3")) << describe(r);
    EXPECT_TRUE(std::filesystem::is_empty(ws.path())) << "the refused run left something in the workspace";

    auto k = ajtest::run({in, ajtest::agentjail_bin(), "-C", ws.path(), "--", "/bin/true"},
                         {"KUBERNETES_SERVICE_HOST=10.0.0.1"});
    EXPECT_EQ(k.status, 125) << describe(k);
    EXPECT_TRUE(ajtest::contains(k.err, "this is a kubernetes container")) << describe(k);
    EXPECT_TRUE(ajtest::contains(k.err, "seccompProfile.type: Unconfined")) << describe(k);

    auto d = ajtest::run({in, ajtest::agentjail_bin(), "doctor"});
    EXPECT_NE(d.status, 0) << describe(d);
    EXPECT_TRUE(ajtest::contains(d.out, "--security-opt seccomp=unconfined")) << describe(d);
    EXPECT_TRUE(ajtest::contains(d.out, "started under a seccomp filter")) << describe(d);
    EXPECT_FALSE(ajtest::contains(d.out, "sysctl -w kernel.unprivileged_userns_clone")) << describe(d);

    auto c = ajtest::run({ajtest::agentjail_bin(), "-C", ws.path(), "--", "/bin/true"});
    EXPECT_EQ(c.status, 0) << "control: without the filter\n" << describe(c);
}

// Under a filter that holds a seccomp listener already (WSL2's init; the kernel allows
// one per chain), the run goes on (issue 29, item 6): the refusals are the kernel's,
// and stderr and the record say that they are not logged and that Unix sockets are
// refused. Control: without that filter the same run says nothing of it.
TEST_F(Sandbox, UnderAnotherListenerTheRunGoesOnAndSaysWhatItLacks) {
    ajtest::TempDir ws("aj-listener"), out("aj-listener-out");
    const std::string record = out.path() + "/r.json";
    auto r = ajtest::run({ajtest::helper("containerlike"), "--listener", ajtest::agentjail_bin(), "-C", ws.path(),
                          "--result-file", record, "--", "/bin/sh", "-c", "echo ran"});
    EXPECT_EQ(r.status, 0) << describe(r);
    EXPECT_EQ(r.out, "ran\n") << describe(r);
    EXPECT_TRUE(ajtest::contains(r.err, "holds the one notification listener")) << describe(r);
    EXPECT_TRUE(ajtest::contains(r.err, "not logged")) << describe(r);
    const std::string rec = ajtest::read_file(record);
    EXPECT_TRUE(ajtest::contains(rec, "seccomp-listener: ")) << rec;
    EXPECT_TRUE(std::filesystem::is_empty(ws.path())) << "the run left something in the workspace";
    auto c = ajtest::run({ajtest::agentjail_bin(), "-C", ws.path(), "--", "/bin/sh", "-c", "echo ran"});
    EXPECT_EQ(c.status, 0) << "control: without the listener\n" << describe(c);
    EXPECT_FALSE(ajtest::contains(c.err, "notification listener")) << describe(c);
}

TEST_F(Sandbox, HelpAndVersion) {
    auto h = jail.run({"--help"});
    EXPECT_EQ(h.status, 0) << describe(h);
    EXPECT_TRUE(ajtest::contains(h.out, "--workspace")) << h.out;
    auto v = jail.run({"--version"});
    EXPECT_EQ(v.status, 0) << describe(v);
    EXPECT_TRUE(std::regex_search(v.out, std::regex("[0-9]+\\.[0-9]+\\.[0-9]+"))) << v.out;
}

// Started in a subdirectory of a git repository (issue 27, item 2): the repository's
// top level is the workspace and the command starts where the user is, so git inside
// finds its repository and a write at the top lands; explain says so. `-C .` keeps
// the subdirectory alone. Control: outside a repository the directory itself is the
// workspace.
TEST_F(Sandbox, StartedInASubdirectoryOfARepositoryTheTopIsTheWorkspace) {
    const std::string ws = jail.ws();
    auto g = ajtest::run({"git", "init", "-q", ws});
    ASSERT_EQ(g.status, 0) << g.err;
    ::mkdir((ws + "/pkg").c_str(), 0755);
    ::mkdir((ws + "/pkg/src").c_str(), 0755);
    const std::string sub = ws + "/pkg/src";
    ajtest::RunOptions o;
    o.cwd = sub;
    auto r = jail.run({"--ro", AJ_HELPERS_DIR, "--", "/bin/sh", "-c",
                       "pwd; git rev-parse --show-toplevel; echo x > ../../top-written && echo top=ok"},
                      o);
    ASSERT_EQ(r.status, 0) << describe(r);
    auto l = ajtest::lines(r.out);
    ASSERT_GE(l.size(), 3u) << describe(r);
    EXPECT_EQ(l[0], sub);
    EXPECT_EQ(l[1], ws);
    EXPECT_EQ(l[2], "top=ok");
    EXPECT_TRUE(ajtest::exists(ws + "/top-written"));
    auto e = jail.run({"explain", "--", "true"}, o);
    EXPECT_TRUE(ajtest::contains(e.out, "workspace: " + ws + ", the top of the git repository")) << describe(e);

    auto only = jail.run({"-C", ".", "--ro", AJ_HELPERS_DIR, "--", "/bin/sh", "-c",
                          "pwd; git rev-parse --show-toplevel 2>/dev/null || echo no-repo; "
                          "echo x > ../../top-2 2>/dev/null; true"},
                         o);
    ASSERT_EQ(only.status, 0) << describe(only);
    EXPECT_TRUE(ajtest::contains(only.out, "no-repo")) << describe(only);
    EXPECT_FALSE(ajtest::exists(ws + "/top-2")) << "a write above -C . reached the host";

    // Control: no repository above, the directory is the workspace.
    ajtest::TempDir plain("aj-plain");
    ::mkdir((plain.path() + "/a").c_str(), 0755);
    ajtest::RunOptions p;
    p.cwd = plain.path() + "/a";
    auto c = jail.run({"--ro", AJ_HELPERS_DIR, "--", "/bin/sh", "-c", "pwd; echo x > ../up 2>/dev/null; true"}, p);
    EXPECT_EQ(ajtest::trim(c.out), plain.path() + "/a") << describe(c);
    EXPECT_FALSE(ajtest::exists(plain.path() + "/up")) << "control: the parent was the workspace";
}

static std::vector<std::string> cat_args(std::vector<std::string> a, const std::vector<std::string>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

// A bind the command line asks for that a hide rule covers (`--ro ~/.ssh`) is not
// dropped silently (issue 27, item 9): a warning at the run says so and why; the
// path stays hidden. Control: a --ro of a path nothing hides is shown, unwarned.
TEST_F(Sandbox, ABindOfAHiddenPathIsWarnedAbout) {
    const std::string ssh = jail.home() + "/.ssh";
    ASSERT_TRUE(ajtest::exists(ssh));
    auto r = jail.run(cat_args(jail.base(), {"--ro", ssh, "--", "/bin/sh", "-c", "ls " + ssh + " >/dev/null 2>&1 || echo hidden"}));
    EXPECT_EQ(r.status, 0) << describe(r);
    EXPECT_TRUE(ajtest::contains(r.out, "hidden")) << describe(r);
    EXPECT_TRUE(ajtest::contains(r.err, "warning: dropped ro bind " + ssh)) << describe(r);
    EXPECT_TRUE(ajtest::contains(r.err, "is hidden by ~/.ssh")) << describe(r);
    ajtest::TempDir plain("aj-plain-ro");
    auto c = jail.run(cat_args(jail.base(), {"--ro", plain.path(), "--", "/bin/sh", "-c", "ls -d " + plain.path()}));
    EXPECT_EQ(c.status, 0) << describe(c);
    EXPECT_FALSE(ajtest::contains(c.err, "dropped")) << describe(c);
}

// A mistyped flag: exit 125, one line, and the flag that was meant (issue 27); a word
// far from every flag gets no guess.
TEST_F(Sandbox, AMistypedFlagSuggestsTheOneMeant) {
    const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
        {{"--allow-hots", "x", "--", "true"}, "did you mean --allow-host?"},
        {{"--timout", "5s", "--", "true"}, "did you mean --timeout?"},
        {{"--workspace-mod=clone", "--", "true"}, "did you mean --workspace-mode?"},
        {{"explain", "--jsn"}, "did you mean --json?"},
    };
    for (const auto& [args, want] : cases) {
        auto r = jail.run(args);
        EXPECT_EQ(r.status, 125) << describe(r);
        EXPECT_TRUE(ajtest::contains(r.err, want)) << describe(r);
        EXPECT_EQ(ajtest::lines(r.err).size(), 1u) << describe(r);
    }
    auto far = jail.run({"--xyzzy", "--", "true"});
    EXPECT_EQ(far.status, 125) << describe(far);
    EXPECT_TRUE(ajtest::contains(far.err, "unrecognised option '--xyzzy'")) << describe(far);
    EXPECT_FALSE(ajtest::contains(far.err, "did you mean")) << describe(far);
    // Boost puts what was typed into %placeholders% until none is left: a word that
    // holds one (found by fuzz_cli) looped forever. Each of Boost's placeholders, in
    // an unknown option and in a bad value: refused at once, shown with U+FF05.
    for (const std::string token : {"original_token", "option", "value", "canonical_option", "prefix"}) {
        const std::string word = "%" + token + "%";
        auto u = jail.run({"--ne,net-" + word + "t", "--", "true"});
        EXPECT_EQ(u.status, 125) << describe(u);
        EXPECT_TRUE(ajtest::contains(u.err, "\uFF05" + token + "\uFF05")) << describe(u);
        EXPECT_EQ(ajtest::lines(u.err).size(), 1u) << describe(u);
        auto v = jail.run({"--tty-filter", word, "--", "true"});
        EXPECT_EQ(v.status, 125) << describe(v);
        EXPECT_EQ(ajtest::lines(v.err).size(), 1u) << describe(v);
    }
}

// ~/.config/agentjail/config.toml sets defaults as the flags of the same names
// would, and the command line's own flags land on top: a repeatable one adds to the
// list, a single one replaces; `policy` picks the policy for commands no agent preset
// is for. A key no flag has, or a value of the wrong kind, is refused with its
// file:line:column (125, one line), with the key meant. Control: without the file
// none of it is there.
namespace {
std::vector<std::string> cfg_args(std::vector<std::string> a, const std::vector<std::string>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}
}  // namespace

TEST_F(Sandbox, YourConfigSetsTheDefaultsAndTheCommandLineWins) {
    ajtest::TempDir config("aj-config");
    config.mkdir("agentjail");
    ajtest::RunOptions o;
    o.env = {"XDG_CONFIG_HOME=" + config.path()};
    config.write("agentjail/config.toml",
                 "# my defaults\nenv = [\"FROM_CONFIG=yes\", \"BOTH=config\"]\ntimeout = \"5m\"\n"
                 "ro = [\"/usr/share\"]\n");
    auto r = jail.run(cfg_args(jail.base(), {"-e", "BOTH=flag", "--", "/bin/sh", "-c",
                                                "echo from=$FROM_CONFIG both=$BOTH"}), o);
    EXPECT_EQ(r.status, 0) << describe(r);
    EXPECT_EQ(ajit::field(r.out, "from"), "yes both=flag") << describe(r);
    auto e = jail.run({"explain", "-C", jail.ws(), "--", "/bin/true"}, o);
    EXPECT_TRUE(ajtest::contains(e.out, "config.toml:4:1 (ro)")) << describe(e);
    EXPECT_TRUE(ajtest::contains(e.out, "timeout 5m")) << describe(e);
    // The policy for commands no agent preset is for, and -p over it.
    config.write("agentjail/config.toml", "policy = \"minimal\"\n");
    auto m = jail.run({"explain", "--", "/bin/true"}, o);
    EXPECT_TRUE(ajtest::contains(m.out, "policy     minimal")) << describe(m);
    auto d = jail.run({"explain", "-p", "default", "--", "/bin/true"}, o);
    EXPECT_TRUE(ajtest::contains(d.out, "policy     default")) << describe(d);
    // Refusals, one line each, with where and what was meant.
    const std::vector<std::pair<std::string, std::string>> bad = {
        {"memroy = \"1G\"\n", "config.toml:1:1: memroy: no such setting"},
        {"ro = true\n", "config.toml:1:1: ro: expected the value of --ro"},
        {"\ntimeout = [\"1s\", \"2s\"]\n", "config.toml:2:1: timeout: --timeout takes one value"},
        {"env = \"A\n", "config.toml:1:"},
    };
    for (const auto& [text, want] : bad) {
        config.write("agentjail/config.toml", text);
        auto b = jail.run(cfg_args(jail.base(), {"--", "/bin/true"}), o);
        EXPECT_EQ(b.status, 125) << text << describe(b);
        EXPECT_TRUE(ajtest::contains(b.err, want)) << text << describe(b);
        EXPECT_EQ(ajtest::lines(b.err).size(), 1u) << describe(b);
    }
    config.write("agentjail/config.toml", "memroy = \"1G\"\n");
    EXPECT_TRUE(ajtest::contains(jail.run(cfg_args(jail.base(), {"--", "/bin/true"}), o).err,
                                 "did you mean 'memory'?"));
    // Control: no file, no defaults.
    ::unlink((config.path() + "/agentjail/config.toml").c_str());
    auto none = jail.run(cfg_args(jail.base(), {"--", "/bin/sh", "-c", "echo from=${FROM_CONFIG-unset}"}), o);
    EXPECT_EQ(ajit::field(none.out, "from"), "unset") << describe(none);
}

// A project's own agentjail.toml is used only once the user trusted it as it is
// (`agentjail trust -y`, by its SHA-256): before that, and again once it changed (the
// agent can write the project), runs say it is there and do not use it. Without a
// terminal, trust needs -y. Control: trusted and unchanged, it is the policy.
TEST_F(Sandbox, AProjectPolicyIsUsedOnlyOnceTrustedAsItIs) {
    ajtest::TempDir config("aj-trust");
    jail.ws_dir().write("agentjail.toml", "extends = \"default\"\n[environment]\nset = { FROM_PROJECT = \"yes\" }\n");
    ajtest::RunOptions o;
    o.env = {"XDG_CONFIG_HOME=" + config.path()};
    o.cwd = jail.ws();
    const std::vector<std::string> probe = {"--ro", ajtest::helper(""), "--", "/bin/sh", "-c",
                                            "echo p=${FROM_PROJECT-unset}"};
    auto before = jail.run(probe, o);
    EXPECT_EQ(before.status, 0) << describe(before);
    EXPECT_EQ(ajit::field(before.out, "p"), "unset") << describe(before);
    EXPECT_TRUE(ajtest::contains(before.err, "agentjail.toml is not used")) << describe(before);
    auto asked = jail.run({"trust"}, o);
    EXPECT_EQ(asked.status, 125) << describe(asked);
    EXPECT_TRUE(ajtest::contains(asked.err, "give -y")) << describe(asked);
    auto trust = jail.run({"trust", "-y"}, o);
    EXPECT_EQ(trust.status, 0) << describe(trust);
    EXPECT_TRUE(ajtest::contains(trust.out, "FROM_PROJECT")) << "the file is shown\n" << describe(trust);
    auto after = jail.run(probe, o);
    EXPECT_EQ(ajit::field(after.out, "p"), "yes") << describe(after);
    EXPECT_FALSE(ajtest::contains(after.err, "not used")) << describe(after);
    auto e = jail.run({"explain", "--", "/bin/true"}, o);
    EXPECT_TRUE(ajtest::contains(e.out, "chosen by the project's file, trusted as it is")) << describe(e);
    // Changed since: not used again, until trusted again.
    jail.ws_dir().write("agentjail.toml", "extends = \"default\"\n[environment]\nset = { FROM_PROJECT = \"changed\" }\n");
    auto changed = jail.run(probe, o);
    EXPECT_EQ(ajit::field(changed.out, "p"), "unset") << describe(changed);
    EXPECT_TRUE(ajtest::contains(changed.err, "agentjail.toml is not used")) << describe(changed);
    // -p always wins, and says nothing of the file.
    auto named = jail.run({"-p", "default", "--ro", ajtest::helper(""), "--", "/bin/true"}, o);
    EXPECT_FALSE(ajtest::contains(named.err, "not used")) << describe(named);
    // A project file that extends another file of the project: its trust would not
    // cover what the agent can change there, so it is refused. Control: extending a
    // built-in is trusted (above).
    jail.ws_dir().write("base.toml", "extends = \"default\"\n");
    jail.ws_dir().write("agentjail.toml", "extends = \"base.toml\"\n");
    auto chained = jail.run({"trust", "-y"}, o);
    EXPECT_EQ(chained.status, 125) << describe(chained);
    EXPECT_TRUE(ajtest::contains(chained.err, "a file its trust does not cover")) << describe(chained);
}

TEST_F(Sandbox, CExampleRunsACommandAndReturnsItsStatus) {
    std::string example = AJ_EXAMPLE_C;
    if (!ajtest::exists(example)) GTEST_SKIP() << "the C example " << example << " is not built";
    ajtest::RunOptions opts;
    opts.env.push_back("HOME=" + jail.home());
    opts.cwd = jail.ws();
    auto r = ajtest::run_with({example, "--", "sh", "-c", "exit 7"}, opts);
    jail.record(r);
    EXPECT_EQ(r.status, 7) << describe(r);
}

// The C API's limits and result record: aj_policy_set_limit with the policy file's
// spelling, aj_result_timed_out/aj_result_json after a wall-clock kill. Neither limit
// needs a cgroup (rlimit and the supervisor's clock), so this runs for every caller.
TEST_F(Sandbox, CExampleSetsLimitsAndPrintsTheResultRecord) {
    std::string example = AJ_EXAMPLE_C;
    if (!ajtest::exists(example)) GTEST_SKIP() << "the C example " << example << " is not built";
    ajtest::RunOptions opts;
    opts.env.push_back("HOME=" + jail.home());
    opts.cwd = jail.ws();
    // Control: without the limits the same command finishes on its own.
    auto free_run = ajtest::run_with({example, "--json", "--", "sh", "-c", "ulimit -n; sleep 0.2"}, opts);
    jail.record(free_run);
    ASSERT_EQ(free_run.status, 0) << describe(free_run);
    EXPECT_NE(ajtest::lines(free_run.out).front(), "64") << free_run.out;
    auto r = ajtest::run_with({example, "--limit", "nofile=64", "--limit", "timeout=1s", "--limit",
                               "kill_grace=1s", "--json", "--", "sh", "-c", "ulimit -n; exec sleep 30"},
                              opts);
    jail.record(r);
    // The example exits as agentjail does (aj_result_exit_status): 124 for a timeout.
    ASSERT_EQ(r.status, 124) << describe(r);
    auto ls = ajtest::lines(r.out);
    ASSERT_GE(ls.size(), 2u) << r.out;
    EXPECT_EQ(ls.front(), "64");
    auto j = nlohmann::json::parse(ls.back(), nullptr, false);
    ASSERT_TRUE(j.is_object()) << r.out;
    EXPECT_EQ(j["status"], "TO") << r.out;
    EXPECT_EQ(j["limits"]["nofile"], 64) << r.out;
    EXPECT_LT(j["wall_time_s"].get<double>(), 10.0) << r.out;
    auto bad = ajtest::run_with({example, "--limit", "memroy=1G", "--", "true"}, opts);
    EXPECT_EQ(bad.status, 125) << describe(bad);
    EXPECT_TRUE(ajtest::contains(bad.err, "did you mean 'memory'")) << bad.err;
}
