package devhours

import (
	"math"
	"math/rand/v2"
	"time"
)

// zones are where teams sit, with how many teams of ten sit there. Four of
// them change their clocks inside the eight weeks.
var zones = []struct {
	name   string
	weight int
}{
	{"America/Los_Angeles", 2}, {"America/New_York", 2}, {"Europe/London", 1},
	{"Europe/Berlin", 3}, {"Asia/Kolkata", 1}, {"Australia/Sydney", 1},
}

// holidays are the public holidays inside the eight weeks, by zone: Holi in
// India, Good Friday and Easter Monday in Europe and Australia.
var holidays = map[string][]string{
	"Asia/Kolkata":     {"2026-03-04"},
	"Europe/London":    {"2026-04-03", "2026-04-06"},
	"Europe/Berlin":    {"2026-04-03", "2026-04-06"},
	"Australia/Sydney": {"2026-04-03", "2026-04-06"},
}

// person is a developer or a QA engineer: their own hours, lunch and days
// off, in their own zone.
type person struct {
	id  int
	loc *time.Location
	// start and length are their usual day, in minutes of the local clock.
	start, length   float64
	lunch, lunchLen float64
	// off are the local dates they do not work (sick days, a holiday, a
	// vacation week).
	off  map[string]bool
	seed uint64
	days map[string][]span // their day plans, made once
}

// span is a stretch of time a person is at work and free to use an
// environment.
type span struct{ from, to time.Time }

func newPerson(seed uint64, id int, zone string, weekdays []string) *person {
	r := rng(seed, "person", id)
	loc, err := time.LoadLocation(zone)
	if err != nil {
		panic(err) // the zones are constants
	}
	p := &person{
		id: id, loc: loc, seed: seed, off: map[string]bool{}, days: map[string][]span{},
		// Most start between 08:00 and 10:00; a few at 07:00 or 11:00.
		start:    normal(r, 9*60, 40, 7*60, 11*60),
		length:   normal(r, 8.5*60, 30, 7*60, 10*60),
		lunch:    normal(r, 12.5*60, 20, 11.5*60, 13.75*60),
		lunchLen: normal(r, 45, 10, 30, 75),
	}
	for _, d := range holidays[zone] {
		p.off[d] = true
	}
	for _, d := range weekdays {
		if r.Float64() < 0.03 { // a sick or personal day now and then
			p.off[d] = true
		}
	}
	if r.Float64() < 0.4 && len(weekdays) > 10 { // a vacation of one or two weeks
		first, n := r.IntN(len(weekdays)-5), 5+r.IntN(6)
		for i := first; i < min(first+n, len(weekdays)); i++ {
			p.off[weekdays[i]] = true
		}
	}
	return p
}

// day returns when the person is at work and free on a local date: the
// morning and afternoon around lunch, minus meetings, with the day's own
// start and end. A weekend day is free, but one in thirty has a short
// session; a day off is free.
func (p *person) day(date time.Time) []span {
	key := date.Format(time.DateOnly)
	if s, ok := p.days[key]; ok {
		return s
	}
	r := rng(p.seed, "day/"+key, p.id)
	var out []span
	at := func(minute float64) time.Time {
		y, m, d := date.Date()
		return time.Date(y, m, d, 0, 0, 0, 0, p.loc).Add(time.Duration(minute * float64(time.Minute)))
	}
	wd := date.Weekday()
	switch {
	case wd == time.Saturday || wd == time.Sunday:
		if r.Float64() < 1.0/30 {
			from := normal(r, 14*60, 90, 10*60, 18*60)
			out = append(out, span{at(from), at(from + normal(r, 75, 30, 20, 180))})
		}
	case p.off[key]:
	default:
		begin := p.start + normal(r, 0, 15, -45, 45)
		end := begin + p.length + normal(r, 0, 30, -90, 90)
		lunch := p.lunch + normal(r, 0, 15, -40, 40)
		out = append(out, span{at(begin), at(lunch)}, span{at(lunch + p.lunchLen), at(end)})
		first := math.Ceil(begin/30) * 30
		for range poisson(r, 1.5) { // meetings of 30 or 60 minutes, on the half hour
			m := first + float64(30*r.IntN(max(1, int((end-first)/30))))
			out = cut(out, at(m), at(m+float64(30*(1+r.IntN(2)))))
		}
	}
	p.days[key] = out
	return out
}

// cut removes [from, to) from the spans.
func cut(spans []span, from, to time.Time) []span {
	var out []span
	for _, s := range spans {
		if !s.to.After(from) || !s.from.Before(to) {
			out = append(out, s)
			continue
		}
		if s.from.Before(from) {
			out = append(out, span{s.from, from})
		}
		if s.to.After(to) {
			out = append(out, span{to, s.to})
		}
	}
	return out
}

// pick returns a random instant of the spans (uniform over their time) and
// the end of the span it is in; ok is false when there is no time.
func pick(r *rand.Rand, spans []span) (t, end time.Time, ok bool) {
	var total time.Duration
	for _, s := range spans {
		total += s.to.Sub(s.from)
	}
	if total <= 0 {
		return time.Time{}, time.Time{}, false
	}
	at := time.Duration(r.Int64N(int64(total)))
	for _, s := range spans {
		if d := s.to.Sub(s.from); at < d {
			return s.from.Add(at), s.to, true
		} else if d > 0 {
			at -= d
		}
	}
	return time.Time{}, time.Time{}, false
}

// session appends the requests of one sitting with an environment: from t,
// about length long (but not past end), a request every minute or two, with
// now and then a longer look at something else.
func session(r *rand.Rand, out []time.Time, t, end time.Time, length time.Duration) []time.Time {
	stop := t.Add(length)
	if stop.After(end) {
		stop = end
	}
	for t.Before(stop) {
		out = append(out, t.Truncate(time.Second))
		gap := time.Duration(r.ExpFloat64() * float64(90*time.Second))
		if r.Float64() < 0.1 {
			gap += time.Duration(r.Float64() * float64(12*time.Minute))
		}
		t = t.Add(max(gap, 2*time.Second))
	}
	return out
}

// sessionLength draws how long a sitting lasts: median typically, from a
// couple of minutes to two hours.
func sessionLength(r *rand.Rand, median time.Duration) time.Duration {
	d := time.Duration(float64(median) * math.Exp(0.8*r.NormFloat64())).Round(time.Second)
	return min(max(d, 2*time.Minute), 2*time.Hour)
}
