// SPDX-License-Identifier: Apache-2.0
// Doctor checks of the workspace modes (lib/doctor/workspace.cc).
#pragma once

#include "doctor/doctor.hpp"

namespace agentjail::doctor {

// What direct mode's hidden and protected names are worth on this kernel, tried.
Check check_direct_mode();
// Whether overlayfs mounts in a user namespace (overlay mode), tried.
Check check_overlay();
// /dev/fuse, which direct mode's view (--view fuse) is served through.
Check check_fuse();

}  // namespace agentjail::doctor
