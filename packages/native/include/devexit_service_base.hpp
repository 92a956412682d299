// devexit_service_base.hpp — the one service base of devexit's native backends (C++17,
// header-only, on devexit_service.hpp): a ServiceThread with its registration, its open, its one
// close and its lifetime, shared by device queues (devexit_queue.hpp) and compilers
// (devexit_compiler.hpp); and the process-wide slots that hand services out.
//
// Lifetime: a service is reference-counted. Its slot, its registration in the registry (until
// forgotten, or until the registry's close of it returned), every JS handle and every view of its
// closed word hold a reference. It is freed when the last one goes, and only then if its thread
// has been joined (a close that missed its deadline keeps it for good) and the process is not
// exiting (exit layers may still reach it).
#pragma once

#include <atomic>
#include <cstdio>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "devexit_service.hpp"
#include "devexit_sink.hpp"

namespace devexit {

// A counted reference to a service (T has Retain() and Release()).
template <typename T>
class ServiceRef {
 public:
  ServiceRef() = default;
  explicit ServiceRef(T *p) : p_(p) {
    if (p_) p_->Retain();
  }
  ServiceRef(const ServiceRef &o) : ServiceRef(o.p_) {}
  ServiceRef(ServiceRef &&o) noexcept : p_(o.p_) { o.p_ = nullptr; }
  ServiceRef &operator=(ServiceRef o) {
    std::swap(p_, o.p_);
    return *this;
  }
  ~ServiceRef() {
    if (p_) p_->Release();
  }
  T *get() const { return p_; }
  T *operator->() const { return p_; }
  explicit operator bool() const { return p_ != nullptr; }

 private:
  T *p_ = nullptr;
};

template <typename Command>
class Service : public ServiceThread<Command> {
 public:
  Service(devexit_device_id id, std::string name) : id_(id), service_(std::move(name)) {}

  devexit_device_id id() const { return id_; }
  const std::string &service() const { return service_; }

  // Registers the exit close (before the thread starts: an exit from then on closes it), then
  // starts the thread, once. kOk, kClosed, kExiting, or kStartFailed with *error.
  int Open(std::string *error) {
    std::lock_guard<std::mutex> lock(open_mu_);
    if (opened_) return this->accepting() ? kOk : kClosed;
    if (close_.started() || start_failed()) return kClosed;
    const devexit_registry_v1 *reg = Registry(error);
    if (!reg) return kStartFailed;
    if (reg->is_exiting()) return kExiting;
    int rc = Register(reg);
    if (rc == DEVEXIT_ERR_EXITING) return kExiting;
    if (rc < 0) {
      if (error) *error = "the registry refused the close (status " + std::to_string(rc) + ")";
      return kStartFailed;
    }
    if (!this->Start(error)) {
      Forget(reg);
      if (close_.started()) return reg->is_exiting() ? kExiting : kClosed;  // closed while starting
      // Only now: the registration is undone, so a replacement may take the key.
      start_failed_.store(true, std::memory_order_release);
      return kStartFailed;
    }
    opened_ = true;
    OnOpened();
    return kOk;
  }

  // The one close of exit layers (through the registry), closeServices() and the owner's
  // explicit close, exactly once. The stop rule (CloseContext): exit and closeServices() drop
  // what is queued; an explicit close and shutdown() finish it first, up to their drain
  // deadline. With JS alive, every realm hears that the service closed.
  int Close(const CloseContext &ctx, std::string *error) {
    closed_word_.store(1, std::memory_order_release);
    return close_.Run(ctx.deadline_ns, error, [&](std::string *why) {
      size_t dropped = 0;
      bool joined = ctx.finish ? this->Finish(ctx, why, &dropped) : this->Stop(StopMode::kDrop, ctx, why, &dropped);
      if (ctx.js_alive) Realms::Get().NotifyClosed(id_.index, service_, true);
      if (joined && ctx.finish && ctx.note)
        *ctx.note = dropped ? DEVEXIT_NOTE_DROPPED + std::to_string(dropped) : DEVEXIT_NOTE_DRAINED;
      return joined ? 0 : 1;
    });
  }

  // The owner's close (device.close(), stopCompiler()): unregister, so that exit skips it, and
  // close now with CloseContext::Explicit(). If the exit close took it first, waits for that.
  int CloseExplicitly(std::string *error) {
    if (const devexit_registry_v1 *reg = Registry()) Forget(reg);
    return Close(CloseContext::Explicit(), error);
  }

  bool closed() { return close_.started(); }
  // Its start failed: a slot hands out a new one next time (the runtime may have changed its mind).
  bool start_failed() const { return start_failed_.load(std::memory_order_acquire); }

  // A word that turns 1 when the close begins (as closed() does), for JS to read through a
  // typed-array view instead of a call on every enqueue (the view holds a reference).
  uint32_t *closed_word() { return reinterpret_cast<uint32_t *>(&closed_word_); }

