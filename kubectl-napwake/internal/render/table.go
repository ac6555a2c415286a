package render

import (
	"fmt"
	"io"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/util/duration"
)

// Options carry what every renderer needs besides the objects.
type Options struct {
	// Now is the moment ages and durations are measured from.
	Now time.Time
	// Color wraps phases and warnings in ANSI colours; only for terminals.
	Color bool
	// Wide adds the columns `-o wide` asks for.
	Wide bool
	// AllNamespaces shows a NAMESPACE column and namespaced names.
	AllNamespaces bool
	// NoHeaders leaves out a table's header line and, in status, everything
	// printed below the table: the rows alone, for scripts.
	NoHeaders bool
}

// colour is an ANSI SGR code; zero means none.
type colour int

const (
	plain  colour = 0
	red    colour = 31
	green  colour = 32
	yellow colour = 33
	blue   colour = 34
	cyan   colour = 36
	bold   colour = 1
)

// paint wraps s in c when colour is on.
func (o Options) paint(c colour, s string) string {
	if !o.Color || c == plain || s == "" {
		return s
	}
	return fmt.Sprintf("\x1b[%dm%s\x1b[0m", c, s)
}

// cell is one table cell: its text and its colour.
type cell struct {
	text string
	c    colour
}

// txt is a plain cell. Its text comes from the cluster, so control and
// format characters (escape sequences, newlines, bidi overrides) are blanked:
// a hostile object must not drive the terminal or break a row.
func txt(s string) cell { return cell{text: clean(s)} }

// clean replaces control and format characters with spaces.
func clean(s string) string {
	bad := func(r rune) bool { return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) }
	if strings.IndexFunc(s, bad) < 0 {
		return s
	}
	return strings.Map(func(r rune) rune {
		if bad(r) {
			return ' '
		}
		return r
	}, s)
}

// table lays out rows in columns the way kubectl does: left aligned, three
// spaces between columns, no trailing spaces. Widths count runes of the plain
// text, so colour codes never shift a column.
type table struct {
	indent string
	rows   [][]cell
}

func (t *table) add(cells ...cell) { t.rows = append(t.rows, cells) }

func (t *table) write(w io.Writer, o Options) {
	var widths []int
	for _, r := range t.rows {
		for i, c := range r {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], utf8.RuneCountInString(c.text))
		}
	}
	for _, r := range t.rows {
		var b strings.Builder
		b.WriteString(t.indent)
		for i, c := range r {
			b.WriteString(o.paint(c.c, c.text))
			if i < len(r)-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c.text)+3))
			}
		}
		fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
	}
}

// since renders how long ago t was, kubectl style ("5m", "2d3h"); "-" for a
// missing time and "0s" for a time in the future (clocks skew).
func since(now time.Time, t *time.Time) string {
	if t == nil || t.IsZero() {
		return "-"
	}
	d := now.Sub(*t)
	if d < 0 {
		d = 0
	}
	return duration.HumanDuration(d)
}

// until renders how long until t, or "due" once it has passed.
func until(now time.Time, t time.Time) string {
	d := t.Sub(now)
	if d <= 0 {
		return "due"
	}
	return duration.HumanDuration(d)
}

// stamp renders an absolute time in UTC, RFC 3339, as the API stores it.
func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// orDash returns s, or "-" when it is empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
