// devexit_external_word.hpp — a JS view of a native 32-bit flag (C++17, header-only, raw N-API).
// Used by @devexit/native's binding (the registry's exiting word) and devexit_queue_binding.hpp
// (a queue's closed word).
#pragma once

#include <node_api.h>

#include <cstdint>

namespace devexit {

// A JS ArrayBuffer over a 32-bit word that outlives the view (the registry's exiting word is
// never freed; a queue's closed word lives while the view holds its service), so that JS reads it without a call into native code. Null
// where the runtime refuses external buffers (the pending exception cleared): the caller answers
// through a call instead.
// With `finalize`, the word's owner is told (finalize(env, word, hint)) when the view is collected:
// a queue's closed word lives as long as its service, which the view holds a reference to.
inline napi_value ExternalWordBuffer(napi_env env, const volatile uint32_t *word, napi_finalize finalize = nullptr,
                                     void *hint = nullptr) {
  napi_value buffer;
  void *data = const_cast<uint32_t *>(word);
  if (napi_create_external_arraybuffer(env, data, sizeof(uint32_t), finalize, hint, &buffer) == napi_ok)
    return buffer;
  bool pending = false;
  napi_value ignored;
  if (napi_is_exception_pending(env, &pending) == napi_ok && pending) napi_get_and_clear_last_exception(env, &ignored);
  return nullptr;
}

}  // namespace devexit
