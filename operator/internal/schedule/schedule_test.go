package schedule

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func mustParse(t *testing.T, zone string, windows ...string) *Schedule {
	t.Helper()
	s, err := Parse(windows, zone)
	if err != nil {
		t.Fatalf("Parse(%q, %q): %v", windows, zone, err)
	}
	return s
}

func TestWindows(t *testing.T) {
	workday := []string{"Mon-Fri 08:00-19:00"}
	for _, tc := range []struct {
		name      string
		zone      string
		windows   []string
		at        string
		awake     bool
		nextStart string // "" is the zero time
		end       string // "" is the zero time
	}{
		{"a Berlin workday starts at 08:00 CET before the clocks go forward", "Europe/Berlin", workday, "2026-03-27T07:00:00Z", true, "2026-03-30T06:00:00Z", "2026-03-27T18:00:00Z"},
		{"a minute before it starts it is asleep and starts within the minute", "Europe/Berlin", workday, "2026-03-27T06:59:00Z", false, "2026-03-27T07:00:00Z", ""},
		{"over the weekend the clocks go forward the next start is Monday 08:00 CEST", "Europe/Berlin", workday, "2026-03-27T18:00:00Z", false, "2026-03-30T06:00:00Z", ""},
		{"Monday 08:00 CEST is awake", "Europe/Berlin", workday, "2026-03-30T06:00:00Z", true, "2026-03-31T06:00:00Z", "2026-03-30T17:00:00Z"},
		{"Monday 07:59 CEST (06:59 CET) is not", "Europe/Berlin", workday, "2026-03-30T05:59:00Z", false, "2026-03-30T06:00:00Z", ""},
		{"over the weekend the clocks go back the next start is Monday 08:00 CET", "Europe/Berlin", workday, "2026-10-23T17:00:00Z", false, "2026-10-26T07:00:00Z", ""},
		{"New York's workday after its clocks go forward is 08:00 EDT", "America/New_York", workday, "2026-03-09T12:00:00Z", true, "2026-03-10T12:00:00Z", "2026-03-09T23:00:00Z"},
		{"New York's workday after its clocks go back is 08:00 EST", "America/New_York", workday, "2026-11-02T12:59:00Z", false, "2026-11-02T13:00:00Z", ""},
		{"a whole Sunday is 23 real hours when Berlin's clocks go forward", "Europe/Berlin", []string{"Sun 00:00-24:00"}, "2026-03-29T12:00:00Z", true, "2026-04-04T22:00:00Z", "2026-03-29T22:00:00Z"},
		{"a whole Sunday is 25 real hours when Berlin's clocks go back", "Europe/Berlin", []string{"Sun 00:00-24:00"}, "2026-10-24T21:59:00Z", false, "2026-10-24T22:00:00Z", ""},
		{"the 25-hour Sunday ends at Monday 00:00 CET", "Europe/Berlin", []string{"Sun 00:00-24:00"}, "2026-10-25T22:59:00Z", true, "2026-10-31T23:00:00Z", "2026-10-25T23:00:00Z"},
		{"a window starting in the skipped hour starts at the jump", "Europe/Berlin", []string{"Sun 02:30-04:00"}, "2026-03-29T01:00:00Z", true, "2026-04-05T00:30:00Z", "2026-03-29T02:00:00Z"},
		{"a window inside the skipped hour is missing that week and there the next", "Europe/Berlin", []string{"Sun 02:00-02:30"}, "2026-03-28T12:00:00Z", false, "2026-04-05T00:00:00Z", ""},
		{"a window starting in New York's repeated hour starts at its first occurrence", "America/New_York", []string{"Sun 01:30-03:00"}, "2026-11-01T05:00:00Z", false, "2026-11-01T05:30:00Z", ""},
		{"it is awake through the repeated hour's second occurrence", "America/New_York", []string{"Sun 01:30-03:00"}, "2026-11-01T06:15:00Z", true, "2026-11-08T06:30:00Z", "2026-11-01T08:00:00Z"},
		{"touching windows are one period with one end", "UTC", []string{"Mon-Fri 08:00-12:00", "Mon-Fri 12:00-19:00"}, "2026-03-02T09:00:00Z", true, "2026-03-03T08:00:00Z", "2026-03-02T19:00:00Z"},
		{"overlapping windows are one period with one end", "UTC", []string{"Mon 08:00-12:00", "Mon 11:00-13:00"}, "2026-03-02T11:30:00Z", true, "2026-03-09T08:00:00Z", "2026-03-02T13:00:00Z"},
		{"after Friday's window Saturday's is next", "UTC", []string{"Mon-Fri 08:00-19:00", "Sat 10:00-14:00"}, "2026-03-06T20:00:00Z", false, "2026-03-07T10:00:00Z", ""},
		{"a day range may wrap the week", "UTC", []string{"Fri-Mon 10:00-11:00"}, "2026-03-08T10:30:00Z", true, "2026-03-09T10:00:00Z", "2026-03-08T11:00:00Z"},
		{"a wrapped range leaves out the days it skips", "UTC", []string{"Fri-Mon 10:00-11:00"}, "2026-03-04T10:30:00Z", false, "2026-03-06T10:00:00Z", ""},
		{"a single day is that day only", "UTC", []string{"wednesday 09:00-10:00"}, "2026-03-05T09:30:00Z", false, "2026-03-11T09:00:00Z", ""},
		{"always awake has no next start and ends at the horizon", "UTC", []string{"Mon-Sun 00:00-24:00"}, "2026-03-04T10:30:00Z", true, "", "2026-03-20T00:00:00Z"},
		{"no zone is UTC", "", workday, "2026-03-02T08:00:00Z", true, "2026-03-03T08:00:00Z", "2026-03-02T19:00:00Z"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := mustParse(t, tc.zone, tc.windows...)
			at := utc(tc.at)
			if got := s.Awake(at); got != tc.awake {
				t.Errorf("Awake = %v, want %v", got, tc.awake)
			}
			check := func(what string, got time.Time, want string) {
				if want == "" && !got.IsZero() || want != "" && !got.Equal(utc(want)) {
					t.Errorf("%s = %s, want %q", what, got.UTC().Format(time.RFC3339), want)
				}
			}
			check("NextStart", s.NextStart(at), tc.nextStart)
			check("End", s.End(at), tc.end)
		})
	}
}

