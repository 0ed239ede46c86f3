#include "cuda/got_patch.h"

#include <dlfcn.h>
#include <elf.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>

namespace warpscope::cuda {

namespace {

#if defined(__x86_64__)
constexpr uint32_t kJumpSlot = R_X86_64_JUMP_SLOT;
constexpr uint32_t kGlobDat = R_X86_64_GLOB_DAT;
#elif defined(__aarch64__)
constexpr uint32_t kJumpSlot = R_AARCH64_JUMP_SLOT;
constexpr uint32_t kGlobDat = R_AARCH64_GLOB_DAT;
#else
#error "GotPatcher knows x86-64 and aarch64 relocations only"
#endif

struct VisitContext {
  GotPatcher* self;
  GotPatchResult* result;
  bool first = true;  // the pass's first object: decides whether to look at all
};

// The dynamic loader rewrites most address tags of the dynamic section to
// run-time addresses; where it did not (the value is below the load base),
// the base is added.
uintptr_t Address(uintptr_t base, ElfW(Addr) value) {
  return value < base ? base + value : static_cast<uintptr_t>(value);
}

}  // namespace

GotPatcher::GotPatcher(const GotReplacement* replacements, size_t count, const uintptr_t* skip_base,
                       size_t skip_count) noexcept
    : replacements_(replacements), count_(count) {
  for (size_t i = 0; i < skip_count && i < 4; ++i) skip_[skip_count_++] = skip_base[i];
}

uintptr_t GotPatcher::BaseOf(const void* address) noexcept {
  Dl_info info{};
  if (dladdr(address, &info) == 0) return 0;
  return reinterpret_cast<uintptr_t>(info.dli_fbase);
}

GotPatchResult GotPatcher::PatchNewObjects() noexcept {
  GotPatchResult result;
  VisitContext context{this, &result};
  dl_iterate_phdr(&GotPatcher::Visit, &context);
  return result;
}

int GotPatcher::Visit(dl_phdr_info* info, size_t size, void* data) noexcept {
  auto* context = static_cast<VisitContext*>(data);
  GotPatcher* self = context->self;
  if (context->first && size >= offsetof(dl_phdr_info, dlpi_adds) + sizeof(info->dlpi_adds)) {
    context->first = false;
    // Nothing loaded since the last full pass: stop at the first object.
    if (self->last_adds_ == info->dlpi_adds && self->done_count_ > 0) return 1;
    self->last_adds_ = info->dlpi_adds;
  }
  context->result->objects_seen++;
  self->PatchObject(*info, context->result);
  return 0;
}

void GotPatcher::PatchObject(const dl_phdr_info& info, GotPatchResult* result) noexcept {
  const uintptr_t base = info.dlpi_addr;
  // The main program has an empty name and may import CUPTI too: it is patched.
  const char* name = info.dlpi_name != nullptr ? info.dlpi_name : "";
  for (size_t i = 0; i < skip_count_; ++i) {
    if (skip_[i] == base) return;
  }
  for (size_t i = 0; i < done_count_; ++i) {
    if (done_[i].base == base && done_[i].phdr == info.dlpi_phdr) return;
  }
  if (std::strstr(name, "linux-vdso") != nullptr || std::strstr(name, "ld-linux") != nullptr) {
    return;
  }
  const ElfW(Dyn)* dynamic = nullptr;
  uintptr_t relro_start = 0, relro_end = 0;
  uintptr_t low = UINTPTR_MAX, high = 0;
  for (ElfW(Half) i = 0; i < info.dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info.dlpi_phdr[i];
    if (ph.p_type == PT_DYNAMIC) dynamic = reinterpret_cast<const ElfW(Dyn)*>(base + ph.p_vaddr);
    if (ph.p_type == PT_GNU_RELRO) {
      relro_start = base + ph.p_vaddr;
      relro_end = relro_start + ph.p_memsz;
    }
    if (ph.p_type == PT_LOAD) {
      if (base + ph.p_vaddr < low) low = base + ph.p_vaddr;
      if (base + ph.p_vaddr + ph.p_memsz > high) high = base + ph.p_vaddr + ph.p_memsz;
    }
  }
  if (done_count_ < kMaxDone) done_[done_count_++] = Done{base, info.dlpi_phdr};
  if (dynamic == nullptr) return;
  const ElfW(Sym)* symtab = nullptr;
  const char* strtab = nullptr;
  size_t strsz = 0;
  const ElfW(Rela)* jmprel = nullptr;
  size_t jmprel_size = 0;
  const ElfW(Rela)* rela = nullptr;
  size_t rela_size = 0;
  bool pltrel_is_rela = true;
  for (const ElfW(Dyn)* d = dynamic; d->d_tag != DT_NULL; ++d) {
    switch (d->d_tag) {
      case DT_SYMTAB: symtab = reinterpret_cast<const ElfW(Sym)*>(Address(base, d->d_un.d_ptr)); break;
      case DT_STRTAB: strtab = reinterpret_cast<const char*>(Address(base, d->d_un.d_ptr)); break;
      case DT_STRSZ: strsz = d->d_un.d_val; break;
      case DT_JMPREL: jmprel = reinterpret_cast<const ElfW(Rela)*>(Address(base, d->d_un.d_ptr)); break;
      case DT_PLTRELSZ: jmprel_size = d->d_un.d_val; break;
      case DT_PLTREL: pltrel_is_rela = d->d_un.d_val == DT_RELA; break;
      case DT_RELA: rela = reinterpret_cast<const ElfW(Rela)*>(Address(base, d->d_un.d_ptr)); break;
      case DT_RELASZ: rela_size = d->d_un.d_val; break;
      default: break;
    }
  }
  if (symtab == nullptr || strtab == nullptr || !pltrel_is_rela) return;
  const long page = sysconf(_SC_PAGESIZE);
  auto visit = [&](const ElfW(Rela)* table, size_t bytes) {
    if (table == nullptr) return;
    for (size_t k = 0; k < bytes / sizeof(ElfW(Rela)); ++k) {
      const ElfW(Rela)& r = table[k];
      const uint32_t type = ELF64_R_TYPE(r.r_info);
      if (type != kJumpSlot && type != kGlobDat) continue;
      const uint32_t sym = ELF64_R_SYM(r.r_info);
      if (sym == 0) continue;
      const uint32_t name_offset = symtab[sym].st_name;
      if (strsz != 0 && name_offset >= strsz) continue;
      const char* symbol = strtab + name_offset;
      if (symbol[0] != 'c') continue;  // every name we replace starts with "cupti"
      for (size_t j = 0; j < count_; ++j) {
        if (std::strcmp(symbol, replacements_[j].name) != 0) continue;
        auto* slot = reinterpret_cast<void**>(base + r.r_offset);
        void* current = __atomic_load_n(slot, __ATOMIC_RELAXED);
        if (current == replacements_[j].replacement) break;
        const auto at = reinterpret_cast<uintptr_t>(current);
        const bool own_stub = at >= low && at < high;  // lazy binding not done yet
        if (!own_stub && current != replacements_[j].original) {
          result->slots_foreign++;
          break;
        }
        const uintptr_t page_start = reinterpret_cast<uintptr_t>(slot) & ~static_cast<uintptr_t>(page - 1);
        const bool in_relro = reinterpret_cast<uintptr_t>(slot) >= relro_start &&
                              reinterpret_cast<uintptr_t>(slot) < relro_end;
        if (in_relro && mprotect(reinterpret_cast<void*>(page_start), static_cast<size_t>(page),
                                 PROT_READ | PROT_WRITE) != 0) {
          result->slots_failed++;
          break;
        }
        __atomic_store_n(slot, replacements_[j].replacement, __ATOMIC_RELEASE);
        if (in_relro) mprotect(reinterpret_cast<void*>(page_start), static_cast<size_t>(page), PROT_READ);
        result->slots_patched++;
        break;
      }
    }
  };
  visit(jmprel, jmprel_size);
  visit(rela, rela_size);
}

}  // namespace warpscope::cuda
