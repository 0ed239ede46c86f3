// GotPatcher: points other loaded objects' imports of a few functions at
// replacements of ours, by rewriting their global offset table entries (the
// slots their PLT stubs and -fno-plt calls jump through). The injection
// library uses it to see another CUPTI client (torch.profiler's Kineto, a
// tool linked against libcupti) call into CUPTI before the call happens, so
// that it can step aside first (cupti_client_guard.h).
//
// What it patches: in every object listed by dl_iterate_phdr except the
// vdso, the dynamic loader, this library and the object that defines the
// functions, each JUMP_SLOT or GLOB_DAT relocation whose symbol has one of
// the given names, provided the slot holds that object's own lazy-binding
// stub or the expected target (`original`); a slot already bound to another
// definition (a second copy of the library) is left alone and counted.
// RELRO pages the loader made read-only are made writable for the store and
// read-only again; a slot on the RELRO segment's last partial page (which the
// loader leaves writable, as it shares the page with .data) is written as is.
//
// Only objects the dynamic loader has finished are touched. dl_iterate_phdr
// lists an object being dlopen'ed as soon as it is mapped, before its
// relocations are applied and its RELRO made read-only: making such a page
// read-only under the loader crashes the thread that called dlopen. So each
// new object is first taken with dlopen(RTLD_NOLOAD), which waits for a load
// in progress, holds the object while it is patched, and is dropped after.
// What it cannot see: a call through a pointer from dlsym (such a client is
// not patched; cupti_client_guard.h says what happens then).
//
// Threading: Patch runs on one thread at a time (the link thread). The
// stores are aligned 8-byte writes: a thread calling through a slot at that
// moment reaches either the original or the replacement, both correct.
#pragma once

#include <link.h>

#include <cstddef>
#include <cstdint>

namespace warpscope::cuda {

struct GotReplacement {
  const char* name;      // the imported symbol
  void* original;        // where a bound slot points when it is ours to patch
  void* replacement;     // where it points afterwards
};

struct GotPatchResult {
  size_t objects_seen = 0;
  size_t objects_gone = 0;        // unloaded (or never finished loading) before they could be held
  size_t slots_patched = 0;       // newly patched by this call
  size_t slots_foreign = 0;       // bound to another definition, left alone
  size_t slots_failed = 0;        // mprotect refused

  GotPatchResult& operator+=(const GotPatchResult& o) noexcept {
    objects_seen += o.objects_seen;
    objects_gone += o.objects_gone;
    slots_patched += o.slots_patched;
    slots_foreign += o.slots_foreign;
    slots_failed += o.slots_failed;
    return *this;
  }
};

class GotPatcher {
 public:
  // `skip_base`: load bases of objects never patched (this library, the
  // defining library); up to 4.
  GotPatcher(const GotReplacement* replacements, size_t count, const uintptr_t* skip_base, size_t skip_count) noexcept;

  // Patches every object loaded since the last call (all of them the first
  // time). Cheap when nothing new was loaded: dl_iterate_phdr's load counter.
  // Never call it with a lock an application thread may hold while it
  // dlopens: it waits for loads in progress.
  GotPatchResult PatchNewObjects() noexcept;

  // The load base of the object containing `address`, 0 if none.
  static uintptr_t BaseOf(const void* address) noexcept;

 private:
  const GotReplacement* replacements_;
  size_t count_;
  uintptr_t skip_[4] = {};
  size_t skip_count_ = 0;
  unsigned long long last_adds_ = 0;
  unsigned long long last_subs_ = 0;
  // Objects already patched, by load base and program headers; forgotten
  // whenever an object was unloaded.
  static constexpr size_t kMaxDone = 1024;
  struct Done {
    uintptr_t base;
    const void* phdr;
  };
  Done done_[kMaxDone] = {};
  size_t done_count_ = 0;

  // One pass's new objects: found under the loader's list lock, held with
  // dlopen(RTLD_NOLOAD) outside it, then patched.
  static constexpr size_t kBatch = 16;
  static constexpr size_t kNameBytes = 4096;
  struct Pending {
    uintptr_t base;
    const void* phdr;
    void* handle;  // null for the main program, which is never unloaded
    char name[kNameBytes];
  };
  Pending* pending_ = nullptr;  // kBatch of them, allocated once
  size_t pending_count_ = 0;

  bool IsDone(uintptr_t base, const void* phdr) const noexcept;
  void MarkDone(uintptr_t base, const void* phdr) noexcept;
  void PatchObject(const dl_phdr_info& info, GotPatchResult* result) noexcept;
  static int Collect(dl_phdr_info* info, size_t size, void* context) noexcept;
  static int PatchHeld(dl_phdr_info* info, size_t size, void* context) noexcept;
};

}  // namespace warpscope::cuda
