package render

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// hoursPerWeek is the forecast's length: 7 days of 24 hours, Monday 00:00 first.
const hoursPerWeek = napwakev1alpha1.ForecastSlots

// The grid's thresholds: each hour's figure is the chance someone returns
// within the hold the forecast would choose for an idle stretch begun then
// (docs/forecast.md#kubectl-napwake-forecast); 0 where it would not hold.
const (
	busyShare  = 0.5
	quietShare = 1.0 / 255 // the smallest stored figure: any hold
)

var dayNames = []string{"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"}

// Last week's marks of a slot.
const (
	markHit    = "hit"    // a person came in an hour the forecast held
	markMiss   = "miss"   // a person came in an hour it did not hold
	markUnused = "unused" // a held hour nobody came in
)

// ForecastView is what `kubectl napwake forecast` shows, and prints with
// -o json: the week from status.forecast, last week's hits and misses, the
// figures.
type ForecastView struct {
	Namespace  string `json:"namespace"`
	Name       string `json:"name"`
	AutoResume bool   `json:"autoResume"`
	PauseEarly bool   `json:"pauseEarly"`
	Mode       string `json:"mode"`
	TimeZone   string `json:"timeZone"`
	// Problem says why the week cannot be drawn ("" when it can).
	Problem string `json:"problem,omitempty"`
	// HistoryHours is how many hours the forecast has seen; it acts from
	// 168.
	HistoryHours int64 `json:"historyHours"`
	// Shares are the 168 hours' chances someone returns within the hold
	// the forecast would choose (0: no hold), Monday 00:00 first, in the
	// zone.
	Shares []float64 `json:"shares,omitempty"`
	// LastWeek marks each slot's last hour: hit, miss, unused or "".
	LastWeek   []string                         `json:"lastWeek,omitempty"`
	LastPerson *time.Time                       `json:"lastPerson,omitempty"`
	Figures    *napwakev1alpha1.ForecastFigures `json:"figures,omitempty"`
	Last       *napwakev1alpha1.ForecastAction  `json:"last,omitempty"`
	// NextPreWake is the pre-wake the operator plans next (status.forecast.nextPreWake).
	NextPreWake *napwakev1alpha1.ForecastPlan `json:"nextPreWake,omitempty"`
	// NowSlot is the slot it is now.
	NowSlot int `json:"nowSlot"`
	now     time.Time
}

// ForecastOf reads what mw's status says of its forecast at now.
func ForecastOf(mw *napwakev1alpha1.ManagedWorkload, now time.Time) ForecastView {
	v := ForecastView{Namespace: mw.Namespace, Name: mw.Name, Mode: string(napwakev1alpha1.ForecastAct), TimeZone: "UTC"}
	if f := mw.Spec.Forecast; f != nil {
		v.AutoResume, v.PauseEarly = f.AutoResume, f.PauseEarly
		if f.Mode != "" {
			v.Mode = string(f.Mode)
		}
		if f.TimeZone != "" {
			v.TimeZone = f.TimeZone
		}
	}
	if fs := mw.Status.Forecast; fs != nil && fs.TimeZone != "" {
		v.TimeZone = fs.TimeZone // the zone its hours were learned in
	}
	loc, err := time.LoadLocation(v.TimeZone)
	if err != nil {
		loc, v.Problem = time.UTC, fmt.Sprintf("time zone %q is unknown here; hours are drawn in UTC", v.TimeZone)
	}
	v.now = now.In(loc)
	v.NowSlot = (int(v.now.Weekday())+6)%7*24 + v.now.Hour()
	fs := mw.Status.Forecast
	if fs == nil || fs.State == "" {
		return v
	}
	w, err := napwakev1alpha1.ReadForecastState(fs.State)
	if err != nil {
		v.Problem = err.Error()
		return v
	}
	v.HistoryHours, v.Shares = w.Hours, w.Shares[:]
	if !w.LastPerson.IsZero() {
		v.LastPerson = &w.LastPerson
	}
	if lw, err := napwakev1alpha1.DecodeLastWeek(fs.LastWeek); err == nil {
		v.LastWeek = marks(lw)
	}
	v.Figures, v.Last, v.NextPreWake = fs.Figures, fs.Last, fs.NextPreWake
	return v
}

func marks(lw napwakev1alpha1.LastWeek) []string {
	out := make([]string, hoursPerWeek)
	for i := range out {
		switch {
		case lw.Person[i] && lw.Busy[i]:
			out[i] = markHit
		case lw.Person[i]:
			out[i] = markMiss
		case lw.Busy[i]:
			out[i] = markUnused
		}
	}
	return out
}

