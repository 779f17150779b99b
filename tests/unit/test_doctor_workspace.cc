// SPDX-License-Identifier: Apache-2.0
// The doctor's workspace checks: what direct mode guarantees on this kernel (tried
// with a real mount namespace and a real rename), and whether overlay mode can work.
#include "doctor/workspace.hpp"

#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

using agentjail::doctor::Check;

TEST(DoctorWorkspace, DirectModeSaysWhatHoldsAndNamesTheStrongModes) {
    Check c = agentjail::doctor::check_direct_mode();
    EXPECT_EQ(c.name, "direct mode masks");
    ASSERT_FALSE(c.detail.empty());
    if (c.status != Check::Status::ok) {
        // A kernel that detaches (every Linux since 3.18) or a host where it could not be tried.
        EXPECT_NE(c.fix.find("--workspace-mode clone or overlay"), std::string::npos) << c.fix;
    }
    if (c.detail.find("drops a mask") != std::string::npos) {
        EXPECT_NE(c.detail.find("re-applies"), std::string::npos);
        EXPECT_NE(c.detail.find("temporary file"), std::string::npos);
    }
}

TEST(DoctorWorkspace, OverlayProbeAnswers) {
    Check c = agentjail::doctor::check_overlay();
    EXPECT_EQ(c.name, "unprivileged overlayfs");
    ASSERT_FALSE(c.detail.empty());
    if (c.status != Check::Status::ok) {
        EXPECT_FALSE(c.fix.empty());
    }
}

// The FUSE check says what a direct run through the view (the default) finds: ok
// exactly when /dev/fuse opens here, and a failure with a fix otherwise (naming the
// mounts view, which does not need it).
TEST(DoctorWorkspace, FuseVerdictIsWhatTheViewFinds) {
    Check c = agentjail::doctor::check_fuse();
    EXPECT_EQ(c.name, "FUSE (direct mode's view)");
    const int fd = ::open("/dev/fuse", O_RDWR | O_CLOEXEC);
    const bool opens = fd >= 0;
    if (fd >= 0) ::close(fd);
    EXPECT_EQ(c.status == Check::Status::ok, opens) << c.detail;
    if (!opens) {
        EXPECT_EQ(c.status, Check::Status::fail);
        EXPECT_NE(c.fix.find("--view mounts"), std::string::npos) << c.fix;
    }
}
