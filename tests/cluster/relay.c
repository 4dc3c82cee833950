/* The emulated cluster's network: one userspace switch joining a TAP device
 * in each host's network namespace, with a link per ordered pair of hosts
 * that has its own one-way delay, rate, loss and cut flag (the kernel here
 * has no sch_netem, so the link is emulated in userspace).
 *
 *   relay CONTROL_FIFO DEV NETNS_PATH...
 *
 * Host i (0-based) is the i-th NETNS_PATH; its TAP device DEV must carry the
 * MAC 02:77:00:00:00:<i+1> (cluster.sh sets it), so the switch needs no
 * learning: a unicast frame goes to the host its destination MAC names,
 * broadcast and multicast frames to every other host, each over its own link.
 *
 * A frame entering link a->b at time t is serialised after the frames before
 * it (rate), then travels for the link's delay: departs = max(t, free) +
 * bits/rate, arrives = departs + delay. Only frames still waiting for
 * serialisation count against the queue limit; the delay line is unbounded,
 * as on a real long link (counting delayed frames against the queue drops
 * packets constantly at millisecond delays).
 *
 * Control lines on CONTROL_FIFO (cluster.sh writes them), hosts 1-based,
 * 0 meaning every host:
 *   set A B delay_us RATE_MBIT LOSS_PPM QUEUE_KB
 *   cut A B      heal A B      quit
 * "cut" drops every frame on links a->b and b->a. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#define MAX_HOSTS 32
#define MAX_FRAME 9216

typedef struct frame {
  struct frame *next;
  int64_t arrive_ns;
  uint16_t len;
  uint8_t data[];
} frame_t;

typedef struct {
  int64_t delay_ns;
  double rate_bps; /* 0: unlimited */
  uint32_t loss_ppm;
  int64_t queue_bytes_max;
  int cut;
  int64_t free_ns; /* when the serialiser is next free */
  frame_t *head, *tail;
  uint64_t sent, dropped_loss, dropped_queue, dropped_cut;
} link_t;

static int nhosts;
static int tap[MAX_HOSTS];
static link_t links[MAX_HOSTS][MAX_HOSTS];

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int open_tap(const char *netns, const char *dev) {
  int self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
  int ns = open(netns, O_RDONLY | O_CLOEXEC);
  if (self < 0 || ns < 0 || setns(ns, CLONE_NEWNET) != 0) {
    fprintf(stderr, "relay: cannot enter %s: %s\n", netns, strerror(errno));
    exit(1);
  }
  int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC | O_NONBLOCK);
  struct ifreq ifr;
  memset(&ifr, 0, sizeof ifr);
  ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
  snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "%s", dev);
  if (fd < 0 || ioctl(fd, TUNSETIFF, &ifr) != 0) {
    fprintf(stderr, "relay: cannot attach TAP %s in %s: %s\n", dev, netns, strerror(errno));
    exit(1);
  }
  if (setns(self, CLONE_NEWNET) != 0) exit(1);
  close(self);
  close(ns);
  return fd;
}

/* A frame from host a toward host b enters the link a->b. */
static void enqueue(int a, int b, const uint8_t *data, size_t len, int64_t t) {
  link_t *l = &links[a][b];
  if (l->cut) {
    l->dropped_cut++;
    return;
  }
  if (l->loss_ppm && (uint32_t)(random() % 1000000) < l->loss_ppm) {
    l->dropped_loss++;
    return;
  }
  int64_t start = l->free_ns > t ? l->free_ns : t;
  int64_t ser = l->rate_bps > 0 ? (int64_t)((double)(len + 24) * 8e9 / l->rate_bps) : 0;
  /* Bytes still waiting for the serialiser ~ (start - t) x rate. */
  if (l->rate_bps > 0 && (double)(start - t) * l->rate_bps / 8e9 > (double)l->queue_bytes_max) {
    l->dropped_queue++;
    return;
  }
  frame_t *f = malloc(sizeof *f + len);
  if (!f) return;
  l->free_ns = start + ser;
  f->next = NULL;
  f->arrive_ns = l->free_ns + l->delay_ns;
  f->len = (uint16_t)len;
  memcpy(f->data, data, len);
  if (l->tail) l->tail->next = f;
  else l->head = f;
  l->tail = f;
}

static void forward(int a, const uint8_t *data, size_t len, int64_t t) {
  if (len < 14) return;
  const uint8_t *dst = data;
  if (dst[0] & 1) { /* broadcast / multicast */
    for (int b = 0; b < nhosts; b++)
      if (b != a) enqueue(a, b, data, len, t);
    return;
  }
  if (dst[0] == 0x02 && dst[1] == 0x77 && dst[5] >= 1 && dst[5] <= nhosts && dst[5] - 1 != a)
    enqueue(a, dst[5] - 1, data, len, t);
}

/* Delivers what has arrived; returns the time of the next arrival or -1. */
static int64_t deliver(int64_t t) {
  int64_t next = -1;
  for (int a = 0; a < nhosts; a++)
    for (int b = 0; b < nhosts; b++) {
      link_t *l = &links[a][b];
      while (l->head && l->head->arrive_ns <= t) {
        frame_t *f = l->head;
        l->head = f->next;
        if (!l->head) l->tail = NULL;
        if (write(tap[b], f->data, f->len) == (ssize_t)f->len) l->sent++;
        free(f);
      }
      if (l->head && (next < 0 || l->head->arrive_ns < next)) next = l->head->arrive_ns;
    }
  return next;
}

