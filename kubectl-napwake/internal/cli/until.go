package cli

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // a laptop without a zone database still reads spec.schedule.timeZone

	napwakev1alpha1 "napwake.dev/apis/v1alpha1"
)

// maxUntil bounds --until: further ahead than a month is more likely a
// typo ("2000h") than a plan, and an override nobody remembers keeps a
// workload up or down for good.
const maxUntil = 31 * 24 * time.Hour

// untilHelp is the --until flag's help, for wake and pause.
const untilHelp = `Keep it %s until then, writing %s: a duration from now ("2h", "90m"),
a time of day ("18:00": the next 18:00 in the workload's spec.schedule.timeZone,
else UTC) or an RFC 3339 time; at most 31 days ahead. "Now" is the API server's
clock, not this machine's.`

// parseUntil reads --until at now: a positive Go duration from now, a time
// of day "HH:MM" (the next such wall-clock time after now in loc; one the
// clocks skip is the instant they jump), or an RFC 3339 time. The result
// is after now and at most maxUntil ahead.
func parseUntil(v string, now time.Time, loc *time.Location) (time.Time, error) {
	v = strings.TrimSpace(v)
	var t time.Time
	switch {
	case v == "":
		return time.Time{}, usageErrorf(`--until is empty: give a duration ("2h"), a time of day ("18:00") or an RFC 3339 time`)
	case strings.Contains(v, "T"):
		parsed, err := time.Parse(time.RFC3339, v)
		if err != nil {
			return time.Time{}, usageErrorf("--until %q is not an RFC 3339 time such as 2026-10-23T18:00:00Z", v)
		}
		t = parsed
	case strings.Contains(v, ":"):
		tod, err := timeOfDay(v, now, loc)
		if err != nil {
			return time.Time{}, err
		}
		t = tod
	default:
		d, err := time.ParseDuration(v)
		if err != nil {
			return time.Time{}, usageErrorf(`--until %q is neither a duration ("2h", "90m"), a time of day ("18:00") nor an RFC 3339 time`, v)
		}
		t = now.Add(d)
	}
	switch {
	case !t.After(now):
		return time.Time{}, usageErrorf("--until %q is not in the future (the cluster's time is %s)", v, now.UTC().Format(time.RFC3339))
	case t.Sub(now) > maxUntil:
		return time.Time{}, usageErrorf("--until %q is more than 31 days ahead", v)
	}
	return t.UTC().Truncate(time.Second), nil
}

// checkUntil refuses, before the cluster is contacted, an --until that no
// clock and no time zone could make right: everything parseUntil checks
// except whether an RFC 3339 time is ahead, which needs the cluster's clock.
func checkUntil(v string) error {
	if t := strings.TrimSpace(v); strings.Contains(t, "T") {
		if _, err := time.Parse(time.RFC3339, t); err != nil {
			return usageErrorf("--until %q is not an RFC 3339 time such as 2026-10-23T18:00:00Z", v)
		}
		return nil
	}
	_, err := parseUntil(v, time.Unix(0, 0), time.UTC)
	return err
}

// timeOfDay is the next "HH:MM" on loc's wall clock after now.
func timeOfDay(v string, now time.Time, loc *time.Location) (time.Time, error) {
	h, m, _ := strings.Cut(v, ":")
	hour, herr := strconv.Atoi(h)
	minute, merr := strconv.Atoi(m)
	if herr != nil || merr != nil || !digits(h) || !digits(m) || len(h) > 2 || len(m) != 2 || hour > 23 || minute > 59 {
		return time.Time{}, usageErrorf("--until %q is not a time of day from 00:00 to 23:59", v)
	}
	local := now.In(loc)
	for day := 0; day < 3; day++ { // tomorrow's, or the day after's when a DST jump skips it
		y, mo, d := local.AddDate(0, 0, day).Date()
		if t := time.Date(y, mo, d, hour, minute, 0, 0, loc); t.After(now) {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("no %s after %s", v, now) // cannot happen: a day later always is
}

// scheduleZone is the zone "HH:MM" is read in: the workload's
// spec.schedule.timeZone, else UTC (also when this machine cannot load it).
func scheduleZone(mw *napwakev1alpha1.ManagedWorkload) (*time.Location, string) {
	if sp := mw.Spec.Schedule; sp != nil && sp.TimeZone != "" && sp.TimeZone != "Local" {
		if loc, err := time.LoadLocation(sp.TimeZone); err == nil {
			return loc, sp.TimeZone
		}
	}
	return time.UTC, "UTC"
}

// digits says s is one or more ASCII digits (Atoi also takes a sign).
func digits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
