// SPDX-License-Identifier: Apache-2.0
// Builds the C API into the unit-test binary, which links the static core but not
// the shared library: test_capi.cc then calls the same aj_* code that
// libagentjail.so exports (the packaging tier tests the shared library itself).
#include "../../lib/capi/capi.cc"
