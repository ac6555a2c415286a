package render

import (
	"fmt"
	"io"
	"strings"
	"time"

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// hoursPerWeek is the forecast's length: 7 days of 24 hours, Monday 00:00 first.
const hoursPerWeek = 7 * 24

// shades draw an hour's weight relative to the week's busiest hour: nothing,
// then four steps up to the busiest.
var shades = []string{" ·", "░░", "▒▒", "▓▓", "██"}

var dayNames = []string{"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"}

// Shade returns the step (0 for none, 1..4) of weight v against the week's
// busiest hour peak: an hour with any weight is at least 1, the busiest is 4.
func Shade(v, peak int32) int {
	if v <= 0 || peak <= 0 {
		return 0
	}
	steps := int64(len(shades) - 1)
	s := (int64(v)*steps + int64(peak) - 1) / int64(peak) // ceil(v*4/peak), in 64 bits: weights near MaxInt32 must not overflow
	return int(min(max(s, 1), steps))
}

// Forecast renders `kubectl napwake forecast`: the week as a 7×24 grid, one
// row per day in the workload's forecast time zone, darker where people
// usually come; the hour it is now is highlighted in colour. Until the
// operator has written a forecast it says there is no data yet.
func Forecast(w io.Writer, mw *napwakev1alpha1.ManagedWorkload, o Options) {
	tzName := "UTC"
	autoResume, pauseEarly := false, false
	if f := mw.Spec.Forecast; f != nil {
		autoResume, pauseEarly = f.AutoResume, f.PauseEarly
		if f.TimeZone != "" {
			tzName = f.TimeZone
		}
	}
	fs := mw.Status.Forecast
	fmt.Fprintf(w, "Forecast for %s/%s (auto-resume %s, pause early %s)\n", mw.Namespace, mw.Name, onOff(autoResume), onOff(pauseEarly))
	if fs == nil || len(fs.Hours) == 0 {
		fmt.Fprintln(w, "No data yet: the operator has not recorded a week for this workload. It fills in as people wake and use it.")
		return
	}
	loc, err := time.LoadLocation(tzName)
	zoneNote := tzName
	if err != nil {
		loc, zoneNote = time.UTC, fmt.Sprintf("UTC (time zone %q is unknown here)", tzName)
	}
	now := o.Now.In(loc)
	nowSlot := (int(now.Weekday())+6)%7*24 + now.Hour()

	var peak int32
	for _, v := range fs.Hours {
		peak = max(peak, v)
	}
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
			var v int32
			if slot < len(fs.Hours) {
				v = fs.Hours[slot]
			}
			c := plain
			if slot == nowSlot {
				c = cyan
			}
			b.WriteString(" " + o.paint(c, shades[Shade(v, peak)]))
		}
		fmt.Fprintln(w, b.String())
	}
	fmt.Fprintf(w, "Scale: %s nobody  %s %s %s more  %s the busiest hour (%.2f wakes or activity a week)\n",
		strings.TrimSpace(shades[0]), shades[1], shades[2], shades[3], shades[4], float64(peak)/1000)
	fmt.Fprintf(w, "Time zone: %s, now %s %s\n", zoneNote, dayNames[nowSlot/24], now.Format("15:04"))
	if len(fs.Hours) != hoursPerWeek {
		fmt.Fprintf(w, "Note: the forecast holds %d hours, not %d; missing hours are drawn empty.\n", len(fs.Hours), hoursPerWeek)
	}
	if fs.ResumeSeconds > 0 {
		fmt.Fprintf(w, "A wake usually takes %s.\n", (time.Duration(fs.ResumeSeconds) * time.Second).String())
	}
	if fs.UpdatedAt != nil {
		fmt.Fprintf(w, "Updated %s ago.\n", since(o.Now, &fs.UpdatedAt.Time))
	}
}
