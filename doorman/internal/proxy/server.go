package proxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/time/rate"
	"k8s.io/utils/clock"

	"napwake.dev/doorman/internal/addr"
	"napwake.dev/doorman/internal/ask"
	"napwake.dev/doorman/internal/fdtable"
	"napwake.dev/doorman/internal/metrics"
	"napwake.dev/shared/onewake"
)

// Hooks are what the doorman does in Kubernetes on behalf of a connection.
type Hooks interface {
	// Wake stamps last-request/last-request-from on the workload and emits
	// WokenByRequest naming the Service.
	Wake(ctx context.Context, w Workload, service string, from netip.Addr) error
	// TurnedAway counts one request turned away in the current pause.
	TurnedAway(w Workload)
	// NotServed reports a held connection given up on: the wait and why.
	NotServed(w Workload, service string, waited time.Duration, why string)
	// Click stamps a click on Wake it as the wake request of w: it reads
	// the ManagedWorkload afresh and, unless its last wake request is
	// within ask.ClickInterval of now (then woke is false), stamps
	// last-request/last-request-from guarded by the resourceVersion read,
	// reading again on a conflict, so two pods clicking at once make one
	// wake; it emits WokenByRequest saying a person asked.
	Click(ctx context.Context, w Workload, service string, from netip.Addr) (woke bool, err error)
	// Active stamps napwake.dev/last-activity on w: connections to it pass
	// through the doorman (during a wake, the linger and the drain).
	Active(ctx context.Context, w Workload) error
}

// Keys gives the wake key ring a workload that asks signs and verifies its
// Wake it buttons with; nil, or a nil ring, is no key yet.
type Keys interface {
	Ring() *ask.Ring
	// Unknown says a click carried a well-formed token of a key the ring
	// does not know: another pod may have filled the Secret just now, so
	// read it again soon.
	Unknown()
}

// Config is the proxy's configuration. Zero durations take the defaults
// named on each field.
type Config struct {
	// ListenAddress is the address every doorman port listens on; "" is all.
	ListenAddress string
	// Rules are the dial rules; production leaves AllowLoopback false.
	Rules addr.Rules
	// ExtraAgents are doorman.healthCheckUserAgents.
	ExtraAgents []string
	// Limits are the caps; DefaultLimits() in production.
	Limits Limits
	// Silence after which a connection that sent nothing decides (3 s).
	Silence time.Duration
	// Dialling caps the dials in flight at once (64): when a pod turns
	// Ready with hundreds of callers held, they reach it in a steady stream
	// rather than one burst of SYNs that could overflow a small listen
	// backlog (a dropped SYN costs the caller a second), and the ones
	// already connected send their bytes without waiting behind the rest.
	Dialling int
	// DialRetry between attempts at a pod not listening yet (1 s).
	DialRetry time.Duration
	// DialTimeout of one attempt (2 s).
	DialTimeout time.Duration
	// WakeRetry between wakes refused by a rate limit or failed (2 s).
	WakeRetry time.Duration
	// SocketBuffer caps the kernel buffers a passed-through connection's
	// bytes go through, each way, once it carries any (512 KiB; the kernel
	// counts double for its bookkeeping). Negative leaves them to the
	// kernel's autotuning.
	SocketBuffer int
	// Copy is how passed-through connections are copied: CopySplice, the
	// fast path, unless set (doorman --copy).
	Copy CopyMode
	// IdleTimeout of a passed-through connection carrying nothing (10 min).
	IdleTimeout time.Duration
	// Drain: passing connections of a removed route close after this (5 min).
	Drain time.Duration
	// Linger: a removed route's port keeps listening this long (30 s).
	Linger time.Duration
	// WriteTimeout of the doorman's own answers (5 s).
	WriteTimeout time.Duration
	// Dial connects to an endpoint the dial rules allowed; nil is a plain
	// TCP dial. Tests that stand in for pods on loopback map addresses here.
	Dial func(ctx context.Context, ap netip.AddrPort) (*net.TCPConn, error)
	// Clock drives the wake rate limits and reported times.
	Clock clock.WithTickerAndDelayedExecution
	// Keys holds the wake key ring (wake.mode Ask); nil signs nothing, so
	// every click is Expired.
	Keys Keys
}

func (c *Config) defaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.Silence, 3*time.Second)
	if c.Dialling <= 0 {
		c.Dialling = 64
	}
	def(&c.DialRetry, time.Second)
	def(&c.DialTimeout, 2*time.Second)
	def(&c.WakeRetry, 2*time.Second)
	if c.SocketBuffer == 0 {
		c.SocketBuffer = DefaultSocketBuffer
	}
	def(&c.IdleTimeout, 10*time.Minute)
	def(&c.Drain, 5*time.Minute)
	def(&c.Linger, 30*time.Second)
	def(&c.WriteTimeout, 5*time.Second)
	if c.Limits == (Limits{}) {
		c.Limits = DefaultLimits()
	}
	if c.Dial == nil {
		c.Dial = Dialer(c.DialTimeout)
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
}