  // Submits and maps a refusal to kClosed or kExiting.
  int Enqueue(Command &&c) { return Refusal(this->Submit(std::move(c))); }
  int EnqueueAll(std::vector<Command> &batch) { return Refusal(this->SubmitAll(batch)); }

  void Retain() { refs_.fetch_add(1, std::memory_order_relaxed); }
  void Release() {
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    // Kept for good when its thread may still run, or when an exit layer may still reach it.
    if (!this->Joined() || ProcessExiting()) return;
    delete this;
  }

 protected:
  // After a successful Open, under its lock (a compiler's keepalive starts here).
  virtual void OnOpened() {}

  // A command dropped by a close (never executed): with JS alive, its promise is rejected as
  // closed. Command has `sink` and `completion` (0: nothing waits).
  void OnDropped(Command &c, const CloseContext &ctx) override {
    if (!ctx.js_alive || !c.sink || c.completion == 0) return;
    auto *out = new Completion();
    out->id = c.completion;
    out->status = kClosed;
    out->error = DroppedMessage();
    c.sink->Deliver(out, true);
  }
  virtual const char *DroppedMessage() const { return "the service closed before this command ran"; }

  int Refusal(int status) {
    if (status == kOk) return kOk;
    return ProcessExiting() ? kExiting : kClosed;
  }

 private:
  // The registration holds a reference until it is forgotten or its close returned.
  int Register(const devexit_registry_v1 *reg) {
    Retain();
    auto close = [](void *ctx, const devexit_close_call_v1 *call) -> int {
      auto *self = static_cast<Service *>(ctx);
      std::string error, note;
      CloseContext c = CloseContext::FromCall(call);
      c.note = &note;
      int rc = self->Close(c, &error);
      const std::string &out = rc != 0 ? error : note;  // on success, what a drain did
      if (!out.empty() && call->error && call->error_size) std::snprintf(call->error, call->error_size, "%s", out.c_str());
      self->Release();
      return rc;
    };
    int rc = reg->register_close(id_, service_.c_str(), close, this);
    if (rc != DEVEXIT_OK) Release();
    return rc;
  }

  // Undoes the registration, only while no close began: once one began, the registry took the
  // registration (its close releases the reference) and the key may be the next service's.
  void Forget(const devexit_registry_v1 *reg) {
    bool forgot = false;
    close_.IfNotStarted([&] { forgot = reg->forget(id_, service_.c_str()) == DEVEXIT_OK; });
    if (forgot) Release();
  }

  const devexit_device_id id_;
  const std::string service_;
  std::mutex open_mu_;
  bool opened_ = false;
  std::atomic<bool> start_failed_{false};
  CloseOnce close_;
  std::atomic<uint32_t> closed_word_{0};
  std::atomic<int64_t> refs_{0};
};

// A backend's services, one per device index, process-wide (every realm opens the same one).
// Get() is never destroyed; a service it replaced is released (see the lifetime rule above).
template <typename T>
class ServiceSlots {
 public:
  static ServiceSlots &Get() {
    static ServiceSlots &slots = *new ServiceSlots();
    return slots;
  }

  // The service of device `index` of type `type_name`: the one handed out before, or, when there
  // is none, it closed, its start failed or `stale(service)` says it is unusable, a new one from
  // make(id) (called under the lock). Empty with *error when the registry or the device type
  // cannot be had.
  template <typename Make, typename Stale>
  ServiceRef<T> Open(const char *type_name, uint32_t index, std::string *error, Make &&make, Stale &&stale) {
    const devexit_registry_v1 *reg = Registry(error);
    if (!reg) return {};
    const int type = reg->device_type(type_name);
    if (type <= 0) {
      *error = std::string("device_type(\"") + type_name + "\") failed with status " + std::to_string(type);
      return {};
    }
    T *replaced = nullptr;
    ServiceRef<T> out;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (slots_.size() <= index) slots_.resize(index + 1, nullptr);
      T *&slot = slots_[index];
      if (!slot || slot->closed() || slot->start_failed() || stale(*slot)) {
        devexit_device_id id;
        id.type = static_cast<uint16_t>(type);
        id.index = index;
        replaced = slot;
        slot = make(id);
        slot->Retain();  // the slot's reference
      }
      out = ServiceRef<T>(slot);
    }
    if (replaced) replaced->Release();
    return out;
  }

  template <typename Make>
  ServiceRef<T> Open(const char *type_name, uint32_t index, std::string *error, Make &&make) {
    return Open(type_name, index, error, std::forward<Make>(make), [](const T &) { return false; });
  }

  // The service of device `index` while it is usable (not closed, started), else empty.
  ServiceRef<T> Current(uint32_t index) {
    std::lock_guard<std::mutex> lock(mu_);
    if (index >= slots_.size()) return {};
    T *slot = slots_[index];
    if (!slot || slot->closed() || slot->start_failed()) return {};
    return ServiceRef<T>(slot);
  }

 private:
  ServiceSlots() = default;
  std::mutex mu_;
  std::vector<T *> slots_;
};

// The name the queues have always used.
template <typename T>
using DeviceSlots = ServiceSlots<T>;

}  // namespace devexit
