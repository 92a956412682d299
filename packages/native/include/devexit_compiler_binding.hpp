// devexit_compiler_binding.hpp — the JS surface of a devexit::CompilerService (node-addon-api),
// shared by the GPU backends' bindings. Each backend finds its compiler (its slot) and passes it
// here; a missing one (never started, or closed) answers as closed.
//     compilerDrain(id)   -> status: stop accepting; id settles once every queued compile ran
//     compilerClose()     -> undefined | error: unregister and close now (the stop rule:
//                            finishes what is still queued, bounded by the deadline)
#pragma once

#include <napi.h>

#include <string>
#include <vector>

#include "devexit_compiler.hpp"
#include "devexit_queue_binding.hpp"

namespace devexit {
namespace compiler_binding {

inline std::string Str(const Napi::CallbackInfo &info, size_t i) {
  if (!info[i].IsString()) throw Napi::TypeError::New(info.Env(), "devexit: argument " + std::to_string(i) + " must be a string");
  return info[i].As<Napi::String>().Utf8Value();
}

// A compile's source, name and options (arguments 0, 1, 2), and its completion id (argument `id`).
inline CompileJob Job(const Napi::CallbackInfo &info, size_t id) {
  Napi::Env env = info.Env();
  CompileJob job;
  job.source = Str(info, 0);
  job.name = Str(info, 1);
  if (!info[2].IsArray()) throw Napi::TypeError::New(env, "devexit: compile options must be an array");
  Napi::Array opts = info[2].As<Napi::Array>();
  for (uint32_t i = 0; i < opts.Length(); i++) {
    Napi::Value o = opts.Get(i);
    if (!o.IsString()) throw Napi::TypeError::New(env, "devexit: compile options must be strings");
    job.options.push_back(o.As<Napi::String>().Utf8Value());
  }
  job.completion = queue_binding::Number(info, id);
  job.sink = queue_binding::Sink(env);
  return job;
}

// Queues a compile on c: the status (kClosed or kExiting when there is no running compiler).
inline Napi::Value Submit(Napi::Env env, CompilerService *c, CompileJob &&job) {
  if (!c) return Napi::Number::New(env, ProcessExiting() ? kExiting : kClosed);
  return Napi::Number::New(env, c->Enqueue(std::move(job)));
}

inline Napi::Value Drain(const Napi::CallbackInfo &info, CompilerService *c) {
  Napi::Env env = info.Env();
  if (!c) return Napi::Number::New(env, kClosed);
  const double id = queue_binding::Number(info, 0);
  return Napi::Number::New(env, c->Drain(id, queue_binding::Sink(env)) ? kOk : kClosed);
}

inline Napi::Value Close(Napi::Env env, CompilerService *c) {
  std::string error;
  if (c && c->CloseExplicitly(&error) != 0) return Napi::String::New(env, error);
  return env.Undefined();
}

}  // namespace compiler_binding
}  // namespace devexit
