// SPDX-License-Identifier: Apache-2.0
#include "util/memory.hpp"

#include <elf.h>
#include <link.h>
#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>

namespace agentjail::util {

namespace {

// Page-aligned inward: a partial page at either end may share a written page.
void drop(std::uintptr_t begin, std::uintptr_t end, std::uintptr_t page) {
    begin = (begin + page - 1) & ~(page - 1);
    end &= ~(page - 1);
    if (end > begin) (void)::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

int drop_clean_segments(dl_phdr_info* info, std::size_t, void* data) {
    const auto page = *static_cast<std::uintptr_t*>(data);
    // The first object is the program itself; its shared libraries (libc) are the
    // system's and stay as they are.
    std::uintptr_t relro_begin = 0, relro_end = 0;
    for (int i = 0; i < info->dlpi_phnum; ++i) {
        const ElfW(Phdr)& ph = info->dlpi_phdr[i];
        if (ph.p_type == PT_GNU_RELRO) {
            relro_begin = info->dlpi_addr + ph.p_vaddr;
            relro_end = relro_begin + ph.p_memsz;
        }
    }
    for (int i = 0; i < info->dlpi_phnum; ++i) {
        const ElfW(Phdr)& ph = info->dlpi_phdr[i];
        // Only segments mapped without write permission and fully backed by the file
        // (no .bss): their pages are the file's bytes, unless relocated (RELRO).
        if (ph.p_type != PT_LOAD || (ph.p_flags & PF_W) || ph.p_memsz != ph.p_filesz) continue;
        std::uintptr_t b = info->dlpi_addr + ph.p_vaddr, e = b + ph.p_memsz;
        if (relro_end > relro_begin && relro_begin < e && b < relro_end) {
            // Keep the relocated part: drop what lies before and after it.
            drop(b, relro_begin < b ? b : relro_begin, page);
            drop(relro_end > e ? e : relro_end, e, page);
            continue;
        }
        drop(b, e, page);
    }
    return 1;  // the program only
}

}  // namespace

void release_startup_memory() noexcept {
    ::malloc_trim(0);
    auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
    ::dl_iterate_phdr(drop_clean_segments, &page);
}

}  // namespace agentjail::util