static void each_pair(int a, int b, void (*fn)(link_t *, void *), void *arg) {
  for (int i = 0; i < nhosts; i++)
    for (int j = 0; j < nhosts; j++) {
      if (i == j) continue;
      int hit = (a == 0 && b == 0) || (a == 0 && (j + 1 == b || i + 1 == b)) || (b == 0 && (i + 1 == a || j + 1 == a)) ||
                (i + 1 == a && j + 1 == b) || (i + 1 == b && j + 1 == a);
      if (hit) fn(&links[i][j], arg);
    }
}

typedef struct {
  int64_t delay_ns;
  double rate_bps;
  uint32_t loss_ppm;
  int64_t queue;
} settings_t;

static void apply_set(link_t *l, void *arg) {
  const settings_t *s = arg;
  l->delay_ns = s->delay_ns;
  l->rate_bps = s->rate_bps;
  l->loss_ppm = s->loss_ppm;
  l->queue_bytes_max = s->queue;
}
static void apply_cut(link_t *l, void *arg) {
  l->cut = *(int *)arg;
  if (l->cut) /* what was in flight is lost with the link */
    while (l->head) {
      frame_t *f = l->head;
      l->head = f->next;
      free(f);
      l->dropped_cut++;
    }
  if (!l->head) l->tail = NULL;
}

static int control(char *line) {
  int a = 0, b = 0;
  long long delay_us = 0, queue_kb = 0;
  double rate_mbit = 0;
  unsigned loss = 0;
  int on;
  if (sscanf(line, "set %d %d %lld %lf %u %lld", &a, &b, &delay_us, &rate_mbit, &loss, &queue_kb) == 6) {
    settings_t s = {delay_us * 1000, rate_mbit * 1e6, loss, queue_kb * 1024};
    each_pair(a, b, apply_set, &s);
  } else if (sscanf(line, "cut %d %d", &a, &b) == 2) {
    on = 1;
    each_pair(a, b, apply_cut, &on);
  } else if (sscanf(line, "heal %d %d", &a, &b) == 2) {
    on = 0;
    each_pair(a, b, apply_cut, &on);
  } else if (strncmp(line, "quit", 4) == 0) {
    return 1;
  } else if (strncmp(line, "stats", 5) == 0) {
    for (int i = 0; i < nhosts; i++)
      for (int j = 0; j < nhosts; j++)
        if (i != j)
          fprintf(stderr, "relay: h%d->h%d sent %llu lost %llu queue-drop %llu cut-drop %llu\n", i + 1, j + 1,
                  (unsigned long long)links[i][j].sent, (unsigned long long)links[i][j].dropped_loss,
                  (unsigned long long)links[i][j].dropped_queue, (unsigned long long)links[i][j].dropped_cut);
  } else if (*line) {
    fprintf(stderr, "relay: unknown control line '%s'\n", line);
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 4 || argc - 3 > MAX_HOSTS) {
    fprintf(stderr, "usage: relay CONTROL_FIFO DEV NETNS_PATH... (at most %d)\n", MAX_HOSTS);
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  srandom((unsigned)now_ns());
  /* O_RDWR: the FIFO never reports end-of-file when a writer closes. */
  int ctl = open(argv[1], O_RDWR | O_NONBLOCK | O_CLOEXEC);
  if (ctl < 0) {
    fprintf(stderr, "relay: cannot open %s: %s\n", argv[1], strerror(errno));
    return 1;
  }
  nhosts = argc - 3;
  for (int i = 0; i < nhosts; i++) tap[i] = open_tap(argv[3 + i], argv[2]);
  settings_t s = {0, 0, 0, 4 << 20};
  each_pair(0, 0, apply_set, &s);
  struct pollfd pfd[MAX_HOSTS + 1];
  for (int i = 0; i < nhosts; i++) pfd[i] = (struct pollfd){.fd = tap[i], .events = POLLIN};
  pfd[nhosts] = (struct pollfd){.fd = ctl, .events = POLLIN};
  static uint8_t buf[MAX_FRAME];
  char cbuf[4096];
  size_t clen = 0;
  for (;;) {
    int64_t t = now_ns();
    int64_t next = deliver(t);
    struct timespec tmo = {0, 0};
    if (next >= 0) {
      int64_t w = next - now_ns();
      if (w > 0) tmo = (struct timespec){(time_t)(w / 1000000000), (long)(w % 1000000000)};
    }
    int n = ppoll(pfd, (nfds_t)nhosts + 1, next >= 0 ? &tmo : NULL, NULL);
    if (n < 0 && errno != EINTR) return 1;
    if (n <= 0) continue;
    t = now_ns();
    for (int i = 0; i < nhosts; i++) {
      if (!(pfd[i].revents & POLLIN)) continue;
      for (int k = 0; k < 64; k++) { /* a batch per device: fair between hosts */
        ssize_t len = read(tap[i], buf, sizeof buf);
        if (len <= 0) break;
        forward(i, buf, (size_t)len, t);
      }
    }
    if (pfd[nhosts].revents & POLLIN) {
      ssize_t r = read(ctl, cbuf + clen, sizeof cbuf - 1 - clen);
      if (r > 0) {
        clen += (size_t)r;
        cbuf[clen] = 0;
        char *nl;
        while ((nl = strchr(cbuf, '\n'))) {
          *nl = 0;
          if (control(cbuf)) return 0;
          clen -= (size_t)(nl + 1 - cbuf);
          memmove(cbuf, nl + 1, clen + 1);
        }
      }
    }
  }
}
