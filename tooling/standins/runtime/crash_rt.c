/*
 * A crash-reproducing stand-in for a vendor runtime's exit behaviour (test double, CI only).
 *
 * Like HIP or CUDA, it creates its state on first use and registers its teardown then, with
 * atexit: lazily, so the teardown runs before every exit handler registered earlier. Teardown
 * frees the state and leaves a poisoned pointer behind; any call after it dereferences the poison
 * and crashes with SIGSEGV. Teardown then lingers (DEVEXIT_STANDIN_TEARDOWN_MS, default 5) as a
 * real teardown does, so a service thread still calling in is caught in the act.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

struct rt_state {
  uint64_t calls;
  uint64_t *table;
};

static struct rt_state *volatile g_state;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static int g_trace;

static void rt_teardown(void) {
  struct rt_state *s = g_state;
  g_state = (struct rt_state *)(uintptr_t)0x10; /* poison: a never-mapped page */
  if (g_trace) fprintf(stderr, "standin-rt: teardown after %llu calls\n", (unsigned long long)s->calls);
  memset(s->table, 0xdb, 1024 * sizeof(uint64_t));
  free(s->table);
  free(s);
  const char *ms = getenv("DEVEXIT_STANDIN_TEARDOWN_MS");
  usleep((useconds_t)((ms ? atoi(ms) : 5) * 1000));
}

static void rt_init_once(void) {
  struct rt_state *s = (struct rt_state *)calloc(1, sizeof *s);
  s->table = (uint64_t *)calloc(1024, sizeof(uint64_t));
  g_trace = getenv("DEVEXIT_STANDIN_TRACE") != NULL;
  g_state = s;
  atexit(rt_teardown);
}

/* First use: creates the state and registers the teardown. Returns 0. */
EXPORT int standin_rt_init(void) {
  pthread_once(&g_once, rt_init_once);
  return 0;
}

/* One runtime call, as a service thread makes them. Crashes after teardown. */
EXPORT uint64_t standin_rt_call(uint32_t x) {
  struct rt_state *s = g_state;
  s->calls++;
  s->table[x & 1023] += x;
  return s->table[(x * 7) & 1023];
}