// DefaultSocketBuffer is Config.SocketBuffer's default.
const DefaultSocketBuffer = 512 << 10

// Server serves every doorman port: it keeps the listeners and the
// registry of live connections, and shuts them down. Each connection is a
// conn (conn.go); what connections share is the caps, the dial pool and
// the waker, which the Server only owns.
type Server struct {
	cfg     Config
	table   *Table
	hooks   Hooks
	metrics *metrics.Metrics
	log     logr.Logger

	caps   *caps
	dials  *dialPool
	waker  *waker
	routes routeSet

	mu        sync.Mutex
	ctx       context.Context
	listeners map[int]*portListener
	closing   bool
	// conns are the live connections (callers and pods), each by the
	// listener it came through: a port reused by a new route is a new
	// listener, so a removed route's drain still finds its own.
	conns map[*net.TCPConn]*portListener
	wg    sync.WaitGroup

	activity passingActivity
}

// portListener is one generation of a doorman port: its listener, from
// SetRoutes opening it to its close. A route given the port again later
// gets a new one.
type portListener struct {
	port    int
	ln      *net.TCPListener
	route   Route
	removed bool        // the route went; the port lingers
	timer   clock.Timer // closes the port after Linger
	drain   clock.Timer // closes its passing connections after Drain
}

// New returns a server. Call Start, then SetRoutes.
func New(cfg Config, table *Table, hooks Hooks, m *metrics.Metrics) *Server {
	cfg.defaults()
	s := &Server{
		cfg: cfg, table: table, hooks: hooks, metrics: m,
		caps:      newCaps(cfg.Limits),
		dials:     newDialPool(&cfg),
		listeners: map[int]*portListener{}, conns: map[*net.TCPConn]*portListener{},
	}
	s.waker = &waker{hooks: hooks, clock: cfg.Clock, retry: cfg.WakeRetry, metrics: m, routes: &s.routes,
		limiter: newWakeLimiter(cfg.Limits, cfg.Clock), lastWake: map[string]woken{}, log: logr.Discard(), failLog: rate.NewLimiter(1, failLogBurst),
		retriers: map[retrierKey]*retrier{}, answeredFor: onewake.AnsweredRetryFor}
	return s
}

// Start sets the context every connection runs under; cancelling it closes
// everything at once (Shutdown is the graceful way).
func (s *Server) Start(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ctx = ctx
	s.log = logr.FromContextOrDiscard(ctx).WithName("proxy")
	s.waker.log = s.log
	// Cancelling ctx ends every wait at once: a closed socket ends its read.
	context.AfterFunc(ctx, s.closeAll)
	go s.activity.report(ctx, s.cfg.Clock, s.hooks, s.log)
	go s.waker.housekeep(ctx)
	// Grow the descriptor table now, not in the middle of a wake (see
	// package fdtable).
	want := s.cfg.Limits.descriptors()
	if got, err := fdtable.Reserve(want); err != nil {
		s.log.Error(err, "Cannot grow the descriptor table ahead of need; a wake may stall while it grows")
	} else if got < want {
		s.log.Info("RLIMIT_NOFILE is below the descriptors the caps can use: past it, new callers wait in the listen queue and dials fail until descriptors free; raise the container's open-files limit", "limit", got, "caps", want)
	}
}

// SetRoutes makes the server listen on exactly these routes' ports, plus
// removed ones for Linger. It returns the ports it could not listen on.
func (s *Server) SetRoutes(routes []Route) map[int]error {
	s.mu.Lock()
	defer s.mu.Unlock()
	failed := map[int]error{}
	if s.closing {
		return failed
	}
	want := map[int]Route{}
	for _, r := range routes {
		want[r.DoormanPort] = r
	}
	for port, pl := range s.listeners {
		if r, ok := want[port]; ok {
			pl.route = r
			if pl.removed {
				pl.removed = false
				pl.timer.Stop()
				pl.drain.Stop()
			}
			continue
		}
		if !pl.removed {
			pl.removed = true
			pl.timer = s.cfg.Clock.AfterFunc(s.cfg.Linger, func() { s.closePort(port, pl) })
			pl.drain = s.cfg.Clock.AfterFunc(s.cfg.Drain, func() { s.drainPort(pl) })
		}
	}
	for port, r := range want {
		if _, ok := s.listeners[port]; ok {
			continue
		}
		ln, err := net.Listen("tcp", net.JoinHostPort(s.cfg.ListenAddress, strconv.Itoa(port)))
		if err != nil {
			failed[port] = fmt.Errorf("listening on doorman port %d: %w", port, err)
			s.log.Error(err, "Cannot listen", "port", port)
			continue
		}
		pl := &portListener{port: port, ln: ln.(*net.TCPListener), route: r}
		s.listeners[port] = pl
		s.wg.Add(1)
		go s.accept(port, pl)
	}
	s.setLiveRoutes()
	return failed
}

