package proxy

import (
	"context"
	"time"

	"napwake.dev/doorman/internal/ask"
	"napwake.dev/doorman/internal/page"
)

// A connection to a workload that asks before waking (wake.mode Ask),
// once classify says it is HTTP and neither a probe nor a hidden file:
// judge reads its form and judges it (package ask), click stamps a fresh
// click's wake, and the asleep page carries a fresh button. Nothing a
// click sent is passed on: the doorman answers it and closes.

// ring is the wake key ring now; nil before any key was read.
func (s *Server) ring() *ask.Ring {
	if s.cfg.Keys == nil {
		return nil
	}
	return s.cfg.Keys.Ring()
}

// judge reads the request's form, to at most ask.MaxBodyBytes past its
// head, until ask.Judge decides, the caller stops or Silence passes (then
// what was read decides), and returns the verdict.
func (c *conn) judge() ask.Verdict {
	s := c.srv
	w := c.route.Workload
	in := ask.Input{Req: &c.head, Workload: w.Key(), PausedAt: w.PausedAt, Ring: s.ring(), LastWakeRequest: w.LastRequest}
	until := s.cfg.Clock.Now().Add(s.cfg.Silence)
	for {
		in.Now = s.cfg.Clock.Now()
		in.Body = nil
		if n := c.head.HeadLen; n > 0 && n <= len(c.buf) {
			in.Body = c.buf[n:]
		}
		in.Final = in.Final || c.readErr != nil || len(in.Body) >= ask.MaxBodyBytes
		v := ask.Judge(&in)
		if v.Token == ask.TokenUnknownKey && s.cfg.Keys != nil {
			s.cfg.Keys.Unknown()
		}
		if v.Kind != ask.NeedMore {
			return v
		}
		err := c.readUntil(until, nil, nil)
		if isTimeout(err) || s.ctx.Err() != nil {
			in.Final = true
		}
	}
}

// click stamps a fresh click's wake on the ManagedWorkload, guarded so a
// click wakes a workload at most once a minute whichever doorman pod it
// reaches, and says what came of it; the policy answers by that
// (decideAsk). A click that took wakes the paused workloads sharing its
// Service that wake on request, as any request does.
func (c *conn) click() Clicked {
	s := c.srv
	ctx, cancel := context.WithTimeout(s.ctx, s.cfg.WriteTimeout)
	woke, err := s.hooks.Click(ctx, c.route.Workload, c.route.Service, c.src)
	cancel()
	switch {
	case err != nil:
		s.log.Error(err, "Stamping a click on Wake it", "workload", c.route.Workload.Key())
		return ClickFailed
	case !woke:
		return ClickTooSoon
	}
	s.waker.clicked(c.route.Workload)
	// Clicked, it wakes as on a request, and with it the sharers of its
	// Service that wake on request; sharers that ask wait for their own
	// click.
	clicked := c.route
	clicked.Workload.Ask = false
	s.waker.wakeAnswered(s.ctx, clicked, c.src)
	return ClickWoke
}

// asleepPage renders the asleep page for the request with the notice,
// and a fresh button when this pod has a key to sign it with: without one
// it offers none (a click on it could only be refused) and the page says
// so. With until (pause-until in force) it says until when, and offers no
// button either.
func (c *conn) asleepPage(notice page.Notice, until time.Time) []byte {
	s := c.srv
	w := c.route.Workload
	now := s.cfg.Clock.Now()
	p := page.AsleepPage{Host: c.head.Host, Path: c.head.Path, Notice: notice, Until: until}
	if r := s.ring(); r != nil && until.IsZero() {
		if k, ok := r.Signer(now); ok {
			p.Token = ask.Issue(k, w.Key(), w.PausedAt, now)
		}
	}
	return p.Render()
}