func TestRefused(t *testing.T) {
	many := make([]string, MaxWindows+1)
	for i := range many {
		many[i] = "Mon 08:00-09:00"
	}
	for _, tc := range []struct {
		name    string
		zone    string
		windows []string
		want    string
	}{
		{"an hour past 23 is refused", "UTC", []string{"Mon-Fri 25:00-19:00"}, `window "Mon-Fri 25:00-19:00": start "25:00" is not a time of day (00:00 to 23:59)`},
		{"days without hours are refused", "UTC", []string{"Sun-Mon"}, `window "Sun-Mon": no hours after "Sun-Mon"`},
		{"an end before the start is refused", "UTC", []string{"Mon 19:00-08:00"}, `window "Mon 19:00-08:00": ends at 08:00, not after its start 19:00: a window across midnight is two windows`},
		{"an end equal to the start is refused", "UTC", []string{"Mon 08:00-08:00"}, `ends at 08:00, not after its start 08:00`},
		{"an unknown day is refused", "UTC", []string{"Mnd 08:00-09:00"}, `window "Mnd 08:00-09:00": unknown day "Mnd": use Mon, Tue, Wed, Thu, Fri, Sat or Sun`},
		{"an unknown day at a range's end is refused", "UTC", []string{"Mon-Fry 08:00-09:00"}, `unknown day "Fry"`},
		{"an end past 24:00 is refused", "UTC", []string{"Mon 08:00-24:01"}, `end "24:01" is not a time of day (00:00 to 24:00)`},
		{"a start at 24:00 is refused", "UTC", []string{"Mon 24:00-24:00"}, `start "24:00" is not a time of day (00:00 to 23:59)`},
		{"minute 60 is refused", "UTC", []string{"Mon 08:60-09:00"}, `start "08:60" is not a time of day`},
		{"hours without minutes are refused", "UTC", []string{"Mon 8-9"}, `start "8" is not HH:MM`},
		{"a signed hour is refused", "UTC", []string{"Mon +8:00-09:00"}, `start "+8:00" is not HH:MM`},
		{"hours without a dash are refused", "UTC", []string{"Mon 08:00"}, `hours "08:00" are not HH:MM-HH:MM`},
		{"a third field is refused", "UTC", []string{"Mon 08:00-09:00 CET"}, `more than days and hours`},
		{"an empty window is refused", "UTC", []string{" "}, `window " ": empty`},
		{"an unknown zone is refused", "Mars/Olympus", []string{"Mon 08:00-09:00"}, `time zone "Mars/Olympus" is not an IANA zone`},
		{"the operator's Local zone is refused", "Local", []string{"Mon 08:00-09:00"}, `time zone "Local": name an IANA zone`},
		{"no windows are refused", "UTC", nil, `no awake windows`},
		{"too many windows are refused", "UTC", many, `33 awake windows: at most 32`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.windows, tc.zone)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse(%q, %q) = %v, want an error containing %q", tc.windows, tc.zone, err, tc.want)
			}
		})
	}
}

func TestParseList(t *testing.T) {
	s, err := ParseList("Mon-Fri 08:00-19:00, Sat 10:00-14:00", "Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	if !s.Awake(utc("2026-03-07T09:30:00Z")) || s.Awake(utc("2026-03-08T09:30:00Z")) {
		t.Error("the annotation's second window is Saturday 10:00-14:00 Berlin")
	}
	if _, err := ParseList("  ", "UTC"); !errors.Is(err, ErrNoWindows) {
		t.Errorf("an empty annotation: %v, want ErrNoWindows", err)
	}
	if _, err := ParseList("Mon,Wed 09:00-10:00", "UTC"); err == nil || !strings.Contains(err.Error(), `window "Mon": no hours`) {
		t.Errorf("a day list: %v, want the window without hours named", err)
	}
}

func TestCurrentNamesTheWindowsOfThePeriodAndItsWholeSpan(t *testing.T) {
	s, err := Parse([]string{"Mon-Fri 08:00-19:00", "fri 18:00-24:00", "Sat 00:00-02:00"}, "UTC")
	if err != nil {
		t.Fatal(err)
	}
	p, ok := s.Current(time.Date(2026, 10, 24, 1, 0, 0, 0, time.UTC)) // Saturday 01:00
	if !ok {
		t.Fatal("Saturday 01:00 is in Friday's period")
	}
	if want := time.Date(2026, 10, 23, 8, 0, 0, 0, time.UTC); !p.Start.Equal(want) {
		t.Errorf("start %v, want %v", p.Start, want)
	}
	if want := time.Date(2026, 10, 24, 2, 0, 0, 0, time.UTC); !p.End.Equal(want) {
		t.Errorf("end %v, want %v", p.End, want)
	}
	if got := strings.Join(p.Windows, "|"); got != "Mon-Fri 08:00-19:00|fri 18:00-24:00|Sat 00:00-02:00" {
		t.Errorf("windows %q", got)
	}
	if _, ok := s.Current(time.Date(2026, 10, 24, 2, 0, 0, 0, time.UTC)); ok {
		t.Error("Saturday 02:00 is outside every window")
	}
}
