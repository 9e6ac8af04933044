// A prototype, not the pipeline's: the native op's handoff without a second OpenMP team.
// Included at the end of a row kernel whose `#pragma omp parallel for` line pool_ab.py replaced
// with a slice of the rows (KERNEL_part(bufs, dims, strides, part, parts)). A C "stream thread"
// (as MLX's: a condition variable, a task, a signal back) runs the kernel one of three ways:
//   mode 0: the OpenMP entry, on the stream thread (what the native op does now: the stream
//           thread's team is libgomp's second in a process where the main thread has one, so
//           libgomp spins 100 turns, not 300000, before its threads sleep);
//   mode 1: part 0 on the stream thread, part 1 on a helper of our own that spins SPIN_US after
//           each task before it sleeps on a futex;
//   mode 2: as 1, and the caller wakes the helper before it hands the task over (as eval_cpu
//           could, on the caller's thread), so the helper's wake overlaps the handoff.
// Build: see pool_ab.py.
#include <sched.h>  // CPU_SET: the including source defines _GNU_SOURCE before its first include
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef SPIN_US
#define SPIN_US 200
#endif

static void futex_wait(atomic_int *a, int v) { syscall(SYS_futex, a, FUTEX_WAIT_PRIVATE, v, 0, 0, 0); }
static void futex_wake(atomic_int *a) { syscall(SYS_futex, a, FUTEX_WAKE_PRIVATE, 1, 0, 0, 0); }
static double now_us(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e6 + t.tv_nsec * 1e-3; }

static void **g_bufs; static const int64_t *g_dims, *g_strides;
static atomic_int h_gen, h_done, h_kick;   // helper: task generation, last done, wake-ups

static void *helper(void *arg) {
  (void)arg;
  int seen = 0;
  for (;;) {
    double until = now_us() + SPIN_US;
    while (atomic_load_explicit(&h_gen, memory_order_acquire) == seen) {
      if (now_us() > until) {  // sleep until a task or a kick
        int k = atomic_load(&h_kick);
        if (atomic_load(&h_gen) != seen) break;
        futex_wait(&h_kick, k);
        until = now_us() + SPIN_US;
      }
      __builtin_ia32_pause();
    }
    seen = atomic_load_explicit(&h_gen, memory_order_acquire);
    PART_FN(g_bufs, g_dims, g_strides, 1, 2);
    atomic_store_explicit(&h_done, seen, memory_order_release);
  }
  return 0;
}

static void kick(void) { atomic_fetch_add(&h_kick, 1); futex_wake(&h_kick); }

static void pool_run(void **bufs, const int64_t *dims, const int64_t *strides) {
  g_bufs = bufs; g_dims = dims; g_strides = strides;
  int gen = atomic_fetch_add_explicit(&h_gen, 1, memory_order_release) + 1;
  kick();
  PART_FN(bufs, dims, strides, 0, 2);
  while (atomic_load_explicit(&h_done, memory_order_acquire) != gen) __builtin_ia32_pause();
}

// the stream thread
static pthread_mutex_t s_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t s_cv = PTHREAD_COND_INITIALIZER, s_back = PTHREAD_COND_INITIALIZER;
static int s_task = 0, s_done = 0, s_mode;
static void **s_bufs; static const int64_t *s_dims, *s_strides;

static void *stream(void *arg) {
  (void)arg;
  int seen = 0;
  for (;;) {
    pthread_mutex_lock(&s_mu);
    while (s_task == seen) pthread_cond_wait(&s_cv, &s_mu);
    seen = s_task;
    pthread_mutex_unlock(&s_mu);
    if (s_mode == 0) FULL_FN(s_bufs, s_dims, s_strides);
    else pool_run(s_bufs, s_dims, s_strides);
    pthread_mutex_lock(&s_mu);
    s_done = seen;
    pthread_cond_signal(&s_back);
    pthread_mutex_unlock(&s_mu);
  }
  return 0;
}

// HELPER_CPU: the core the helper is bound to (-1: every core). Threads a bound main thread
// creates inherit its one core (OMP_PROC_BIND binds it at libgomp's start; MLX's stream thread
// is bound to core 0 that way too), so the helper is bound here explicitly.
void pool_start(int helper_cpu) {
  pthread_t t;
  pthread_create(&t, 0, stream, 0);
  pthread_create(&t, 0, helper, 0);
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c = 0; c < CPU_SETSIZE; c++)
    if (helper_cpu < 0 ? c < sysconf(_SC_NPROCESSORS_ONLN) : c == helper_cpu) CPU_SET(c, &set);
  pthread_setaffinity_np(t, sizeof set, &set);
}

// the caller: hand the kernel to the stream thread and wait, as mx.eval does
void pool_call(void **bufs, const int64_t *dims, const int64_t *strides, int mode) {
  if (mode == 2) kick();
  pthread_mutex_lock(&s_mu);
  s_bufs = bufs; s_dims = dims; s_strides = strides; s_mode = mode;
  int task = ++s_task;
  pthread_cond_signal(&s_cv);
  while (s_done != task) pthread_cond_wait(&s_back, &s_mu);
  pthread_mutex_unlock(&s_mu);
}
