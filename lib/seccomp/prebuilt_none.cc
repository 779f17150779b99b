// SPDX-License-Identifier: Apache-2.0
// No prebuilt filters: the default for a program that does not link the generated
// prebuilt_filters.cc (whose strong definition replaces this weak one).
#include "seccomp/internal.hpp"

namespace agentjail::seccomp::detail {

// Weak and alone in its file: the archive member is pulled in only where nothing
// else defines the function, and the compiler cannot inline it into its callers.
__attribute__((weak)) std::span<const Prebuilt> prebuilt_filters() { return {}; }

}  // namespace agentjail::seccomp::detail
