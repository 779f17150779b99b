// SPDX-License-Identifier: Apache-2.0
// Builds the C API into the test binaries, which link the static core but not
// the shared library: the C API tests then call the same aj_* code that
// libagentjail.so exports (the packaging tier tests the shared library itself).
#include "capi/capi.cc"
#include "capi/spawn.cc"
