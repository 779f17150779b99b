// SPDX-License-Identifier: Apache-2.0
// Escape tests of advisories 5, 6 and 8 of issue 26 (docs/advisories.md):
//   ADV5  the sandbox lowering the next run in band (GHSA-m77w-p5jj-xmhg,
//         CVE-2026-42074, CVE-2025-59532): no workspace file, environment variable,
//         argument or working directory it controls widens a later run's policy
//   ADV6  namespace file handles (CVE-2026-43391): name_to_handle_at and
//         open_by_handle_at refused, host namespaces unreachable through /proc or fds
//   ADV8  the session bus and terminal multiplexers: systemd-run --user, busctl
//         --user, a D-Bus socket and a tmux socket in a bound /tmp fail inside
// One attack per test, each with a positive control.
#include "common.hpp"

#include "../integration/seccomp_support.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

using namespace ajesc;

namespace {

bool have(const std::string& tool) {
    return ajtest::run({"/bin/sh", "-c", "command -v " + tool + " >/dev/null"}).status == 0;
}

nlohmann::json explain(ajtest::Jail& jail, const std::vector<std::string>& args,
                       ajtest::RunOptions o = {}) {
    std::vector<std::string> a = {"explain", "--json"};
    a.insert(a.end(), args.begin(), args.end());
    auto r = jail.run(a, std::move(o));
    auto j = nlohmann::json::parse(r.out, nullptr, false);
    EXPECT_TRUE(j.is_object()) << describe(r);
    return j;
}

// What decides how open a run is: the policy and its layers, the namespaces, the
// network, the system-call filter, the environment, and every mount the sandbox can
// write or that shows a host path. (Read-only binds over protected names are left
// out: a planted file earns one, which only narrows.)
nlohmann::json isolation(const nlohmann::json& plan) {
    nlohmann::json out;
    for (const char* k :
         {"policy", "layers", "namespaces", "network", "seccomp", "env", "uid_map", "gid_map",
          "workspace", "workspace_mode", "hostname", "limits", "rlimits"})
        out[k] = plan.value(k, nlohmann::json());
    nlohmann::json writable = nlohmann::json::array();
    for (const auto& m : plan.value("mounts", nlohmann::json::array()))
        if (!m.value("read_only", true))
            writable.push_back({m.value("kind", ""), m.value("src", ""), m.value("dst", "")});
    out["writable"] = writable;
    return out;
}

// ---- ADV5 ------------------------------------------------------------------------

// A cloned repository (or an earlier run, where the names are not protected) brings
// agentjail policy files: none is read, so the plan is as open as without them.
TEST_F(Escape, ADV5_PolicyFilesInTheWorkspaceAreNotRead) {
    const std::vector<std::string> args = {"-C", jail.ws(), "--", "/bin/true"};
    const auto before = isolation(explain(jail, args));
    const std::string wide =
        "extends = \"default\"\n[filesystem]\nrw = [\"~\"]\n[network]\nmode = \"host\"\n"
        "[namespaces]\nnet = false\n[seccomp]\nnested_sandboxes = true\n";
    for (const char* rel :
         {"agentjail.toml", ".agentjail.toml", ".agentjail/policy.toml", ".agentjail/default.toml",
          ".config/agentjail/default.toml", "policies/default.toml"})
        jail.ws_dir().write(rel, wide);
    const auto after = isolation(explain(jail, args));
    EXPECT_EQ(after.dump(2), before.dump(2));
    auto r =
        jail.sh("echo routes=$(cat /proc/net/route | wc -l); touch ~/x; ls " + jail.home() + "/.ssh 2>&1; true");
    EXPECT_FALSE(ajtest::contains(r.out, "id_ed25519")) << describe(r);
    // What the planted files would have opened: the host's network (its routes) and
    // the home read-write. Neither is there.
    EXPECT_TRUE(ajtest::contains(r.out, "routes=1\n")) << describe(r);
    EXPECT_FALSE(ajtest::exists(jail.home() + "/x")) << "the run wrote the home: a planted policy was read";
    // Control: the file is a valid policy that does widen the plan when named.
    const auto named = isolation(
        explain(jail, {"-C", jail.ws(), "-p", jail.ws() + "/agentjail.toml", "--", "/bin/true"}));
    EXPECT_NE(named["network"].dump(), before["network"].dump());
    EXPECT_NE(named["writable"].dump(), before["writable"].dump());
}

// Variables the sandbox could leave for the caller's shell (.envrc is protected, but
// a user may source what a run wrote): none that agentjail would read lifts anything.
TEST_F(Escape, ADV5_EnvironmentVariablesDoNotWidenThePlan) {
    const std::vector<std::string> args = {"-C", jail.ws(), "--", "/bin/true"};
    const auto before = isolation(explain(jail, args));
    ajtest::TempDir cfg("aj-adv-cfg");
    const std::string wide =
        cfg.write("wide.toml", "extends = \"default\"\n[network]\nmode = \"host\"\n");
    ajtest::RunOptions o;
    o.env = {"AGENTJAIL_POLICY=" + wide,
             "AGENTJAIL_NET=host",
             "AGENTJAIL_OPTS=--net host --rw /",
             "AGENTJAIL_WORKSPACE_MODE=direct",
             "AGENTJAIL_NESTED_SANDBOXES=1",
             "AGENTJAIL_ALLOW_DEGRADED=1",
             "AGENTJAIL_CONFIG=" + wide,
             "AJ_POLICY=" + wide,
             "AGENTJAIL=" + wide,
             "IS_SANDBOX=1",
             "XDG_CONFIG_HOME=" + cfg.path(),
             "XDG_CONFIG_DIRS=" + cfg.path()};
    cfg.write("agentjail/default.toml", "extends = \"net-open\"\n");
    const auto after = isolation(explain(jail, args, o));
    EXPECT_EQ(after.dump(2), before.dump(2));
    // Control: the comparison sees a change in the environment that does matter.
    ajtest::TempDir other_home("aj-adv-home");
    ajtest::RunOptions h;
    h.env = {"HOME=" + other_home.path()};
    const auto moved = isolation(explain(jail, args, h));
    EXPECT_NE(moved.dump(), before.dump());
}

// Arguments after the command (which a harness may take from the model) are the
// command's: `--net host`, `--rw /`, `-p` never reach agentjail's parser.
TEST_F(Escape, ADV5_ArgumentsAfterTheCommandAreTheCommands) {
    auto r = jail.run(
        {"-C", jail.ws(), "/bin/sh", "-c",
         "echo args: \"$@\"; grep -c . /proc/net/route; touch /usr/adv 2>/dev/null; echo usr=$?",
         "sh", "--net", "host", "--rw", "/", "-p", "net-open", "--workspace-mode=direct"});
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_TRUE(
        ajtest::contains(r.out, "args: --net host --rw / -p net-open --workspace-mode=direct"))
        << r.out;
    EXPECT_TRUE(ajtest::contains(r.out, "\n1\n")) << "a route beyond the header line inside\n"
                                                  << r.out;
    EXPECT_NE(field(r.out, "usr"), "0") << r.out;
    // Control: the same words before the command do open the host's network.
    auto c = jail.run(
        {"--net", "host", "-C", jail.ws(), "--", "/bin/sh", "-c", "readlink /proc/self/ns/net"});
    EXPECT_EQ(ajtest::trim(c.out), ajesc::host_link("/proc/self/ns/net")) << describe(c);
}

// The caller's directory reached through a link an earlier run planted in the
// project (build -> ~): `-C .` there names the link's target, the home, which must
// not become the read-write workspace by that spelling.
TEST_F(Escape, ADV5_CwdThroughAPlantedLinkCannotMakeTheHomeTheWorkspace) {
    const std::string bashrc = jail.home_dir().write(".bashrc", "# the user's\n");
    const std::string build = jail.ws() + "/build";
    ASSERT_EQ(::symlink(jail.home().c_str(), build.c_str()), 0);
    ajtest::RunOptions o;
    o.cwd = build;
    o.env = {"PWD=" + build};  // as the user's shell sets it after `cd build`
    for (const std::vector<std::string>& flags :
         {std::vector<std::string>{"-C", "."}, std::vector<std::string>{}}) {
        auto r = jail.run(cat(flags, {"--", "/bin/sh", "-c", "echo planted >> .bashrc; pwd"}), o);
        EXPECT_EQ(r.status, 125) << (flags.empty() ? "no -C" : "-C .") << "\n" << describe(r);
        EXPECT_EQ(ajtest::read_file(bashrc), "# the user's\n")
            << (flags.empty() ? "no -C" : "-C .");
    }
    // Control: the home named as itself is accepted (the documented way), and the
    // project's real directory as well.
    ajtest::RunOptions in_ws;
    in_ws.cwd = jail.ws();
    in_ws.env = {"PWD=" + jail.ws()};
    auto c = jail.run({"-C", ".", "--", "/bin/sh", "-c", "pwd"}, in_ws);
    EXPECT_EQ(ajtest::trim(c.out), jail.ws()) << describe(c);
    auto h = jail.run({"-C", jail.home(), "--", "/bin/sh", "-c", "pwd"}, in_ws);
    EXPECT_EQ(ajtest::trim(h.out), jail.home()) << describe(h);
}

// The agent asking for a wider sandbox from inside: agentjail itself run in the
// sandbox, with the host's network, cannot build one (no namespaces inside).
TEST_F(Escape, ADV5_AgentjailInsideCannotOpenAWiderSandbox) {
    const std::string bin = ajtest::agentjail_bin();
    const std::string dir = bin.substr(0, bin.rfind('/'));
    auto r = jail.sh(bin + " --net host -C " + jail.ws() +
                         " -- /bin/sh -c 'readlink /proc/self/ns/net'; echo rc=$?",
                     {"--ro", dir});
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_EQ(field(r.out, "rc"), "125") << describe(r);
    EXPECT_FALSE(ajtest::contains(r.out, ajesc::host_link("/proc/self/ns/net"))) << describe(r);
    // Control: on the host the same command does give the host's network.
    auto c = jail.host_sh(bin + " --net host -C " + jail.ws() +
                          " -- /bin/sh -c 'readlink /proc/self/ns/net'");
    EXPECT_EQ(ajtest::trim(c.out), ajesc::host_link("/proc/self/ns/net")) << describe(c);
}

// What a run writes into the agent's own state (the one place outside the workspace
// it keeps between runs), spelled as policy and as agentjail's own files, does not
// change the next run's plan.
TEST_F(Escape, ADV5_AgentStateWrittenInsideDoesNotWidenTheNextPlan) {
    ajtest::TempDir state("aj-adv-state");
    ajtest::RunOptions o;
    o.env = {"XDG_STATE_HOME=" + state.path()};
    o.unset_env = {"XDG_CONFIG_HOME"};
    const std::vector<std::string> args = {"-C",     jail.ws(), "--policy",
                                           "claude", "--",      "/bin/true"};
    auto first = jail.run({"-C", jail.ws(), "--policy", "claude", "--", "/bin/true"}, o);
    ASSERT_EQ(first.status, 0) << describe(first);
    const auto before = isolation(explain(jail, args, o));
    auto w = jail.run(
        {"-C", jail.ws(), "--policy", "claude", "--", "/bin/sh", "-c",
         "s=\"$CLAUDE_CONFIG_DIR\"; w='extends = \"net-open\"'; "
         "for f in agentjail.toml .agentjail.toml policy.toml; do echo \"$w\" > \"$s/$f\"; done; "
         "echo \"$w\" > \"$s/../agentjail.toml\" 2>/dev/null; "
         "mkdir -p \"$s/.config/agentjail\" && echo \"$w\" > "
         "\"$s/.config/agentjail/default.toml\"; "
         "printf '[user]\\n\\tname = x\\n[core]\\n\\tsshCommand = touch /tmp/pwned\\n' > "
         "\"$s/agentjail-gitconfig\"; "
         "echo '{\"sandbox\":{\"enabled\":false}}' > \"$s/settings.local.json\"; echo WROTE"},
        o);
    ASSERT_TRUE(ajtest::contains(w.out, "WROTE")) << describe(w);
    const auto after = isolation(explain(jail, args, o));
    EXPECT_EQ(after.dump(2), before.dump(2));
    // Control: a change the plan does depend on (the network preset) shows.
    const auto wider = isolation(explain(
        jail, {"-C", jail.ws(), "--policy", "claude", "--net-preset", "open", "--", "/bin/true"},
        o));
    EXPECT_NE(wider["network"].dump(), before["network"].dump());
}

// ---- ADV6 ------------------------------------------------------------------------

// Namespace files have file handles too (nsfs): name_to_handle_at on
// /proc/self/ns/net and open_by_handle_at of an nsfs handle are the filter's to
// answer (EPERM, with a record), whatever the kernel would say.
TEST_F(Escape, ADV6_NamespaceFileHandlesAreRefused) {
    std::vector<ajsc::Refusal> want = {
        {"name_to_handle_at_nsfs", "EPERM", "name_to_handle_at", std::nullopt, true},
        {"open_by_handle_at_nsfs", "EPERM", "open_by_handle_at", std::nullopt, false},
    };
    std::cout << "[   NOTE   ] " << ajsc::check_refusals(jail, want);
}

// The same under the strict policy (a default-deny allow-list) and with nested
// sandboxes allowed (which lifts the namespace and mount rules, not this one).
TEST_F(Escape, ADV6_FileHandlesStayRefusedUnderStrictAndNestedSandboxes) {
    ajtest::TempDir cfg("aj-adv-nested");
    const std::string nested =
        cfg.write("nested.toml", "extends = \"default\"\n[seccomp]\nnested_sandboxes = true\n");
    const std::vector<std::string> names = {"call", "name_to_handle_at", "open_by_handle_at_badfd",
                                            "name_to_handle_at_nsfs", "open_by_handle_at_nsfs"};
    auto s = ajsc::run_in(jail, ajsc::Mode::strict, ajsc::probe(names));
    auto n = ajsc::run_in(jail, ajsc::Mode::default_policy, ajsc::probe(names), {"-p", nested});
    auto c = ajsc::run_in(jail, ajsc::Mode::minimal, ajsc::probe(names));
    ASSERT_EQ(s.run.status, 0) << ajsc::describe(s);
    ASSERT_EQ(n.run.status, 0) << ajsc::describe(n);
    for (size_t i = 1; i < names.size(); ++i) {
        EXPECT_EQ(ajsc::value_or(s.res, names[i]), "EPERM") << "strict: " << names[i] << "\n"
                                                            << s.run.out;
        EXPECT_EQ(ajsc::value_or(n.res, names[i]), "EPERM") << "nested: " << names[i] << "\n"
                                                            << n.run.out;
    }
    EXPECT_TRUE(n.logged("name_to_handle_at")) << n.log_text;
    // Control: without a filter the kernel answers the bad-fd open itself (EBADF).
    EXPECT_EQ(ajsc::value_or(c.res, "open_by_handle_at_badfd"), "EBADF") << c.run.out;
}

// Every namespace the command is in is the sandbox's own: none of /proc/*/ns/* inside
// names a namespace of the host's (the test process's), the host's processes are not
// in /proc, and setns on what is there is refused.
TEST_F(Escape, ADV6_HostNamespacesAreUnreachableThroughProc) {
    const std::vector<std::string> kinds = {"mnt", "net", "pid", "user", "ipc", "uts", "cgroup"};
    std::string script =
        "for p in /proc/[0-9]*; do for n in mnt net pid user ipc uts cgroup; do "
        "readlink $p/ns/$n; done; done 2>/dev/null | sort -u; "
        "nsenter -t 1 -n true 2>/dev/null; echo setns=$?";
    auto r = jail.sh(script);
    ASSERT_EQ(r.status, 0) << describe(r);
    for (const auto& k : kinds) {
        const std::string host_ns = ajesc::host_link("/proc/self/ns/" + k);
        ASSERT_FALSE(host_ns.empty()) << k;
        EXPECT_FALSE(ajtest::contains(r.out, host_ns))
            << "the host's " << k << " namespace is named inside\n"
            << r.out;
    }
    EXPECT_NE(field(r.out, "setns"), "0") << r.out;
    // Control: the same listing on the host names the test's own namespaces.
    auto c = jail.host_sh(
        "for n in mnt net pid user ipc uts cgroup; do readlink /proc/self/ns/$n; done");
    for (const auto& k : kinds)
        EXPECT_TRUE(ajtest::contains(c.out, ajesc::host_link("/proc/self/ns/" + k))) << k << "\n"
                                                                                     << c.out;
}

// Namespace descriptors a careless caller leaks into agentjail (an nsfs fd is what
// setns and an nsfs handle need) never reach the command.
TEST_F(Escape, ADV6_LeakedNamespaceDescriptorsDoNotReachTheCommand) {
    ajtest::RunOptions o;
    std::vector<int> fds;
    int target = 7;
    for (const char* n : {"net", "mnt", "user", "pid", "cgroup"}) {
        int fd = ::open((std::string("/proc/self/ns/") + n).c_str(), O_RDONLY);
        ASSERT_GE(fd, 0) << n;
        fds.push_back(fd);
        o.leak_fds.emplace_back(fd, target++);
    }
    auto r = jail.run(cat(jail.base(), {"--", helper("fdprobe")}), o);
    auto l = jail.sh("ls -l /proc/self/fd/ | grep -c 'net:\\|mnt:\\|user:\\|pid:\\|cgroup:'; true",
                     {}, o);
    // Control: the same probe on the host sees the leaked descriptors.
    auto c = ajtest::run_with(
        {"/bin/sh", "-c", "ls -l /proc/self/fd/ | grep -c 'net:\\|mnt:\\|user:'"}, o);
    for (int fd : fds) ::close(fd);
    EXPECT_EQ(r.status, 0) << "descriptors above 2 reached the command\n" << describe(r);
    EXPECT_TRUE(ajtest::contains(r.out, "extra 0")) << r.out;
    EXPECT_EQ(ajtest::trim(l.out), "0") << describe(l);
    EXPECT_NE(ajtest::trim(c.out), "0") << describe(c);
}

// ---- ADV8 ------------------------------------------------------------------------

// A tmux server of the caller's, in its default place (/tmp/tmux-UID/LABEL): with the
// host's /tmp bound into the sandbox, read-only or read-write, its socket would let
// the sandbox type into the user's shell (send-keys). The directory is hidden.
TEST_F(Escape, ADV8_TmuxSocketInABoundTmpIsUnreachable) {
    if (!have("tmux"))
        GTEST_SKIP() << "tmux is not installed (scripts/setup.sh --bench installs it)";
    const std::string label = unique_name("ajadv");
    ajtest::TempDir marks("aj-adv-tmux");
    ajtest::RunOptions host;
    host.unset_env = {"TMUX", "TMUX_TMPDIR", "TMUX_PANE"};
    const std::string dir = "/tmp/tmux-" + std::to_string(::getuid());
    const std::string sock = dir + "/" + label;
    // The server, its socket (tmux leaves it behind) and the directory if tmux made
    // it for this test go at the end.
    struct Server {
        std::string label, sock, dir;
        bool made_dir;
        ajtest::RunOptions o;
        ~Server() {
            ajtest::run_with({"tmux", "-L", label, "kill-server"}, o);
            ::unlink(sock.c_str());
            if (made_dir) ::rmdir(dir.c_str());
        }
    } server{label, sock, dir, !ajtest::exists(dir), host};
    auto s =
        ajtest::run_with({"tmux", "-L", label, "new-session", "-d", "-s", "adv", "/bin/sh"}, host);
    ASSERT_EQ(s.status, 0) << describe(s);
    ASSERT_TRUE(ajtest::exists(sock)) << "tmux put its socket elsewhere than " << sock;
    const std::string mark = marks.path() + "/typed";
    for (const char* how : {"--ro", "--rw"}) {
        auto r = jail.run(cat(jail.base(), {how, "/tmp", "--", "/bin/sh", "-c",
                                            "tmux -L " + label + " ls; echo ls=$?; tmux -L " +
                                                label + " send-keys -t adv 'touch " + mark +
                                                "' Enter; echo keys=$?; "
                                                "ls -a /tmp/tmux-$(id -u) 2>&1 | head -3"}),
                          host);
        ASSERT_EQ(r.status, 0) << how << "\n" << describe(r);
        EXPECT_NE(field(r.out, "ls"), "0") << how << "\n" << describe(r);
        EXPECT_NE(field(r.out, "keys"), "0") << how << "\n" << describe(r);
        EXPECT_FALSE(ajtest::contains(r.out, label)) << how << ": the socket is listed\n" << r.out;
    }
    ajtest::sleep_ms(300);
    EXPECT_FALSE(ajtest::exists(mark)) << "keys typed from the sandbox ran in the user's tmux";
    // Control: the same client on the host types into the session.
    auto c = ajtest::run_with(
        {"tmux", "-L", label, "send-keys", "-t", "adv", "touch " + mark, "Enter"}, host);
    EXPECT_EQ(c.status, 0) << describe(c);
    EXPECT_TRUE(ajtest::wait_for_file(mark, 5000))
        << "control: send-keys does not reach the session";
}

// A private session bus of the test's own, with its socket where dbus-launch and
// libdbus put one (/tmp/dbus-XXXXXXXX). Stopped (SIGKILL by the Child) at the end.
struct SessionBus {
    std::string address;
    std::string socket;  // the socket's file, removed at the end ("" when abstract)
    std::unique_ptr<ajtest::Child> daemon;
    ~SessionBus() {
        daemon.reset();
        if (!socket.empty()) ::unlink(socket.c_str());
    }
    explicit SessionBus(const std::string& listen) : address(listen) {
        if (listen.rfind("unix:path=", 0) == 0) socket = listen.substr(10);
        ajtest::RunOptions o;
        o.timeout_ms = 120000;
        daemon = std::make_unique<ajtest::Child>(
            std::vector<std::string>{"dbus-daemon", "--session", "--address=" + listen, "--nofork",
                                     "--nopidfile"},
            o);
    }
    bool up() const {
        for (int i = 0; i < 200; ++i) {
            auto r = ajtest::run({"busctl", "--address=" + address, "call", "org.freedesktop.DBus",
                                  "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetId"});
            if (r.status == 0) return true;
            ajtest::sleep_ms(20);
        }
        return false;
    }
};

// busctl --user with the caller's session bus named explicitly (-e), its socket in
// a bound /tmp: the socket is hidden, so the bus (and what it starts on the host by
// activation) is out of reach.
TEST_F(Escape, ADV8_SessionBusSocketInABoundTmpIsUnreachable) {
    if (!have("dbus-daemon") || !have("busctl"))
        GTEST_SKIP() << "dbus-daemon or busctl is not installed";
    const std::string path = "/tmp/dbus-" + unique_name("ajadv");
    SessionBus bus("unix:path=" + path);
    ASSERT_TRUE(bus.up()) << "the test's session bus did not start";
    const std::string env = "DBUS_SESSION_BUS_ADDRESS=" + bus.address;
    for (const char* how : {"--ro", "--rw"}) {
        auto r = jail.run(
            cat(jail.base(), {how, "/tmp", "-e", env, "--", "/bin/sh", "-c",
                              "busctl --user list 2>&1 | head -3; echo list=$?; "
                              "busctl --user call org.freedesktop.DBus /org/freedesktop/DBus "
                              "org.freedesktop.DBus GetId; echo call=$?"}));
        ASSERT_EQ(r.status, 0) << how << "\n" << describe(r);
        EXPECT_NE(field(r.out, "call"), "0") << how << "\n" << describe(r);
        EXPECT_FALSE(ajtest::contains(r.out, "org.freedesktop.DBus ")) << how << "\n" << r.out;
    }
    // Control: the same call on the host reaches the bus.
    ajtest::RunOptions o;
    o.env = {env};
    auto c = ajtest::run_with({"busctl", "--user", "call", "org.freedesktop.DBus",
                               "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetId"},
                              o);
    EXPECT_EQ(c.status, 0) << describe(c);
}

// systemd-run --user (a transient unit of the user's manager runs outside any
// sandbox) fails to reach a bus at all, by the environment or the bound /tmp.
TEST_F(Escape, ADV8_SystemdRunUserCannotReachABus) {
    if (!have("dbus-daemon") || !have("busctl") || !have("systemd-run"))
        GTEST_SKIP() << "dbus-daemon, busctl or systemd-run is not installed";
    const std::string path = "/tmp/dbus-" + unique_name("ajadv");
    SessionBus bus("unix:path=" + path);
    ASSERT_TRUE(bus.up()) << "the test's session bus did not start";
    const std::string env = "DBUS_SESSION_BUS_ADDRESS=" + bus.address;
    auto r = jail.run(
        cat(jail.base(), {"--ro", "/tmp", "-e", env, "--", "/bin/sh", "-c",
                          "systemd-run --user --pipe --quiet /bin/true 2>&1; echo rc=$?"}));
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_NE(field(r.out, "rc"), "0") << describe(r);
    EXPECT_TRUE(ajtest::contains(r.out, "Failed to connect to bus")) << describe(r);
    // Control: on the host the same address is a bus that answers.
    ajtest::RunOptions o;
    o.env = {env};
    auto c = ajtest::run_with({"busctl", "--user", "call", "org.freedesktop.DBus",
                               "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetId"},
                              o);
    EXPECT_EQ(c.status, 0) << describe(c);
    // And the probe itself, on the host, gets through to that bus (it fails later, for
    // want of a systemd there, but not with the sandbox's "Failed to connect to bus").
    auto h = ajtest::run_with({"/bin/sh", "-c", "systemd-run --user --pipe --quiet /bin/true 2>&1"}, o);
    EXPECT_FALSE(ajtest::contains(h.out, "Failed to connect to bus")) << describe(h);
}

// A session bus on an abstract socket (no file to hide): the sandbox's own network
// namespace has its own abstract names, so it is unreachable even when named.
TEST_F(Escape, ADV8_AbstractSessionBusIsUnreachable) {
    if (!have("dbus-daemon") || !have("busctl"))
        GTEST_SKIP() << "dbus-daemon or busctl is not installed";
    SessionBus bus("unix:abstract=/tmp/dbus-" + unique_name("ajadv"));
    ASSERT_TRUE(bus.up()) << "the test's session bus did not start";
    const std::string env = "DBUS_SESSION_BUS_ADDRESS=" + bus.address;
    auto r =
        jail.run(cat(jail.base(), {"--ro", "/tmp", "-e", env, "--", "/bin/sh", "-c",
                                   "busctl --user call org.freedesktop.DBus /org/freedesktop/DBus "
                                   "org.freedesktop.DBus GetId 2>&1; echo call=$?"}));
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_NE(field(r.out, "call"), "0") << describe(r);
    ajtest::RunOptions o;
    o.env = {env};
    auto c = ajtest::run_with({"busctl", "--user", "call", "org.freedesktop.DBus",
                               "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetId"},
                              o);
    EXPECT_EQ(c.status, 0) << describe(c);
}

}  // namespace
