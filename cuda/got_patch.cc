#include "cuda/got_patch.h"

#include <dlfcn.h>
#include <elf.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <new>

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

struct CollectContext {
  GotPatcher* self;
  GotPatchResult* result;
  bool first = true;       // the pass's first object: decides whether to look at all
  bool unchanged = false;  // nothing loaded since the last complete pass
  bool full = false;       // the batch filled up: another pass follows
  unsigned long long adds = 0;
};

struct HeldContext {
  GotPatcher* self;
  GotPatchResult* result;
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

bool GotPatcher::IsDone(uintptr_t base, const void* phdr) const noexcept {
  for (size_t i = 0; i < skip_count_; ++i) {
    if (skip_[i] == base) return true;
  }
  for (size_t i = 0; i < done_count_; ++i) {
    if (done_[i].base == base && done_[i].phdr == phdr) return true;
  }
  return false;
}

void GotPatcher::MarkDone(uintptr_t base, const void* phdr) noexcept {
  if (done_count_ < kMaxDone) done_[done_count_++] = Done{base, phdr};
}

GotPatchResult GotPatcher::PatchNewObjects() noexcept {
  GotPatchResult result;
  if (pending_ == nullptr) {
    pending_ = new (std::nothrow) Pending[kBatch];
    if (pending_ == nullptr) return result;
  }
  // Each pass: the new objects' names under the list lock; a hold on each
  // outside it (dlopen must not be called from dl_iterate_phdr's callback,
  // and waits there for a dlopen in progress to finish); the held objects
  // patched; the holds dropped.
  for (int pass = 0; pass < 256; ++pass) {
    CollectContext collect{this, &result};
    pending_count_ = 0;
    dl_iterate_phdr(&GotPatcher::Collect, &collect);
    if (collect.unchanged) break;
    for (size_t i = 0; i < pending_count_; ++i) {
      Pending& p = pending_[i];
      if (p.name[0] == '\0') continue;  // the main program
      p.handle = dlopen(p.name, RTLD_LAZY | RTLD_NOLOAD);
      link_map* map = nullptr;
      if (p.handle != nullptr && (dlinfo(p.handle, RTLD_DI_LINKMAP, &map) != 0 || map == nullptr ||
                                  static_cast<uintptr_t>(map->l_addr) != p.base)) {
        dlclose(p.handle);
        p.handle = nullptr;
      }
      if (p.handle == nullptr) {
        // Unloaded meanwhile, or its dlopen failed: nothing to patch.
        MarkDone(p.base, p.phdr);
        result.objects_gone++;
      }
    }
    HeldContext held{this, &result};
    dl_iterate_phdr(&GotPatcher::PatchHeld, &held);
    for (size_t i = 0; i < pending_count_; ++i) {
      if (pending_[i].handle != nullptr) dlclose(pending_[i].handle);
    }
    if (!collect.full) {
      last_adds_ = collect.adds;  // only a complete pass may skip the next one
      break;
    }
  }
  pending_count_ = 0;
  return result;
}

int GotPatcher::Collect(dl_phdr_info* info, size_t size, void* data) noexcept {
  auto* context = static_cast<CollectContext*>(data);
  GotPatcher* self = context->self;
  if (context->first) {
    context->first = false;
    if (size >= offsetof(dl_phdr_info, dlpi_adds) + sizeof(info->dlpi_adds)) {
      // Nothing loaded since the last complete pass: stop at the first object.
      if (self->last_adds_ == info->dlpi_adds && self->done_count_ > 0) {
        context->unchanged = true;
        return 1;
      }
      context->adds = info->dlpi_adds;
      // An object was unloaded since: another (or the same library again)
      // may now sit at its base with the same headers, so every object is
      // looked at again (patched slots are recognised and left as they are).
      if (self->last_subs_ != info->dlpi_subs) {
        self->last_subs_ = info->dlpi_subs;
        self->done_count_ = 0;
      }
    }
  }
  context->result->objects_seen++;
  const uintptr_t base = info->dlpi_addr;
  if (self->IsDone(base, info->dlpi_phdr)) return 0;
  const char* name = info->dlpi_name != nullptr ? info->dlpi_name : "";
  const size_t length = std::strlen(name);
  if (std::strstr(name, "linux-vdso") != nullptr || std::strstr(name, "ld-linux") != nullptr ||
      length >= kNameBytes) {
    // Not ours to patch, or a name no dlopen could take: left alone.
    self->MarkDone(base, info->dlpi_phdr);
    return 0;
  }
  if (self->pending_count_ == kBatch) {
    context->full = true;
    return 1;
  }
  Pending& p = self->pending_[self->pending_count_++];
  p.base = base;
  p.phdr = info->dlpi_phdr;
  p.handle = nullptr;
  std::memcpy(p.name, name, length + 1);
  return 0;
}

int GotPatcher::PatchHeld(dl_phdr_info* info, size_t, void* data) noexcept {
  auto* context = static_cast<HeldContext*>(data);
  GotPatcher* self = context->self;
  for (size_t i = 0; i < self->pending_count_; ++i) {
    const Pending& p = self->pending_[i];
    if (p.base != info->dlpi_addr || p.phdr != info->dlpi_phdr) continue;
    if (p.name[0] != '\0' && p.handle == nullptr) break;  // not held: gone or unfinished
    self->MarkDone(p.base, p.phdr);
    self->PatchObject(*info, context->result);
    break;
  }
  return 0;
}

void GotPatcher::PatchObject(const dl_phdr_info& info, GotPatchResult* result) noexcept {
  const uintptr_t base = info.dlpi_addr;
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
  // The pages the loader made read-only: RELRO's start and end rounded down
  // to pages, as glibc's _dl_protect_relro does; the last partial page
  // stays writable.
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  relro_start &= ~(page - 1);
  relro_end &= ~(page - 1);
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
        const uintptr_t page_start = reinterpret_cast<uintptr_t>(slot) & ~(page - 1);
        const bool in_relro = reinterpret_cast<uintptr_t>(slot) >= relro_start &&
                              reinterpret_cast<uintptr_t>(slot) < relro_end;
        if (in_relro && mprotect(reinterpret_cast<void*>(page_start), page, PROT_READ | PROT_WRITE) != 0) {
          result->slots_failed++;
          break;
        }
        __atomic_store_n(slot, replacements_[j].replacement, __ATOMIC_RELEASE);
        if (in_relro) mprotect(reinterpret_cast<void*>(page_start), page, PROT_READ);
        result->slots_patched++;
        break;
      }
    }
  };
  visit(jmprel, jmprel_size);
  visit(rela, rela_size);
}

}  // namespace warpscope::cuda
