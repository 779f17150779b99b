// SPDX-License-Identifier: Apache-2.0
// Escape tests, Landlock as the second wall behind the mounts (docs/landlock.md,
// issue 29): what the mounts leave writable but the plan does not is refused by
// Landlock, the layer is proven in force, named in the result, and what the mounts
// allow still works. Each attack has its control: the same probe with --landlock off.
#include "common.hpp"

#include "sys/syscalls.hpp"

#include <nlohmann/json.hpp>

#include <cerrno>

using namespace ajesc;

namespace {

#define REQUIRE_LANDLOCK(abi)                                                                     \
    if (agentjail::sys::landlock_abi() < (abi))                                                 \
    GTEST_SKIP() << "this kernel's Landlock ABI is below " << (abi)                             \
                 << " (docs/landlock.md): the layer is not applied here, so there is nothing " \
                    "to test"

std::string trysys(const std::string& args) { return helper("trysys") + " " + args; }

}  // namespace

// LL01: /dev is a writable tmpfs (its devices are bound into it), but the plan grants
// no new name there: Landlock refuses one.
TEST_F(Escape, LL01_ANewNameInDevIsRefused) {
    REQUIRE_LANDLOCK(2);
    const std::string probe = trysys("mkdir /dev/aj-ll01") + "; echo rc=$?";
    auto r = jail.sh(probe);
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_EQ(field(r.out, "rc"), std::to_string(EACCES)) << r.out;
    auto c = jail.control_sh(probe, {"--landlock", "off"});
    ASSERT_EQ(c.status, 0) << describe(c);
    EXPECT_EQ(field(c.out, "rc"), "0") << "control: without Landlock the mount allows it\n" << c.out;
}

// LL02: a device node is refused by Landlock (EACCES), where the missing CAP_MKNOD
// alone refuses it with EPERM: the distinction the launch's probe relies on.
TEST_F(Escape, LL02_DeviceNodesAreRefusedByLandlockItself) {
    REQUIRE_LANDLOCK(2);
    const std::string probe =
        trysys("mknod /tmp/aj-ll02") + "; echo tmp=$?; " + trysys("mknod ./aj-ll02") + "; echo ws=$?";
    auto r = jail.sh(probe);
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_EQ(field(r.out, "tmp"), std::to_string(EACCES)) << r.out;
    EXPECT_EQ(field(r.out, "ws"), std::to_string(EACCES)) << r.out;
    auto c = jail.control_sh(probe, {"--landlock", "off"});
    ASSERT_EQ(c.status, 0) << describe(c);
    EXPECT_EQ(field(c.out, "tmp"), std::to_string(EPERM)) << c.out;
    EXPECT_EQ(field(c.out, "ws"), std::to_string(EPERM)) << c.out;
}

// LL03: with ABI 6 the command's processes cannot signal a process outside their
// domain: the sandbox's init, which the pid namespace alone lets them reach.
TEST_F(Escape, LL03_TheInitCannotBeSignalled) {
    REQUIRE_LANDLOCK(6);
    const std::string probe = trysys("kill 1 0") + "; echo rc=$?; sh -c 'kill -0 $$ && echo self=ok'";
    auto r = jail.sh(probe);
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_EQ(field(r.out, "rc"), std::to_string(EPERM)) << r.out;
    EXPECT_EQ(field(r.out, "self"), "ok") << "a process of the domain is still reachable\n" << r.out;
    auto c = jail.control_sh(probe, {"--landlock", "off"});
    ASSERT_EQ(c.status, 0) << describe(c);
    EXPECT_EQ(field(c.out, "rc"), "0") << "control: without Landlock the init is reachable\n" << c.out;
}

// LL04: the result says the layer is in force, and says nothing of it when it is off;
// `required` runs here, where the kernel has it.
TEST_F(Escape, LL04_TheResultNamesTheLayer) {
    REQUIRE_LANDLOCK(2);
    ajtest::TempDir dir("aj-ll04");
    for (const std::string mode : {"best-effort", "required", "off"}) {
        SCOPED_TRACE(mode);
        const std::string record = dir.path() + "/" + mode + ".json";
        auto r = jail.run(cat(jail.base(), {"--landlock", mode, "--result-file", record, "--", "true"}));
        ASSERT_EQ(r.status, 0) << describe(r);
        auto j = nlohmann::json::parse(ajtest::read_file(record), nullptr, false);
        ASSERT_FALSE(j.is_discarded()) << ajtest::read_file(record);
        const auto& active = j["layers"]["active"];
        const bool has = std::find(active.begin(), active.end(), "landlock") != active.end();
        EXPECT_EQ(has, mode != "off") << j["layers"].dump();
        EXPECT_TRUE(j["layers"]["degraded"].empty()) << j["layers"].dump();
    }
}

// LL05: a policy that allows nested sandboxes cannot have Landlock (a sandbox inside
// needs mount(2)): `required` refuses it before anything runs; best-effort says so.
TEST_F(Escape, LL05_RequiredLandlockWithNestedSandboxesIsRefused) {
    REQUIRE_LANDLOCK(2);
    auto r = jail.run(cat(jail.base(), {"-p", "minimal", "--landlock", "required", "--", "true"}));
    EXPECT_EQ(r.status, 125) << describe(r);
    EXPECT_TRUE(ajtest::contains(r.err, "Landlock is required (command line")) << r.err;
    EXPECT_TRUE(ajtest::contains(r.err, "mount(2)")) << r.err;
    auto e = jail.run(cat({"explain"}, cat(jail.base(), {"-p", "minimal", "--", "true"})));
    ASSERT_EQ(e.status, 0) << describe(e);
    EXPECT_TRUE(ajtest::contains(e.out, "landlock: off: the policy allows nested sandboxes")) << e.out;
}

// LL06: what the mounts allow still works under the layer: git's renames and links
// across directories, a FIFO and a socket in /tmp, truncation, a shm segment.
TEST_F(Escape, LL06_WorkInTheWorkspaceStillWorks) {
    REQUIRE_LANDLOCK(2);
    auto r = jail.sh(
        "set -e; mkdir -p a b; echo x > a/f; mv a/f b/f; ln b/f a/g; truncate -s 0 b/f; "
        "git init -q repo && cd repo && echo y > y && git add y && "
        "git -c user.name=t -c user.email=t@t commit -qm y && git mv y z && cd ..; "
        "mkfifo /tmp/fifo; rm /tmp/fifo; echo s > /dev/shm/seg; rm /dev/shm/seg; "
        "echo n > /dev/null; echo all=ok");
    ASSERT_EQ(r.status, 0) << describe(r);
    EXPECT_EQ(field(r.out, "all"), "ok") << r.out;
}