// Forecast renders `kubectl napwake forecast`: the week as a 7×24 grid, one
// row per day in the workload's forecast zone, each hour drawn by the
// chance someone returns within the hold it would choose there (█ 0.5 or
// more; ▒ less, but held; · not held) and marked with last week's hit (+), miss (!) or busy hour nobody
// came in (-); the hour it is now pointed at (and in colour). Then how much it has learned,
// last week's tally, the figures and the latest action.
func Forecast(w io.Writer, v ForecastView, o Options) {
	fmt.Fprintf(w, "Forecast for %s/%s (auto-resume %s, pause early %s, mode %s)\n", v.Namespace, v.Name,
		onOff(v.AutoResume), onOff(v.PauseEarly), clean(v.Mode))
	if v.Problem != "" {
		fmt.Fprintf(w, "Note: %s.\n", clean(v.Problem))
	}
	if len(v.Shares) != hoursPerWeek {
		fmt.Fprintln(w, "No data yet: the operator has not recorded a week for this workload. It fills in as people use it.")
		return
	}
	drawWeek(w, v, o)
	fmt.Fprintf(w, "Scale: █ held past idleAfter, someone usually back within the hold (≥ %.2f)  ▒ held, back less often  · not held\n", busyShare)
	fmt.Fprintln(w, "Marks, last week: + a person in a held hour (hit)  ! a person in another hour (miss)  - a held hour nobody came in")
	fmt.Fprintf(w, "Time zone: %s, now %s %s\n", clean(v.TimeZone), dayNames[v.NowSlot/24], v.now.Format("15:04"))
	if v.HistoryHours < hoursPerWeek {
		fmt.Fprintf(w, "Learning: %d of %d hours; it acts as soon as it has gaps alike.\n", v.HistoryHours, hoursPerWeek)
	} else {
		fmt.Fprintf(w, "Learned from %.1f weeks.\n", float64(v.HistoryHours)/hoursPerWeek)
	}
	if v.LastPerson != nil {
		fmt.Fprintf(w, "Last person %s ago.\n", since(v.now, v.LastPerson))
	}
	if len(v.LastWeek) == hoursPerWeek {
		fmt.Fprintf(w, "Last week: %d hits, %d misses, %d busy hours nobody came in.\n",
			count(v.LastWeek, markHit), count(v.LastWeek, markMiss), count(v.LastWeek, markUnused))
	}
	nextPreWake(w, v)
	figures(w, v)
	if l := v.Last; l != nil {
		fmt.Fprintf(w, "Latest: %s (%s ago).\n", clean(l.Message), since(v.now, &l.At.Time))
	}
}

func drawWeek(w io.Writer, v ForecastView, o Options) {
	var b strings.Builder
	b.WriteString("    ")
	for h := range 24 {
		fmt.Fprintf(&b, " %02d", h)
	}
	fmt.Fprintln(w, b.String())
	for d, day := range dayNames {
		b.Reset()
		b.WriteString(day + " ")
		for h := range 24 {
			slot := d*24 + h
			c := plain
			if slot == v.NowSlot {
				c = cyan
			}
			b.WriteString(" " + o.paint(c, shareGlyph(v.Shares[slot])+markGlyph(v.LastWeek, slot)))
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
		if d == v.NowSlot/24 {
			// The hour it is now, under its cell: "Day " and " " before the
			// first cell, three columns a cell.
			fmt.Fprintln(w, strings.Repeat(" ", 5+3*(v.NowSlot%24))+"^ now")
		}
	}
}

func shareGlyph(s float64) string {
	switch {
	case s >= busyShare:
		return "█"
	case s >= quietShare:
		return "▒"
	}
	return "·"
}

func markGlyph(marks []string, slot int) string {
	if len(marks) != hoursPerWeek {
		return " "
	}
	switch marks[slot] {
	case markHit:
		return "+"
	case markMiss:
		return "!"
	case markUnused:
		return "-"
	}
	return " "
}

func count(marks []string, m string) int {
	n := 0
	for _, x := range marks {
		if x == m {
			n++
		}
	}
	return n
}

// figures prints status.forecast.figures: what the forecast did and cost.
func figures(w io.Writer, v ForecastView) {
	f := v.Figures
	if f == nil {
		return
	}
	would := ""
	if v.Mode == string(napwakev1alpha1.ForecastObserve) {
		would = " it would have made"
	}
	fmt.Fprintf(w, "Since %s:\n", sinceDate(f.Since))
	fmt.Fprintf(w, "  cold starts seen by people: %d (%d the forecast could have spared), %d avoided\n", f.ColdStartsPerson, f.ColdStartsMissed, f.ColdStartsAvoided)
	fmt.Fprintf(w, "  forecast wakes%s: %d, %d used%s\n", would, f.ForecastWakes, f.ForecastWakesUsed, precision(f.ForecastWakesUsed, f.ForecastWakes))
	fmt.Fprintf(w, "  early pauses%s: %d, %d regretted\n", would, f.EarlyPauses, f.EarlyPauseRegrets)
	if len(f.AwakeSeconds) > 0 {
		reasons := make([]string, 0, len(f.AwakeSeconds))
		for r := range f.AwakeSeconds {
			reasons = append(reasons, r)
		}
		slices.Sort(reasons)
		parts := make([]string, len(reasons))
		for i, r := range reasons {
			parts[i] = fmt.Sprintf("%s %s", clean(r), (time.Duration(f.AwakeSeconds[r]) * time.Second).String())
		}
		fmt.Fprintf(w, "  awake, by what woke it: %s\n", strings.Join(parts, ", "))
	}
}

func precision(used, wakes int64) string {
	if wakes <= 0 {
		return ""
	}
	return fmt.Sprintf(" (%.0f %%)", 100*float64(used)/float64(wakes))
}

func sinceDate(t *metav1.Time) string {
	if t == nil {
		return "the start"
	}
	return t.UTC().Format(time.RFC3339)
}

// nextPreWake says when the forecast wakes the workload next, in its zone,
// or that none is planned within a week (autoResume only: nothing else
// pre-wakes).
func nextPreWake(w io.Writer, v ForecastView) {
	if !v.AutoResume {
		return
	}
	p := v.NextPreWake
	if p == nil {
		fmt.Fprintln(w, "Next pre-wake: none planned within a week (no day's first arrival is regular enough to pay).")
		return
	}
	loc := v.now.Location()
	at := func(t metav1.Time) string { return t.In(loc).Format("Mon 15:04") }
	fmt.Fprintf(w, "Next pre-wake: %s, for someone usually there by %s; held until %s if nobody comes.\n",
		at(p.Wake), p.Arrive.In(loc).Format("15:04"), p.GiveUp.In(loc).Format("15:04"))
}
