package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"napwake.dev/operator/internal/schedule"
)

// The trace format (docs/bench/forecast.md#method), exactly.
var (
	envHeader   = []string{"environment", "timezone", "resume_seconds", "idle_after", "wake_mode", "auto_resume", "pause_early"}
	eventHeader = []string{"environment", "time", "kind"}
)

// Env is one environment of a trace and its person events.
type Env struct {
	Name       string
	Loc        *time.Location
	Resume     time.Duration // wake to Ready
	IdleAfter  time.Duration
	Ask        bool // wake mode Ask: never pauses early
	AutoResume bool
	PauseEarly bool
	// Persons are the times of its person events, sorted. Robot events
	// wake nothing and teach nothing, so they are counted, not kept.
	Persons []time.Time
	Robots  int
}

// Trace is a whole replay's input.
type Trace struct {
	Envs []*Env // in the order of environments.csv
	// First and Last are the first and last event's times (any kind).
	First, Last time.Time
}

// openCSV opens a file, gunzipping it when it starts with gzip's magic
// bytes.
func openCSV(path string) (io.ReadCloser, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening trace: %w", err)
	}
	br := bufio.NewReaderSize(f, 1<<16)
	if magic, _ := br.Peek(2); bytes.Equal(magic, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(br)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("%s: reading gzip: %w", path, err)
		}
		return struct {
			io.Reader
			io.Closer
		}{zr, f}, nil
	}
	return struct {
		io.Reader
		io.Closer
	}{br, f}, nil
}

// ReadTrace reads environments.csv and events.csv (either may be gzipped).
func ReadTrace(envsPath, eventsPath string) (*Trace, error) {
	envs, err := openCSV(envsPath)
	if err != nil {
		return nil, err
	}
	defer envs.Close()
	events, err := openCSV(eventsPath)
	if err != nil {
		return nil, err
	}
	defer events.Close()
	return parseTrace(envs, events, envsPath, eventsPath)
}

// parseTrace reads the two files; names label the errors.
func parseTrace(envsR, eventsR io.Reader, envsName, eventsName string) (*Trace, error) {
	tr := &Trace{}
	byName := map[string]*Env{}
	err := readRows(envsR, envsName, envHeader, func(row []string) error {
		e, err := parseEnv(row)
		if err != nil {
			return err
		}
		if byName[e.Name] != nil {
			return fmt.Errorf("environment %q is listed twice", e.Name)
		}
		byName[e.Name] = e
		tr.Envs = append(tr.Envs, e)
		return nil
	})
	if err != nil {
		return nil, err
	}
	var prev time.Time
	err = readRows(eventsR, eventsName, eventHeader, func(row []string) error {
		e := byName[row[0]]
		if e == nil {
			return fmt.Errorf("environment %q is not in %s", row[0], envsName)
		}
		t, err := time.Parse(time.RFC3339Nano, row[1])
		if _, off := t.Zone(); err != nil || off != 0 || !strings.HasSuffix(row[1], "Z") {
			return fmt.Errorf("time %q is not an RFC 3339 UTC time such as 2026-03-02T09:00:00Z", row[1])
		}
		if t.Before(prev) {
			return fmt.Errorf("time %s is before the previous event's %s: events must be sorted by time", row[1], prev.Format(time.RFC3339Nano))
		}
		prev = t
		switch row[2] {
		case "person":
			e.Persons = append(e.Persons, t)
		case "robot":
			e.Robots++
		default:
			return fmt.Errorf("kind %q is neither person nor robot", row[2])
		}
		if tr.First.IsZero() {
			tr.First = t
		}
		tr.Last = t
		return nil
	})
	if err != nil {
		return nil, err
	}
	if tr.First.IsZero() {
		return nil, fmt.Errorf("%s has no events", eventsName)
	}
	return tr, nil
}

func parseEnv(row []string) (*Env, error) {
	e := &Env{Name: row[0]}
	if e.Name == "" {
		return nil, errors.New("environment name is empty")
	}
	var err error
	if e.Loc, err = schedule.LoadZone(row[1]); err != nil {
		return nil, err
	}
	s, err := strconv.ParseFloat(row[2], 64)
	if err != nil || s < 0 || s > 86400 {
		return nil, fmt.Errorf("resume_seconds %q is not a number of seconds from 0 to 86400", row[2])
	}
	e.Resume = time.Duration(s * float64(time.Second))
	if e.IdleAfter, err = time.ParseDuration(row[3]); err != nil || e.IdleAfter <= 0 {
		return nil, fmt.Errorf("idle_after %q is not a positive Go duration such as 30m", row[3])
	}
	switch row[4] {
	case "Request":
	case "Ask":
		e.Ask = true
	default:
		return nil, fmt.Errorf("wake_mode %q is neither Request nor Ask", row[4])
	}
	if e.AutoResume, err = parseBool("auto_resume", row[5]); err != nil {
		return nil, err
	}
	if e.PauseEarly, err = parseBool("pause_early", row[6]); err != nil {
		return nil, err
	}
	return e, nil
}

func parseBool(column, v string) (bool, error) {
	switch v {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, fmt.Errorf("%s %q is neither true nor false", column, v)
}

// readRows checks the header and calls row for every line after it; errors
// name the file and line.
func readRows(r io.Reader, name string, header []string, row func(fields []string) error) error {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	got, err := cr.Read()
	if err != nil {
		return fmt.Errorf("%s line 1: reading the header: %w", name, err)
	}
	if !slices.Equal(got, header) {
		return fmt.Errorf("%s line 1: header %q, want %q%s", name, strings.Join(got, ","), strings.Join(header, ","), missing(got, header))
	}
	for {
		fields, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", name, err) // a csv.ParseError names its line
		}
		line, _ := cr.FieldPos(0) // a record read has at least one field
		if len(fields) != len(header) {
			return fmt.Errorf("%s line %d: %d columns, want %d (%s)", name, line, len(fields), len(header), strings.Join(header, ","))
		}
		if err := row(fields); err != nil {
			return fmt.Errorf("%s line %d: %w", name, line, err)
		}
	}
}

// missing names the columns a header lacks.
func missing(got, want []string) string {
	var out []string
	for _, w := range want {
		if !slices.Contains(got, w) {
			out = append(out, w)
		}
	}
	if len(out) == 0 {
		return " (columns out of order)"
	}
	return " (missing " + strings.Join(out, ", ") + ")"
}