// setLiveRoutes tells the waker which routes are live. s.mu is held.
func (s *Server) setLiveRoutes() {
	live := map[ServiceKey][]Route{}
	for _, pl := range s.listeners {
		if !pl.removed {
			live[pl.route.Key()] = append(live[pl.route.Key()], pl.route)
		}
	}
	s.routes.set(live)
}

// ClosePorts stops serving ports at once: no linger, no drain. Their
// listeners close and every connection on them, held or passing, is
// closed. The doorman does this to a port two ManagedWorkloads claim: it
// cannot know which is the rightful one, so it serves neither.
func (s *Server) ClosePorts(ports []int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	closing := map[int]bool{}
	for _, port := range ports {
		closing[port] = true
		pl, ok := s.listeners[port]
		if !ok {
			continue
		}
		if pl.timer != nil {
			pl.timer.Stop()
			pl.drain.Stop()
		}
		delete(s.listeners, port)
		_ = pl.ln.Close()
	}
	for c, pl := range s.conns {
		if closing[pl.port] {
			_ = c.Close()
		}
	}
	s.setLiveRoutes()
}

func (s *Server) closePort(port int, pl *portListener) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.listeners[port] == pl && pl.removed {
		delete(s.listeners, port)
		_ = pl.ln.Close()
	}
}

// drainPort closes the connections that came through pl, a removed
// route's listener, whether or not its port serves a new route by now:
// those are the new listener's own.
func (s *Server) drainPort(pl *portListener) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !pl.removed {
		return // the route came back before the drain
	}
	for c, from := range s.conns {
		if from == pl {
			_ = c.Close()
		}
	}
}

// route returns the port's current route and whether it was removed.
func (s *Server) route(pl *portListener) (Route, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return pl.route, pl.removed
}

func (s *Server) accept(port int, pl *portListener) {
	defer s.wg.Done()
	for {
		c, err := pl.ln.AcceptTCP()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			s.log.Error(err, "Accepting", "port", port)
			select {
			case <-time.After(50 * time.Millisecond): // EMFILE and the like: don't spin
			case <-s.ctx.Done():
				return
			}
			continue
		}
		if !s.track(c, pl) {
			_ = c.Close()
			continue
		}
		s.wg.Add(1)
		go s.serveConn(c, pl)
	}
}

// serveConn serves one connection: serve, then, for a connection to be
// held, waitAndPass on a goroutine of its own (see conn).
func (s *Server) serveConn(sock *net.TCPConn, pl *portListener) {
	r, removed := s.route(pl)
	c := newConn(s, sock, pl, r, removed)
	if !c.serve() {
		c.end()
		return
	}
	go func() {
		defer c.end()
		c.waitAndPass()
	}()
}

// track registers c as a live connection that came through pl.
func (s *Server) track(c *net.TCPConn, pl *portListener) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctx.Err() != nil {
		return false
	}
	s.conns[c] = pl
	return true
}

func (s *Server) untrack(c *net.TCPConn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	_ = c.Close()
}

// closeAll closes every live connection.
func (s *Server) closeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		_ = c.Close()
	}
}

// Shutdown stops accepting at once (the caller has already kept serving
// for the 15 s the spec gives), then gives connections until ctx ends to
// finish and closes what is left.
func (s *Server) Shutdown(ctx context.Context) {
	s.mu.Lock()
	s.closing = true
	for _, pl := range s.listeners {
		_ = pl.ln.Close()
		if pl.timer != nil {
			pl.timer.Stop()
			pl.drain.Stop()
		}
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	defer s.dials.stop()
	select {
	case <-done:
		return
	case <-ctx.Done():
	}
	s.closeAll()
	<-done
}

// Stop is the shutdown of a doorman pod (docs/design/doorman.md#when-a-doorman-pod-stops):
// notReady at once, full service for serve (main passes 15 s: the operator
// may be restarting and only it moves routes), then no new connections and
// finish (main passes 20 s) for those open to end, after which they are
// closed.
func (s *Server) Stop(notReady func(), serve, finish time.Duration) {
	notReady()
	t := s.cfg.Clock.NewTimer(serve)
	<-t.C()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ft := s.cfg.Clock.AfterFunc(finish, cancel)
	defer ft.Stop()
	s.Shutdown(ctx)
}
